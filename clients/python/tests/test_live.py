"""Tests against a real mchost with counter.so (MCHOST, COUNTER_SO; skipped
without them): every operation blocking and async, every event, the
failure policy with a stopped host, and pipelining."""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

import mccounter as m
from mccounter import ops
from support import Host, free_port, have_host

SECRET = "open sesame, python tests"
THROTTLE = "node.capacity = 100\ntenant.acme = reserved:10, hard_limit:50\n"


def needs_host(cls):
    return unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")(cls)


@needs_host
class TestBlocking(unittest.TestCase):
    """The blocking client against one host."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.host = Host(secret=SECRET, throttle=THROTTLE)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.host.stop()

    def client(self, **kw) -> m.Client:
        c = m.Client(self.host.server, timeout=10, **kw)
        self.addCleanup(c.close)
        return c

    def test_counters(self) -> None:
        c = self.client()
        c.noop()
        self.assertEqual(c.acquire("b-job", 2, 4), 2)
        with self.assertRaises(m.StatusError) as cm:
            c.acquire("b-job", 3, 4)
        self.assertEqual(cm.exception.status, m.Status.RESOURCE_NOT_AVAILABLE)
        self.assertEqual(c.get("b-job"), 2)
        self.assertIn(b"b-job", [r.name for r in c.dump()])
        self.assertIn("objects", c.stats())
        c.release("b-job", 2)
        self.assertEqual(c.get("b-job"), 0)
        with self.assertRaises(m.StatusError) as cm:
            c.get("b-never")
        self.assertEqual((cm.exception.status, cm.exception.text),
                         (1, "Not found"))

    def test_waits_and_events(self) -> None:
        seen: list[m.Event] = []
        a, b = self.client(), self.client(on_event=seen.append)
        lease = a.wait_acquire("b-w", 2, 2, 0, 30)
        self.assertGreater(lease.lease_id, 0)
        ans = b.wait_acquire_start("b-w", 1, 2, 30, 0)
        self.assertFalse(ans.granted)
        self.assertEqual(ans.position, 1)
        q = a.queues()
        self.assertIn((b"b-w", 2, 1), [(r.name, r.consumption, r.length)
                                        for r in q])
        self.assertEqual(a.renew("b-w", 20), lease.lease_id)
        leases = a.lease_list()
        self.assertIn((b"b-w", lease.lease_id, 2),
                      [(r.name, r.lease_id, r.resources) for r in leases])
        self.assertTrue(all(0 <= r.left <= 30 for r in leases))
        self.assertEqual(lease.release(), 2)
        evs = b.events(timeout=5)
        self.assertEqual([e.kind for e in evs], [m.EventKind.GRANTED])
        self.assertEqual(seen, evs)
        self.assertGreater(evs[0].lease_id, lease.lease_id)
        self.assertEqual(b.wait_release("b-w"), 1)
        # Timed out: the group g (max 2) held whole by a.
        with a.wait_acquire("g", 2, 0, 0) as held:
            self.assertEqual(held.resources, 2)
            with self.assertRaises(m.WaitTimedOut):
                b.wait_acquire("g", 1, 0, 0.1)
            self.assertEqual([e.kind for e in b.events()],
                             [m.EventKind.TIMED_OUT])
        # Granted through the helper once a releases.
        lease = b.wait_acquire("g", 1, 0, 30)
        lease.release()
        # Lease expired.
        lease = a.wait_acquire("b-exp", 1, 1, 0, 0.1)
        evs = a.events(timeout=5)
        self.assertEqual([(e.kind, e.lease_id, e.value) for e in evs],
                         [(m.EventKind.LEASE_EXPIRED, lease.lease_id, 1)])
        self.assertIs(lease.lost, True)
        with self.assertRaises(m.StatusError) as cm:
            lease.release()
        self.assertEqual(cm.exception.status, m.Status.LEASE_EXPIRED)
        # A lease lost inside a with block: the exit acknowledges quietly.
        with a.wait_acquire("b-exp", 1, 1, 0, 0.1) as lease:
            self.assertEqual([e.kind for e in a.events(timeout=5)],
                             [m.EventKind.LEASE_EXPIRED])
            self.assertTrue(lease.lost)

    def test_rate_limits(self) -> None:
        c = self.client()
        c.ttl_insert("b-ttl", 5, 60)
        with self.assertRaises(m.StatusError):
            c.ttl_insert("b-ttl", 5, 60)
        v = c.ttl_query("b-ttl")
        self.assertEqual((v.quota, v.unit), (5, m.Unit.S))
        v = c.ttl_update("b-ttl", m.TtlAttribute.QUOTA, m.TtlChange.DECREASE, 2)
        self.assertEqual(v.quota, 3)
        c.ttl_purge("b-ttl")
        r = c.window_check("b-win", 2, window=60)
        self.assertTrue(r.allowed)
        self.assertEqual(r.remaining, 1)
        r = c.gcra_check("b-gcra", 0, 1, 60)
        self.assertTrue(r.allowed)
        r = c.gcra_check("b-gcra", 0, 1, 60)
        self.assertEqual(r.state, m.CheckState.LIMITED)
        self.assertGreater(r.retry_after_ns, 0)
        mr = c.multi_check([m.WindowItem("b-mw", 5),
                            m.GcraItem("b-mg", 5, 10, 1)])
        self.assertTrue(mr.allowed)
        self.assertEqual(len(mr.items), 2)

    def test_busiest(self) -> None:
        c = self.client()
        self.assertLessEqual(len(c.busiest(0)), 0)
        # Checked all along, b-busy shows once a whole second of its
        # checks has passed; the answer is observed, not timed.
        found = []
        for _ in range(200):
            for _ in range(3):
                c.window_check("b-busy", 1000, window=60)
            found = [r for r in c.busiest(16) if r.name == b"b-busy"]
            if found:
                break
            time.sleep(0.02)
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0].kind, m.LimitKind.WINDOW)
        self.assertGreaterEqual(found[0].checks, 1)
        self.assertLessEqual(len(c.busiest(100)), m.BUSIEST_MAX)
        self.assertLessEqual(len(c.busiest(1)), 1)

    def test_throttle(self) -> None:
        c = self.client(secret=SECRET)
        t = c.throttle("acme", 5)
        self.assertTrue(t.allowed)
        t = c.throttle("acme", 60)
        self.assertFalse(t.allowed)
        self.assertEqual(t.reason, m.ThrottleReason.HARD_LIMIT)
        self.assertGreater(t.retry_after_ns, 0)
        v = c.tenant_show("acme")
        self.assertEqual((v.reserved, v.hard_limit, v.configured),
                         (10, 50, True))
        self.assertIn(b"acme", [r.name for r in c.tenant_list()])
        self.assertEqual(c.node_show().capacity, 100)
        c.tenant_set("py-t", reserved=5)
        self.assertEqual(c.tenant_set_json("py-t", {"hard_limit": 9}),
                         {"reserved": 5, "hard_limit": 9})
        with self.assertRaises(m.StatusError) as cm:
            c.tenant_set_json("py-t", '{"hard_limit": "x"}')
        self.assertEqual(cm.exception.status, m.Status.INVALID)
        self.assertIn("hard_limit:", cm.exception.text)
        c.tenant_remove("py-t")
        self.assertEqual(c.node_set_json(b'{"capacity": 300}'),
                         {"capacity": 300})
        self.assertEqual(c.node_show().capacity, 300)
        c.node_set(200)
        self.assertEqual(c.node_show().capacity, 200)
        c.reload()
        self.assertEqual(c.node_show().capacity, 100)
        c.unthrottle()
        self.assertTrue(c.throttle("acme", 50).allowed)
        plain = self.client()
        with self.assertRaises(m.StatusError) as cm:
            plain.node_set(1)
        self.assertEqual(cm.exception.status, m.Status.NOT_PERMITTED)
        with self.assertRaises(m.StatusError) as cm:
            plain.auth("wrong")
        self.assertEqual(cm.exception.status, m.Status.AUTH_FAILED)

    def test_pipeline(self) -> None:
        c = self.client()
        with c.pipeline() as pl:
            for i in range(32):
                pl.acquire("b-pipe", 1, 100)
            pl.get("b-pipe")
            pl.get("b-pipe-none")
            pl.noop()
            res = pl.execute(raise_on_error=False)
        self.assertEqual(res[:32], [1] * 32)
        self.assertEqual(res[32], 32)
        self.assertIsInstance(res[33], m.StatusError)
        pl = c.pipeline()
        pl.get("b-pipe-none")
        with self.assertRaises(m.StatusError):
            pl.execute()
        # More than one chunk, and a streamed answer among them.
        pl = c.pipeline()
        for i in range(3000):
            pl.acquire("b-pipe-%d" % (i % 7), 1, 100000)
        pl.dump()
        res = pl.execute()
        self.assertEqual(res[:3000], [1] * 3000)
        self.assertEqual(sum(r.current for r in res[3000]
                             if r.name.startswith(b"b-pipe-")), 3000)


@needs_host
class TestHosts(unittest.TestCase):
    """Two hosts: the failure policy and the shutdown event."""

    def setUp(self) -> None:
        self.h1, self.h2 = Host(), Host()
        self.addCleanup(self.h1.stop)
        self.addCleanup(self.h2.stop)
        self.servers = "%s,%s" % (self.h1.server, self.h2.server)

    def names_on(self, c, server: str) -> str:
        return next(n for n in ("n%d" % i for i in range(1000))
                    if c.server_for(n) == server)

    def test_failure_policy(self) -> None:
        strict = m.Client(self.servers, timeout=5)
        loose = m.Client(self.servers, timeout=5, remap_rate_limits=True,
                         retry_after=60)
        self.addCleanup(strict.close)
        self.addCleanup(loose.close)
        on1 = self.names_on(strict, self.h1.server)
        strict.acquire(on1, 1, 5)
        lease = strict.wait_acquire(on1, 1, 5, 0, 0)
        self.h1.stop()
        with self.assertRaises(m.ServerDown):
            strict.get(on1)
        with self.assertRaises(m.ServerDown):
            strict.window_check(on1, 5)
        self.assertTrue(lease.lost)
        # Moved: only the rate limits, to the other host.
        self.assertTrue(loose.window_check(on1, 5).allowed)
        loose.ttl_insert(on1, 1, 10)
        self.assertEqual(loose.ttl_query(on1).quota, 1)
        with self.assertRaises(m.ServerDown):
            loose.acquire(on1, 1, 5)
        with self.assertRaises(m.ServerDown):
            loose.throttle(on1, 1)
        w2 = m.Client(self.h2.server)
        self.addCleanup(w2.close)
        self.assertEqual(w2.ttl_query(on1).quota, 1)

    def test_shutdown_event(self) -> None:
        c = m.Client(self.h2.server, timeout=5)
        self.addCleanup(c.close)
        lease = c.wait_acquire("sd", 2, 3, 0, 0)
        self.h2.stop()
        evs = c.events(timeout=5)
        self.assertEqual([(e.kind, e.lease_id, e.value) for e in evs],
                         [(m.EventKind.SHUTDOWN, lease.lease_id, 2)])
        self.assertTrue(lease.lost)
        with self.assertRaises(m.ServerDown):
            c.noop()

    def test_retry_after(self) -> None:
        port = free_port()
        c = m.Client("127.0.0.1:%d" % port, timeout=5, retry_after=0.2)
        slow = m.Client("127.0.0.1:%d" % port, timeout=5, retry_after=600)
        self.addCleanup(c.close)
        self.addCleanup(slow.close)
        with self.assertRaises(m.ServerDown):
            c.noop()
        with self.assertRaises(m.ServerDown):
            slow.noop()
        # Something listens now: a stand-in that answers one Noop.
        lsock = socket.socket()
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("127.0.0.1", port))
        lsock.listen(1)
        self.addCleanup(lsock.close)

        def answer() -> None:
            conn, _ = lsock.accept()
            with conn:
                req = b""
                while len(req) < 12:
                    req += conn.recv(12 - len(req))
                conn.sendall(b"\x91\x00\x00\x00\x00\x00\x00\x00"
                             + req[8:12])
                conn.recv(1)
        t = threading.Thread(target=answer, daemon=True)
        t.start()
        with self.assertRaises(m.ServerDown) as cm:
            slow.noop()     # inside its retry_after: not even tried
        self.assertIn("retried later", str(cm.exception))
        time.sleep(0.3)     # past c's retry_after: tried again, and it answers
        c.noop()
        c.close()
        t.join(5)

    def test_nothing_listening(self) -> None:
        c = m.Client("127.0.0.1:%d" % free_port(), timeout=2)
        with self.assertRaises(m.ServerDown):
            c.get("x")
        # Marked down: refused at once until retry_after passes.
        with self.assertRaises(m.ServerDown) as cm:
            c.get("x")
        self.assertIn("retried later", str(cm.exception))


@needs_host
class TestUsers(unittest.TestCase):
    """Logging in as a user of a users file: on every connection (the
    constructor's user=) or asked for (auth_user), and Throttled answers
    on a non-blocking connection over its tenant's share."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="mcc-py-users-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        path = os.path.join(self.dir, "users")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("bob b - bob-secret-0123456\n"
                    "ops o admin,unthrottled ops-secret-0123456\n")
        self.host = Host(config="counter.users_file=" + path,
                         throttle="node.capacity = 3\n")
        self.addCleanup(self.host.stop)

    def client(self, **kw) -> m.Client:
        c = m.Client(self.host.server, timeout=10, **kw)
        self.addCleanup(c.close)
        return c

    def test_login_and_throttled(self) -> None:
        # A wrong secret fails the connection, so the first operation.
        bad = self.client(user="bob", secret="not-bobs-secret-00")
        with self.assertRaises(m.AuthFailed):
            bad.noop()
        # An admin user may run privileged operations; its use is its
        # tenant's.
        ops_c = self.client(user="ops", secret="ops-secret-0123456")
        ops_c.node_set(3)
        self.assertGreaterEqual(ops_c.tenant_show("o").units, 1)
        # bob, non-blocking, at 3 requests a second: the server answers
        # Throttled rather than holding the connection. However the
        # seconds fall, 40 requests cannot all fit.
        bob = self.client(user="bob", secret="bob-secret-0123456",
                          nonblocking=True)
        throttled = None
        for _ in range(40):
            try:
                bob.noop()
            except m.Throttled as e:
                throttled = e
                break
        assert throttled is not None, "no request was throttled"
        self.assertEqual(throttled.status, m.Status.THROTTLED)
        self.assertEqual(throttled.text, "Throttled")
        self.assertGreater(throttled.retry_after, 0)
        self.assertLessEqual(throttled.retry_after, 1)
        self.assertIn(throttled.reason, (1, 2, 3))
        # auth_user on a plain connection moves it to bob's tenant.
        plain = self.client()
        with self.assertRaises(m.NotPermitted):
            plain.node_set(3)
        with self.assertRaises(m.AuthFailed):
            plain.auth_user("nobody", "no-secret-000000000")
        plain.auth_user("ops", "ops-secret-0123456", server=None)
        plain.node_set(3)


@needs_host
class TestAsync(unittest.IsolatedAsyncioTestCase):
    """The asyncio client: every operation, events, leases, failures."""

    async def asyncSetUp(self) -> None:
        self.host = Host(secret=SECRET, throttle=THROTTLE)

    async def asyncTearDown(self) -> None:
        self.host.stop()

    async def test_operations(self) -> None:
        async with m.AsyncClient(self.host.server, secret=SECRET) as c:
            await c.noop()
            self.assertEqual(await c.acquire("a-job", 2, 4), 2)
            self.assertEqual(await c.get("a-job"), 2)
            await c.release("a-job", 1)
            self.assertIn("objects", await c.stats())
            self.assertEqual([r.current for r in await c.dump()
                              if r.name == b"a-job"], [1])
            self.assertEqual(await c.queues(), [])
            self.assertEqual(await c.lease_list(5), [])
            ans = await c.wait_acquire_start("a-w", 1, 1, 0, 0)
            self.assertTrue(ans.granted)
            self.assertEqual(await c.renew("a-w", 5), ans.lease_id)
            self.assertEqual(await c.wait_release("a-w"), 1)
            await c.ttl_insert("a-ttl", 7, 5000, m.Unit.MS)
            self.assertEqual((await c.ttl_query("a-ttl")).quota, 7)
            v = await c.ttl_update("a-ttl", m.TtlAttribute.QUOTA,
                                   m.TtlChange.INCREASE, 3)
            self.assertEqual(v.quota, 10)
            await c.ttl_purge("a-ttl")
            minute = 60.0
            self.assertTrue((await c.window_check("a-win", 1,
                                                  window=minute)).allowed)
            self.assertFalse((await c.window_check("a-win", 1,
                                                   window=minute)).allowed)
            self.assertTrue((await c.gcra_check("a-g", 1, 1, 1)).allowed)
            mr = await c.multi_check([m.WindowItem("a-win", 1,
                                                   window=minute)],
                                     peek=True)
            self.assertFalse(mr.allowed)
            self.assertTrue((await c.throttle("acme", 1)).allowed)
            self.assertTrue((await c.tenant_show("acme")).configured)
            self.assertTrue(await c.tenant_list())
            await c.tenant_set("a-t", 1, 2)
            await c.tenant_remove("a-t")
            await c.node_set(150)
            self.assertEqual((await c.node_show()).capacity, 150)
            await c.reload()
            await c.unthrottle()
            await c.auth(SECRET)
            res = await c.gather(ops.get("a-job"), ops.get("a-none"),
                                 ops.noop(None), return_exceptions=True)
            self.assertEqual(res[0], 1)
            self.assertIsInstance(res[1], m.NotFound)
            # As asyncio.gather: without return_exceptions, the failure
            # is raised.
            with self.assertRaises(m.NotFound):
                await c.gather(ops.get("a-job"), ops.get("a-none"))
            pl = c.pipeline()
            for _ in range(100):
                pl.acquire("a-pipe", 1, 1000)
            pl.get("a-pipe")
            pl.stats()
            res = await pl.execute()
            self.assertEqual(res[:101], [1] * 100 + [100])
            self.assertIn("objects", res[101])
            pl.get("a-none")
            with self.assertRaises(m.StatusError):
                await pl.execute()
            # Concurrent coroutines pipeline on the one connection too.
            got = await asyncio.gather(*(c.get("a-pipe") for _ in range(50)))
            self.assertEqual(got, [100] * 50)
            with self.assertRaises(ValueError):
                await c.get("")

    async def test_events_and_leases(self) -> None:
        a = m.AsyncClient(self.host.server)
        b = m.AsyncClient(self.host.server)
        try:
            # Renewed every 500 ms: lost only if the loop stalled 1 s.
            lease = await a.lease("g", 2, 0, 0, 1.5)
            waiter = asyncio.ensure_future(b.wait_acquire("g", 1, 0, 30))
            await asyncio.sleep(2.0)     # past the first lease: renewed
            self.assertIs(lease.lost, False)
            self.assertFalse(waiter.done())
            self.assertEqual(await lease.release(), 2)
            got = await waiter
            ev = await asyncio.wait_for(anext(b.events()), 5)
            self.assertEqual((ev.kind, ev.lease_id),
                             (m.EventKind.GRANTED, got.lease_id))
            with self.assertRaises(m.WaitTimedOut):
                await a.wait_acquire("g", 2, 0, 0.05)
            self.assertEqual([e.kind for e in a.pending_events()],
                             [m.EventKind.TIMED_OUT])
            await got.release()
            short = await a.wait_acquire("a-exp", 1, 1, 0, 0.1)
            await asyncio.wait_for(short.wait_lost(), 5)
            self.assertIs(short.lost, True)
            self.assertEqual(short.lost_reason, "lease expired")
            ev = await asyncio.wait_for(anext(a.events()), 5)
            self.assertEqual(ev.kind, m.EventKind.LEASE_EXPIRED)
            held = await b.wait_acquire("a-sd", 1, 1, 0, 0)
            self.host.stop()
            ev = await asyncio.wait_for(anext(b.events()), 5)
            self.assertEqual((ev.kind, ev.lease_id),
                             (m.EventKind.SHUTDOWN, held.lease_id))
            await asyncio.wait_for(held.wait_lost(), 5)
            self.assertIs(held.lost, True)
            with self.assertRaises(m.ServerDown):
                await b.noop()
            await b.close()
            rest = [e async for e in b.events()]    # ends at the close
            self.assertEqual(rest, [])
        finally:
            await a.close()
            await b.close()

    async def test_failure_policy(self) -> None:
        other = Host()
        try:
            servers = "%s,%s" % (self.host.server, other.server)
            c = m.AsyncClient(servers, remap_rate_limits=True, timeout=5)
            try:
                name = next(n for n in ("n%d" % i for i in range(1000))
                            if c.server_for(n) == self.host.server)
                await c.acquire(name, 1, 3)
                self.host.stop()
                with self.assertRaises(m.ServerDown):
                    await c.get(name)
                self.assertTrue((await c.gcra_check(name, 1, 1, 1))
                                .allowed)
                with self.assertRaises(m.ServerDown):
                    await c.acquire(name, 1, 3)
            finally:
                await c.close()
        finally:
            other.stop()


if __name__ == "__main__":
    unittest.main()
