"""Test support: starts mchost with counter.so on kernel-chosen loopback
ports (as t/lib/CounterTest.pm does), finds the counter port from the
memcache text `stats`, and stops the host by pid."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional


def have_host() -> bool:
    """True when MCHOST and COUNTER_SO name a built host and extension."""
    m, so = os.environ.get("MCHOST"), os.environ.get("COUNTER_SO")
    return bool(m and so and os.access(m, os.X_OK) and os.path.isfile(so))


def mc_stats(port: int) -> dict[str, str]:
    """The memcache text protocol's `stats` on port, as a dict."""
    out: dict[str, str] = {}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            data = s.recv(65536)
            if not data:
                break
            buf += data
    for line in buf.decode().splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "STAT":
            out[f[1]] = f[2]
    return out


class Host:
    """One running mchost; stop() kills it by pid and removes its files."""

    def __init__(self, config: str = "", secret: Optional[str] = None,
                 throttle: Optional[str] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="mcc-py-")
        cfg = "counter.enable=true;counter.port=0;counter.group.g=max:2"
        if secret is not None:
            path = os.path.join(self.dir, "admin.secret")
            with open(path, "w") as f:
                f.write(secret + "\n")
            cfg += ";counter.admin_secret_file=" + path
        if throttle is not None:
            path = os.path.join(self.dir, "throttle.conf")
            with open(path, "w") as f:
                f.write(throttle)
            cfg += ";counter.throttle.config=" + path
        if config:
            cfg += ";" + config
        portfile = os.path.join(self.dir, "port")
        argv = [os.environ["MCHOST"], "-p", "0", "-l", "127.0.0.1",
                "-F", portfile, "-X", os.environ["COUNTER_SO"] + "," + cfg]
        self.log = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc: Optional[subprocess.Popen] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=self.log)
        deadline = time.monotonic() + 20
        port = 0
        while time.monotonic() < deadline:
            try:
                with open(portfile) as f:
                    txt = f.read().strip()
                if txt.isdigit() and int(txt) > 0:
                    port = int(txt)
                    break
            except FileNotFoundError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        if not port:
            self.stop()
            raise RuntimeError("mchost did not start")
        self.mc_port = port
        self.port = int(mc_stats(port)["counter_port"])
        self.server = "127.0.0.1:%d" % self.port

    def stop(self) -> None:
        """Stops the host (TERM, then KILL after 5 s) and cleans up."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
