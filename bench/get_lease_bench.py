#!/usr/bin/env python3
"""get_lease_bench.py: what max_lease buys and costs, with the Python
client against a running server. For each batch size it measures
(1) with a quota never reached: calls per second of one client and round
trips (window checks sent) per call; (2) with K clients of one process
taking turns on one identity under a quota they exceed: the most calls
admitted in any 0.9 s and any 1 s, beside the quota and the documented
bound quota + K*(B-1) for 0.9 s.

    python3 bench/get_lease_bench.py -s 127.0.0.1:11215 [-d 3] [-k 4] \\
        [-q 1000] [-b 1,10,100]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "clients", "python", "src"))

import mccounter  # noqa: E402


def counted(c: mccounter.Client, sent: list[int]) -> None:
    """Counts the window checks c sends."""
    real = c.window_check

    def wrapper(*args, **kw):  # type: ignore[no-untyped-def]
        sent[0] += 1
        return real(*args, **kw)
    c.window_check = wrapper  # type: ignore[method-assign]


def worst(times: list[float], span: float) -> int:
    """The most admissions in any interval of span seconds."""
    best = j = 0
    for i, t in enumerate(times):
        while times[j] <= t - span:
            j += 1
        best = max(best, i - j + 1)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-s", "--servers", required=True)
    ap.add_argument("-d", "--seconds", type=float, default=3.0)
    ap.add_argument("-k", "--clients", type=int, default=4)
    ap.add_argument("-q", "--quota", type=int, default=1000)
    ap.add_argument("-b", "--batches", default="1,10,100")
    a = ap.parse_args()
    run = "%d" % os.getpid()
    print("| max_lease | calls/s (1 client) | round trips/call | quota | "
          "K | most admitted in 0.9 s | bound | most admitted in 1 s |")
    print("|---|---|---|---|---|---|---|---|")
    for b in (int(x) for x in a.batches.split(",")):
        sent = [0]
        with mccounter.Client(a.servers, max_lease=b) as c:
            counted(c, sent)
            calls = 0
            end = time.monotonic() + a.seconds
            start = time.monotonic()
            while time.monotonic() < end:
                c.get_lease("bench", run, "fast%d" % b, 2 ** 32 - 1)
                calls += 1
            rate = calls / (time.monotonic() - start)
        rtc = sent[0] / calls
        clients = [mccounter.Client(a.servers, max_lease=b)
                   for _ in range(a.clients)]
        admitted: list[float] = []
        try:
            end = time.monotonic() + a.seconds
            while time.monotonic() < end:
                for c in clients:
                    if c.get_lease("bench", run, "over%d" % b, a.quota):
                        admitted.append(time.monotonic())
        finally:
            for c in clients:
                c.close()
        print("| %d | %.0f | %.3f | %d | %d | %d | %d | %d |"
              % (b, rate, rtc, a.quota, a.clients, worst(admitted, 0.9),
                 a.quota + a.clients * (b - 1), worst(admitted, 1.0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
