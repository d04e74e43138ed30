"""Robustness tests: what a cancelled or timed-out wait leaves on the
server, the bound on what a server may make the client buffer, the
server-list grammar shared with the C library (client/servers.c), a
request timeout leaving its server alone for retry_after, every events()
iterator ending on close, and a failed cancel not hiding the timeout."""
from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
import unittest

import mccounter as m
from mccounter import ops
from mccounter import protocol as p
from mccounter.ketama import Router, parse_servers
from support import FakeServer, Host, answer, have_host


def fake(test: unittest.TestCase, reply) -> FakeServer:
    """A FakeServer stopped when the test ends."""
    srv = FakeServer(reply)
    test.addCleanup(srv.stop)
    return srv


def silent(opcode: int, opaque: int, body: bytes) -> None:
    """A server that never answers."""
    return None


def huge(opcode: int, opaque: int, body: bytes) -> bytes:
    """A server that declares a 4 GiB body and sends none of it."""
    return answer(opcode, opaque, declared=0xFFFFFFFF)


class TestBodyBound(unittest.TestCase):
    """A packet declared larger than RESPONSE_MAX drops the connection
    instead of waiting for (and buffering) its body."""

    def test_decoder(self) -> None:
        most = p.RESPONSE_MAX - p.HEADER_SIZE
        self.assertIsNone(p.decode_packet(answer(0, 1, declared=most)))
        with self.assertRaises(p.ProtocolError):
            p.decode_packet(answer(0, 1, declared=most + 1))
        with self.assertRaises(p.ProtocolError):
            p.decode_packet(answer(0, 1, declared=0xFFFFFFFF))
        # An event is bounded the same way.
        ev = bytearray(answer(1, 1, declared=most + 1))
        ev[0] = p.MAGIC_EVENT
        with self.assertRaises(p.ProtocolError):
            p.decode_packet(ev)

    def test_blocking(self) -> None:
        srv = fake(self, huge)
        c = m.Client(srv.server, timeout=30)
        self.addCleanup(c.close)
        with self.assertRaises(p.ProtocolError):
            c.noop()
        self.assertEqual(c._conns, {})      # the connection was dropped

    def test_async(self) -> None:
        srv = fake(self, huge)

        async def run() -> None:
            async with m.AsyncClient(srv.server, timeout=30) as c:
                with self.assertRaises(m.ServerDown) as cm:
                    await c.noop()
                self.assertIn("declared", str(cm.exception))
                self.assertEqual(c._conns, {})
        asyncio.run(run())


class TestServerList(unittest.TestCase):
    """The lists tests/test_servers.c checks, read the same way."""

    def test_good(self) -> None:
        self.assertEqual(parse_servers("127.0.0.1:11215"),
                         [("127.0.0.1", 11215, 1)])
        self.assertEqual(
            parse_servers("a.example:1:3,[::1]:65535,"
                          "[fe80::1%eth0]:11211:4294967295,b_2-x:80"),
            [("a.example", 1, 3), ("::1", 65535, 1),
             ("fe80::1%eth0", 11211, 0xFFFFFFFF), ("b_2-x", 80, 1)])
        self.assertEqual(parse_servers("h:1,h:2"), [("h", 1, 1), ("h", 2, 1)])
        self.assertEqual(parse_servers([("::1", 7, 2)]), [("::1", 7, 2)])

    def test_bad(self) -> None:
        rows = [
            ("", "empty server list"),
            ("h:1,", "empty item"),
            (",h:1", "empty item"),
            ("h:1,,h:2", "empty item"),
            ("h", "'h': no port"),
            ("h:", "'h:': port must be 1 to 65535"),
            (":11215", "empty host"),
            ("h:0", "'h:0': port must be 1 to 65535"),
            ("h:65536", "port must be 1 to 65535"),
            ("h:+1", "port must be"),
            ("h:1x", "port must be"),
            ("h: 1", "port must be"),
            ("h:1 ", "port must be"),
            ("h:1_0", "port must be"),
            ("h:1:0", "'h:1:0': weight must be 1 to 4294967295"),
            ("h:1:4294967296", "weight must be"),
            ("h:1:", "weight must be"),
            ("h:1:2:3", "too many ':'"),
            ("h:1:-2", "weight must be"),
            ("ok:1,b d:2", "'b d:2': bad character"),
            (" h:1", "bad character"),
            ("h:1, g:2", "bad character"),
            ("::1:11215", "write an IPv6 address as [ADDRESS]"),
            ("fe80::1:1", "too many ':'"),
            ("[::1:11215", "no ']'"),
            ("[::1]", "expected [ADDRESS]:PORT"),
            ("[::1]11215", "expected [ADDRESS]:PORT"),
            ("[]:1", "brackets are only for IPv6"),
            ("[host]:1", "brackets are only for IPv6"),
            ("h:1,g:2,h:1", "'h:1' is listed twice"),
            ("[::1]:7,[::1]:7:3", "'[::1]:7' is listed twice"),
        ]
        for text, piece in rows:
            with self.assertRaises(ValueError, msg=text) as cm:
                parse_servers(text)
            self.assertIn(piece, str(cm.exception), text)
        for bad in ([("h", 0)], [("h", 1, 0)], [("h", 1, 1 << 32)],
                    [("b d", 1)], [("h", 1), ("h", 1)], []):
            with self.assertRaises(ValueError, msg=repr(bad)):
                parse_servers(bad)

    def test_long_host(self) -> None:
        self.assertEqual(parse_servers("h" * 255 + ":1")[0][0], "h" * 255)
        with self.assertRaises(ValueError) as cm:
            parse_servers("h" * 256 + ":1")
        self.assertIn("host longer than 255 bytes", str(cm.exception))

    def test_labels(self) -> None:
        r = Router("h.example:11215:9,[::1]:7")
        self.assertEqual(r.labels, ["h.example:11215", "[::1]:7"])
        self.assertEqual(r.index_of("[::1]:7"), 1)

    def test_ipv6_against_c(self) -> None:
        prog = os.environ.get("KETAMA_MAP")
        if not prog or not os.access(prog, os.X_OK):
            self.skipTest("KETAMA_MAP not set to the C check program")
        spec = ("[::1]:11215,[fe80::1%eth0]:11211:3,10.0.0.1:11216:2,"
                "[2001:db8::7]:7000")
        names = ["name-%d" % i for i in range(20000)]
        out = subprocess.run([prog, spec],
                             input=("\n".join(names) + "\n").encode(),
                             capture_output=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        lines = out.stdout.decode().splitlines()
        self.assertEqual(len(lines), len(names))
        router = Router(spec)
        self.assertEqual(set(lines), set(router.labels))
        diff = [n for n, got in zip(names, lines)
                if got != router.server_for(n.encode())]
        self.assertEqual(diff, [])


class TestTimeoutMarksDown(unittest.TestCase):
    """A request timeout closes the connection and leaves the server
    alone for retry_after: the next call fails without connecting."""

    def test_blocking(self) -> None:
        srv = fake(self, silent)
        c = m.Client(srv.server, timeout=0.2, retry_after=600)
        self.addCleanup(c.close)
        with self.assertRaises(TimeoutError):
            c.noop()
        with self.assertRaises(m.ServerDown):
            c.noop()
        self.assertEqual(srv.accepts, 1)

    def test_async(self) -> None:
        srv = fake(self, silent)

        async def run() -> None:
            async with m.AsyncClient(srv.server, timeout=0.2,
                                     retry_after=600) as c:
                with self.assertRaises(asyncio.TimeoutError):
                    await c.noop()
                with self.assertRaises(m.ServerDown) as cm:
                    await c.noop()
                self.assertIn("retried later", str(cm.exception))
        asyncio.run(run())
        self.assertEqual(srv.accepts, 1)


class TestEventsEnd(unittest.IsolatedAsyncioTestCase):
    """close() ends every events() iterator, after what they had."""

    async def test_every_iterator_ends(self) -> None:
        c = m.AsyncClient("127.0.0.1:1")
        ev = p.Event(p.EventKind.GRANTED, 1, 2, 3, b"n", "127.0.0.1:1")

        async def collect() -> list[p.Event]:
            return [e async for e in c.events()]
        tasks = [asyncio.create_task(collect()) for _ in range(3)]
        for _ in range(3):
            await asyncio.sleep(0)      # every iterator is waiting now
        c._events.append(ev)
        c._wake_event_waiters()
        await c.close()
        got = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        self.assertEqual(sorted(len(g) for g in got), [0, 0, 1])
        # One started after the close ends at once, too.
        self.assertEqual([e async for e in c.events()], [])


class TestBlockingCancelFails(unittest.TestCase):
    """A wait whose event never came raises TimeoutError even when the
    Wait_release that cancels it fails as well (here: the server closes
    the connection on it); that failure is the timeout's cause."""

    def test_timeout_kept(self) -> None:
        def reply(opcode: int, opaque: int, body: bytes):
            if opcode == p.Op.WAIT_ACQUIRE:     # queued, first in line
                return answer(opcode, opaque,
                              struct.pack(">BxxxIQI", 1, 1, 0, 1))
            return FakeServer.CLOSE
        srv = fake(self, reply)
        c = m.Client(srv.server, timeout=0.2)
        self.addCleanup(c.close)
        with self.assertRaises(TimeoutError) as cm:
            c.wait_acquire("x", 1, 1, 0.001, 0)
        self.assertNotIsInstance(cm.exception, m.ServerDown)
        self.assertIsInstance(cm.exception.__cause__, m.ServerDown)
        self.assertEqual(srv.requests, [p.Op.WAIT_ACQUIRE,
                                        p.Op.WAIT_RELEASE])


@unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")
class TestCancelledWait(unittest.IsolatedAsyncioTestCase):
    """A cancelled async wait gives back what the server queued for it:
    when the holder releases, nobody is granted the unit."""

    async def asyncSetUp(self) -> None:
        self.host = Host()

    async def asyncTearDown(self) -> None:
        self.host.stop()

    async def _check(self, name: str, how: str) -> None:
        async with m.AsyncClient(self.host.server, timeout=10) as holder, \
                m.AsyncClient(self.host.server, timeout=10) as waiter:
            self.assertEqual(await holder.acquire(name, 1, 1), 1)
            await waiter.noop()         # connected: the send is at once
            if how == "queued":
                # Cancelled once the server answered "queued".
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        waiter.wait_acquire(name, 1, 1, 60, 0), 0.3)
            elif how == "lease":
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        waiter.lease(name, 1, 1, 60, 30), 0.3)
            else:
                # Cancelled while the request is written and unanswered.
                task = asyncio.create_task(
                    waiter.wait_acquire(name, 1, 1, 60, 0))
                await asyncio.sleep(0)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
            # Round trips on the waiter's connection: the first one's
            # answer comes after the cancelled wait's, whose callback
            # wrote the Wait_release; the second one's after that.
            await waiter.noop()
            await waiter.noop()
            self.assertNotIn(name.encode(),
                             [q.name for q in await holder.queues()])
            await holder.release(name, 1)
            self.assertEqual(await holder.get(name), 0)
            self.assertEqual(await waiter.get(name), 0)
            self.assertEqual([e for e in waiter.pending_events()
                              if e.kind == p.EventKind.GRANTED], [])

    async def test_cancelled_while_queued(self) -> None:
        await self._check("cw-queued", "queued")

    async def test_cancelled_lease(self) -> None:
        await self._check("cw-lease", "lease")

    async def test_cancelled_before_answer(self) -> None:
        await self._check("cw-early", "early")


if __name__ == "__main__":
    unittest.main()


def memcached_port(test: unittest.TestCase) -> int:
    """Starts Debian's memcached on a free loopback port, stopped (by pid)
    when the test ends; 0 when it is not installed."""
    import shutil
    import socket
    import time
    from support import free_port
    exe = shutil.which("memcached")
    if exe is None:
        return 0
    port = free_port()
    argv = [exe, "-l", "127.0.0.1", "-p", str(port), "-U", "0"]
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def stop() -> None:
        proc.kill()
        proc.wait()
    test.addCleanup(stop)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            time.sleep(0.02)
    # Installed but never listening: the case would silently go untested.
    test.fail("%s never accepted connections on 127.0.0.1:%d" % (exe, port))


@unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")
class TestMemcachePort(unittest.TestCase):
    """A memcache text port (mchost's own, Debian's memcached) is named as
    such, not waited on until the timeout: the first request's opaque
    ends in CR LF, so the port answers ERROR at once."""

    def ports(self) -> list[int]:
        host = Host()
        self.addCleanup(host.stop)
        out = [host.mc_port]
        mc = memcached_port(self)
        if mc:
            out.append(mc)
        return out

    def test_blocking_and_asyncio(self) -> None:
        async def asyncio_acquire(server: str) -> None:
            async with m.AsyncClient(server, timeout=30) as a:
                await a.acquire("x", 1, 2)

        for port in self.ports():
            server = "127.0.0.1:%d" % port
            with m.Client(server, timeout=30) as c:
                with self.assertRaises(m.MemcachePortError) as cm:
                    c.get("x")
                self.assertIn("this is a memcache port, not the counter "
                              "port", str(cm.exception))
                self.assertIn(server, str(cm.exception))
            with self.assertRaises(m.MemcachePortError):
                asyncio.run(asyncio_acquire(server))

    def test_codec(self) -> None:
        with self.assertRaises(m.MemcachePortError):
            p.decode_packet(b"ERROR\r\n")
        with self.assertRaises(m.MemcachePortError):
            p.decode_packet(b"E")
        with self.assertRaises(m.ProtocolError) as cm:
            p.decode_packet(b"\x80\x00")
        self.assertNotIsInstance(cm.exception, m.MemcachePortError)
        self.assertIsNone(p.decode_packet(b"\x91\x00"))


class TestBackpressure(unittest.IsolatedAsyncioTestCase):
    """The asyncio client waits for its writer to drain: requests written
    faster than the server reads them wait in the caller, not in the
    transport's buffer, which stays near its high-water mark."""

    async def test_writes_wait_for_drain(self) -> None:
        # A listener that never accepts or reads: once the kernel's
        # buffers are full, nothing the client writes leaves.
        lsock = socket.socket()
        self.addCleanup(lsock.close)
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        c = m.AsyncClient("127.0.0.1:%d" % lsock.getsockname()[1],
                          timeout=600)
        name = "n" * 60000
        # About 24 MB of requests, far more than loopback buffers hold.
        reqs = [ops.get(name) for _ in range(400)]
        task = asyncio.create_task(c.gather(*reqs))
        peak = 0
        limit = 0
        for _ in range(500):
            await asyncio.sleep(0)
            conn = c._conns.get(0)
            if conn is not None:
                tr = conn.writer.transport
                peak = max(peak, tr.get_write_buffer_size())
                limit = tr.get_write_buffer_limits()[1]
        self.assertFalse(task.done())
        self.assertGreater(limit, 0)
        # At most one request past the high-water mark.
        self.assertLessEqual(peak, limit + len(reqs[0].body) + 12)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        await c.close()


class TestOperationsShared(unittest.TestCase):
    """Client, AsyncClient and the pipelines take their operations from
    one description: same names, same signatures, same documentation; the
    asyncio ones are coroutines."""

    def test_same_operations(self) -> None:
        import inspect
        names = [n for n, v in vars(ops.Operations).items()
                 if isinstance(v, ops.Operation)]
        self.assertIn("gcra_check", names)
        self.assertGreaterEqual(len(names), 27)
        c = m.Client("127.0.0.1:1")
        a = m.AsyncClient("127.0.0.1:1")
        pl = c.pipeline()
        for n in names:
            sync, coro, queued = getattr(c, n), getattr(a, n), getattr(pl, n)
            self.assertEqual(inspect.signature(sync),
                             inspect.signature(coro), n)
            self.assertEqual(inspect.signature(sync),
                             inspect.signature(queued), n)
            self.assertEqual(sync.__doc__, coro.__doc__, n)
            self.assertTrue(sync.__doc__, n)
        # Called, an asyncio operation is awaitable and sends nothing yet.
        aw = a.noop()
        self.assertTrue(inspect.isawaitable(aw))
        aw.close()  # type: ignore[attr-defined]
        self.assertIsNone(pl.get("x"))
        self.assertEqual(len(pl), 1)
