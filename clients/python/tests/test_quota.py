"""get_lease: the names (against the C library's, through KETAMA_MAP -l),
the answers of one server, the batching with max_lease and its bound over
several clients, and a down server."""
from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
import unittest
import unittest.mock

import mccounter as m
from mccounter import quota
from mccounter.quota import lease_name
from support import Host, free_port, have_host

# Characters of the random identities: the separator and digits (so that
# a collision of the encoding would show), letters, a few non-ASCII.
ALPHABET = "::::0123456789abcXYZ -_/\u00e9\u4e2d"


def identity(rng: random.Random) -> tuple[str, str, str]:
    """A random (user, domain, op), each field possibly empty."""
    return tuple("".join(rng.choice(ALPHABET)  # type: ignore[return-value]
                         for _ in range(rng.randrange(0, 12)))
                 for _ in range(3))


class TestNames(unittest.TestCase):
    def test_example(self) -> None:
        self.assertEqual(lease_name("guest", "localhost", "inserts"),
                         b"getlease:5:guest9:localhostinserts")
        self.assertEqual(lease_name("", "", ""), b"getlease:0:0:")
        self.assertEqual(lease_name(b"a", "\u00e9", "x"),
                         b"getlease:1:a2:\xc3\xa9x")

    def test_separator_does_not_collide(self) -> None:
        self.assertNotEqual(lease_name("a:1", "b", "c"),
                            lease_name("a", "1:b", "c"))
        self.assertNotEqual(lease_name("a", "b", "c"),
                            lease_name("a", "", "bc"))
        rng = random.Random(7)
        seen: dict[bytes, tuple[str, str, str]] = {}
        for _ in range(20000):
            ident = identity(rng)
            name = lease_name(*ident)
            self.assertEqual(seen.setdefault(name, ident), ident)

    def test_too_long(self) -> None:
        lease_name("u" * 65000, "d" * 500, "")
        with self.assertRaises(ValueError):
            lease_name("u" * 65535, "", "")
        with self.assertRaises(TypeError):
            lease_name(1, "d", "o")  # type: ignore[arg-type]

    def test_bad_settings(self) -> None:
        for bad in (0, -1, 1.5, True):
            with self.assertRaises(ValueError):
                m.Client("127.0.0.1:1", max_lease=bad)  # type: ignore
        c = m.Client("127.0.0.1:1")
        for bad in (-1, 2 ** 32, 1.0):
            with self.assertRaises(ValueError):
                c.get_lease("u", "d", "o", bad)  # type: ignore[arg-type]
        c.close()


class TestSameAsC(unittest.TestCase):
    """100,000 random identities: the same names and servers as the C
    library (tests/ketama_map -l)."""

    def test_same_names_and_servers(self) -> None:
        prog = os.environ.get("KETAMA_MAP")
        if not prog or not os.access(prog, os.X_OK):
            self.skipTest("KETAMA_MAP not set to the C check program")
        rng = random.Random(2026)
        idents = [identity(rng) for _ in range(100000)]
        spec = "10.0.0.1:11211,10.0.0.2:11211:2,[::1]:7000,h.example:1:3"
        data = "".join("\t".join(i) + "\n" for i in idents).encode()
        out = subprocess.run([prog, "-l", spec], input=data,
                             capture_output=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        lines = out.stdout.decode().splitlines()
        self.assertEqual(len(lines), len(idents))
        router = m.Router(spec)
        diff = []
        for ident, line in zip(idents, lines):
            name = lease_name(*ident)
            if line != "%s\t%s" % (name.hex(), router.server_for(name)):
                diff.append((ident, line))
        self.assertEqual(diff[:5], [], "%d identities differ" % len(diff))


@unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")
class TestLive(unittest.TestCase):
    def setUp(self) -> None:
        self.host = Host()

    def tearDown(self) -> None:
        self.host.stop()

    def test_exact(self) -> None:
        with m.quota.init(self.host.server) as c:
            got = [c.get_lease("guest", "X", "insert", 5) for _ in range(7)]
            self.assertEqual(got, [True] * 5 + [False] * 2)
            # Another identity has its own count.
            self.assertTrue(c.get_lease("guest", "Y", "insert", 5))
            # The server counts under the documented name.
            a = c.window_check(lease_name("guest", "X", "insert"), 5,
                               window=1, slots=10, peek=True)
            self.assertEqual(a.used, 5)
            self.assertFalse(c.get_lease("guest", "X", "insert", 0))

    def test_batch_counts_round_trips(self) -> None:
        with m.Client(self.host.server, max_lease=10) as c:
            # A clock that stands still: no allowance runs out here,
            # however slowly the calls run.
            c.allowances.clock = lambda: 0.0
            sent: list[int] = []
            real = quota._charge

            def counted(name: bytes, limit: int,
                        cost: int) -> "m.protocol.Request[m.CheckAnswer]":
                sent.append(cost)
                return real(name, limit, cost)
            patcher = unittest.mock.patch.object(quota, "_charge", counted)
            patcher.start()
            self.addCleanup(patcher.stop)
            # Within one allowance (100 ms) ten calls take one round trip,
            # charged 10 at once; the quota 3 caps what one charge takes.
            got = [c.get_lease("u", "d", "o", 100) for _ in range(10)]
            self.assertEqual(got, [True] * 10)
            self.assertEqual(sent, [10])
            del sent[:]
            got = [c.get_lease("u", "d", "small", 3) for _ in range(5)]
            self.assertEqual(got[:3], [True] * 3)
            self.assertFalse(got[3])
            self.assertEqual(sent[0], 3)

    def test_refusal_takes_what_is_left(self) -> None:
        with m.Client(self.host.server) as exact, \
                m.Client(self.host.server, max_lease=10) as batch:
            for _ in range(6):
                self.assertTrue(exact.get_lease("u", "d", "left", 10))
            # A batch of 10 does not fit; the 4 left are taken instead.
            self.assertTrue(batch.get_lease("u", "d", "left", 10))
            self.assertFalse(exact.get_lease("u", "d", "left", 10))

    def test_bound_with_several_clients(self) -> None:
        """K clients of max_lease B on one identity: in any 0.9 s at most
        quota + K*(B-1) calls are admitted (doc/clients.md)."""
        quota, k, b = 40, 4, 10
        clients = [m.Client(self.host.server, max_lease=b) for _ in range(k)]
        admitted: list[float] = []
        calls = 0
        try:
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                for c in clients:
                    calls += 1
                    if c.get_lease("guest", "X", "insert", quota):
                        admitted.append(time.monotonic())
        finally:
            for c in clients:
                c.close()
        self.assertGreater(len(admitted), quota)
        self.assertGreater(calls, len(admitted))   # some were refused
        bound = quota + k * (b - 1)
        worst = 0
        j = 0
        for i, t in enumerate(admitted):
            while admitted[j] <= t - 0.9:
                j += 1
            worst = max(worst, i - j + 1)
        self.assertLessEqual(worst, bound)

    def test_async(self) -> None:
        async def run() -> list[bool]:
            async with m.AsyncClient(self.host.server, max_lease=2) as c:
                c.allowances.clock = lambda: 0.0
                return [await c.get_lease("guest", "X", "insert", 3)
                        for _ in range(5)]
        got = asyncio.run(run())
        self.assertEqual(got[:3], [True] * 3)
        self.assertFalse(got[4])


class TestDown(unittest.TestCase):
    def test_down_server(self) -> None:
        c = m.quota.init("127.0.0.1:%d" % free_port(), timeout=2)
        with self.assertRaises(m.ServerDown):
            c.get_lease("guest", "X", "insert", 5)
        c.close()

    @unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")
    def test_remap(self) -> None:
        host = Host()
        try:
            servers = "%s,127.0.0.1:%d" % (host.server, free_port())
            c = m.quota.init(servers, remap_rate_limits=True, timeout=2)
            for i in range(20):
                self.assertTrue(c.get_lease("u%d" % i, "X", "insert", 5))
            c.close()
        finally:
            host.stop()


if __name__ == "__main__":
    unittest.main()
