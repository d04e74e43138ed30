"""Test support: starts mchost with counter.so on kernel-chosen loopback
ports (as t/lib/CounterTest.pm does), finds the counter port from the
memcache text `stats`, and stops the host by pid; and a fake loopback
server for the failures a real host does not produce."""
from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
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


class FakeServer:
    """A loopback server that speaks just enough of the protocol for the
    client's failure paths: it reads each request (header and body) and
    passes (opcode, opaque, body) to reply, whose bytes it writes back
    (None: no answer; CLOSE: close the connection). accepts counts the
    connections taken. stop() closes everything and joins the thread."""

    CLOSE = object()

    def __init__(self, reply) -> None:
        self.reply = reply
        self.accepts = 0
        self.requests: list[int] = []
        self._lsock = socket.socket()
        self._lsock.bind(("127.0.0.1", 0))
        self._lsock.listen(8)
        self.port = self._lsock.getsockname()[1]
        self.server = "127.0.0.1:%d" % self.port
        self._conns: list[socket.socket] = []
        self._stopping = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._lsock, selectors.EVENT_READ, None)
            bufs: dict[socket.socket, bytearray] = {}
            while not self._stopping:
                for key, _ in sel.select(0.05):
                    if key.data is None:
                        try:
                            s, _ = self._lsock.accept()
                        except OSError:
                            continue
                        self.accepts += 1
                        self._conns.append(s)
                        bufs[s] = bytearray()
                        sel.register(s, selectors.EVENT_READ, s)
                        continue
                    s = key.data
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(s)
                        s.close()
                        continue
                    buf = bufs[s]
                    buf += data
                    while len(buf) >= 12:
                        blen, opaque = struct.unpack_from(">II", buf, 4)
                        if len(buf) < 12 + blen:
                            break
                        opcode, body = buf[1], bytes(buf[12:12 + blen])
                        del buf[:12 + blen]
                        self.requests.append(opcode)
                        out = self.reply(opcode, opaque, body)
                        if out is FakeServer.CLOSE:
                            sel.unregister(s)
                            s.close()
                            break
                        if out:
                            s.sendall(out)

    def stop(self) -> None:
        """Stops the thread and closes the listening and client sockets."""
        self._stopping = True
        self._thread.join()
        self._lsock.close()
        for s in self._conns:
            try:
                s.close()
            except OSError:
                pass


def answer(opcode: int, opaque: int, body: bytes = b"", status: int = 0,
           declared: Optional[int] = None) -> bytes:
    """An answer packet; declared overrides the body length in the header
    (a server lying about it)."""
    blen = len(body) if declared is None else declared
    return struct.pack(">BBBBII", 0x91, opcode, status, 0, blen,
                       opaque) + body
