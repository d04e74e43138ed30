#!/usr/bin/env python3
"""rate_limiter.py: a web handler's rate limiter with GCRA, as WSGI
middleware: each client (its API key, else its address) may make RATE
requests per second with a burst of BURST; past that it gets
429 Too Many Requests with Retry-After, and every answer carries the
RateLimit headers the check answer fills (limit, remaining, reset).

    python3 examples/rate_limiter.py --servers 127.0.0.1:11215 [--port 8080]
    curl -i http://127.0.0.1:8080/

The limiter fails open: when the counter servers cannot be reached the
request is let through (a rate limiter that takes the site down with it
is worse than one that lets a burst pass), and the next live server
takes the name over when remapping is on (remap_rate_limits). It says so
with a warning on the "rate_limiter" logger, at most one per WARN_EVERY
seconds however many requests pass unchecked (the next one counts them),
so that an outage is seen without flooding the log.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from typing import Callable, Iterable
from wsgiref.simple_server import make_server

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "clients", "python", "src"))

import mccounter  # noqa: E402

log = logging.getLogger("rate_limiter")

# Seconds between two fail-open warnings.
WARN_EVERY = 10.0

StartResponse = Callable[..., object]
App = Callable[[dict, StartResponse], Iterable[bytes]]


class GcraLimiter:
    """WSGI middleware: one GCRA check per request, keyed by client."""

    def __init__(self, app: App, client: mccounter.Client, rate: int,
                 burst: int, period: float = 1.0,
                 prefix: str = "rl:") -> None:
        self.app = app
        self.client = client
        self.rate = rate
        self.burst = burst
        self.period = period
        self.prefix = prefix
        self._warned_at = -math.inf
        self._unchecked = 0

    def failed_open(self, why: Exception) -> None:
        """Counts a request let through unchecked; warns at most once per
        WARN_EVERY seconds."""
        self._unchecked += 1
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY:
            log.warning("counter servers unreachable (%s): failing open, "
                        "%d request(s) let through without a rate limit",
                        why, self._unchecked)
            self._warned_at = now
            self._unchecked = 0

    def key(self, environ: dict) -> str:
        """Who is limited: the API key if one is sent, else the address."""
        api_key = environ.get("HTTP_X_API_KEY")
        if api_key:
            return self.prefix + "key:" + api_key
        return self.prefix + "ip:" + environ.get("REMOTE_ADDR", "?")

    def __call__(self, environ: dict, start_response: StartResponse
                 ) -> Iterable[bytes]:
        try:
            ans = self.client.gcra_check(self.key(environ), self.burst,
                                         self.rate, self.period)
        except (mccounter.ServerDown, TimeoutError) as e:
            self.failed_open(e)
            return self.app(environ, start_response)     # fail open
        headers = [
            ("RateLimit-Limit", str(ans.limit)),
            ("RateLimit-Remaining", str(ans.remaining)),
            ("RateLimit-Reset", str(math.ceil(ans.reset_after))),
        ]
        if ans.allowed:
            def start(status: str, hdrs: list, *rest: object) -> object:
                return start_response(status, hdrs + headers, *rest)
            return self.app(environ, start)
        if ans.state == mccounter.CheckState.NEVER:
            retry = "3600"      # the request's cost can never fit
        else:
            retry = str(max(1, math.ceil(ans.retry_after)))
        body = b"too many requests\n"
        start_response("429 Too Many Requests", headers + [
            ("Retry-After", retry), ("Content-Type", "text/plain"),
            ("Content-Length", str(len(body)))])
        return [body]


def hello(environ: dict, start_response: StartResponse) -> Iterable[bytes]:
    """The protected application: says hello."""
    body = b"hello\n"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


def call(app: App, environ: dict) -> tuple[str, dict[str, str]]:
    """Runs one request through a WSGI app in-process: (status, headers)."""
    got: dict = {}

    def start_response(status: str, headers: list, *rest: object) -> None:
        got["status"], got["headers"] = status, dict(headers)

    for _ in app(environ, start_response):
        pass
    return got["status"], got["headers"]


def selftest(servers: str) -> None:
    """Burst + 1 requests from one client: the last is refused with 429."""
    with mccounter.Client(servers, remap_rate_limits=True) as c:
        app = GcraLimiter(hello, c, rate=1, burst=2, period=60,
                          prefix="rl-selftest-%d:" % os.getpid())
        env = {"REMOTE_ADDR": "192.0.2.1", "REQUEST_METHOD": "GET"}
        statuses = [call(app, env)[0] for _ in range(3)]
        assert statuses == ["200 OK"] * 3, statuses
        status, headers = call(app, env)
        assert status.startswith("429"), status
        assert int(headers["Retry-After"]) >= 1, headers
        assert headers["RateLimit-Remaining"] == "0", headers
        # Another client has its own allowance.
        status, _ = call(app, {"REMOTE_ADDR": "192.0.2.2"})
        assert status == "200 OK", status
    print("rate_limiter selftest ok")


def main() -> int:
    """Serves the limited hello application, or runs the self-test."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", required=True, help="host:port[:w],...")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--rate", type=int, default=10, help="per second")
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    logging.basicConfig(format="%(name)s: %(levelname)s: %(message)s")
    if a.selftest:
        selftest(a.servers)
        return 0
    client = mccounter.Client(a.servers, remap_rate_limits=True)
    app = GcraLimiter(hello, client, a.rate, a.burst)
    with make_server("127.0.0.1", a.port, app) as httpd:
        print("serving on http://127.0.0.1:%d/" % a.port)
        httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
