"""Ketama tests: the ring against libmemcached itself (through ctypes, on
100,000 names and several weighted server lists) and against the C
library's check program named by KETAMA_MAP, when either is there."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import unittest

from mccounter.ketama import Router, key_hash, parse_servers

NAMES = ["name-%d" % i for i in range(100000)]

# The server lists both checks use: 1, 2, 3, 5 and 10 servers, weighted,
# with the default port (whose point labels leave the port out) among them.
# The five weights 13, 11, 16, 4, 6 give three servers fewer points when
# their share is computed in single precision, as libmemcached does, than
# in double precision: a check that the ring does it the same way.
LISTS = [
    "127.0.0.1:11215",
    "10.0.0.1:11215:1,10.0.0.2:11216:1",
    "alpha:11211:3,beta:11212:1,gamma:22122:2",
    "h1:7001:13,h2:7002:11,h3:7003:16,h4:11211:4,h5:7005:6",
    ",".join("10.1.0.%d:%d:%d" % (i, 11211 + (i % 3), 1 + (i * 7) % 5)
             for i in range(1, 11)),
]


def _libmemcached() -> "ctypes.CDLL | None":
    for cand in (ctypes.util.find_library("memcached"),
                 "libmemcached.so.11", "libmemcached.so"):
        if not cand:
            continue
        try:
            return ctypes.CDLL(cand)
        except OSError:
            continue
    return None


MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED = 16


class TestParse(unittest.TestCase):
    """Server list parsing and its refusals."""

    def test_forms(self) -> None:
        self.assertEqual(parse_servers("a:1,b:2:5"),
                         [("a", 1, 1), ("b", 2, 5)])
        self.assertEqual(parse_servers([("a", 1), ("b", 2, 5)]),
                         [("a", 1, 1), ("b", 2, 5)])

    def test_refusals(self) -> None:
        for bad in ("", "a", "a:x", "a:0", "a:70000", "a:1:0", ":1",
                    "a:1,a:1", "a:1:2:3"):
            with self.assertRaises(ValueError, msg=bad):
                parse_servers(bad)

    def test_key_hash(self) -> None:
        # md5("") = d41d8cd9...: the first four bytes little-endian.
        self.assertEqual(key_hash(b""), 0xD98C1DD4)

    def test_walk_visits_each_once(self) -> None:
        r = Router(LISTS[4])
        for name in (b"a", b"b", b"c"):
            order = list(r.ring.walk(name))
            self.assertEqual(sorted(order), list(range(10)))
            self.assertEqual(order[0], r.ring.index(name))


class TestLibmemcached(unittest.TestCase):
    """The ring gives every name the server libmemcached gives it."""

    def setUp(self) -> None:
        self.lib = _libmemcached()
        if self.lib is None:
            self.skipTest("libmemcached.so not found")
        lib = self.lib
        lib.memcached_create.restype = ctypes.c_void_p
        lib.memcached_create.argtypes = [ctypes.c_void_p]
        lib.memcached_free.argtypes = [ctypes.c_void_p]
        lib.memcached_server_add_with_weight.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint16,
            ctypes.c_uint32]
        lib.memcached_behavior_set.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                               ctypes.c_uint64]
        lib.memcached_generate_hash.restype = ctypes.c_uint32
        lib.memcached_generate_hash.argtypes = [ctypes.c_void_p,
                                                ctypes.c_char_p,
                                                ctypes.c_size_t]
        lib.memcached_server_instance_by_position.restype = ctypes.c_void_p
        lib.memcached_server_instance_by_position.argtypes = [
            ctypes.c_void_p, ctypes.c_uint32]
        lib.memcached_server_name.restype = ctypes.c_char_p
        lib.memcached_server_name.argtypes = [ctypes.c_void_p]
        lib.memcached_server_port.restype = ctypes.c_uint16
        lib.memcached_server_port.argtypes = [ctypes.c_void_p]

    def _compare(self, spec: str) -> None:
        lib = self.lib
        servers = parse_servers(spec)
        mc = lib.memcached_create(None)
        self.assertTrue(mc)
        try:
            for host, port, weight in servers:
                rc = lib.memcached_server_add_with_weight(
                    mc, host.encode(), port, weight)
                self.assertEqual(rc, 0, "server_add %s" % host)
            rc = lib.memcached_behavior_set(
                mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1)
            self.assertEqual(rc, 0)
            labels = []
            for i in range(len(servers)):
                inst = lib.memcached_server_instance_by_position(mc, i)
                labels.append("%s:%d" % (
                    lib.memcached_server_name(inst).decode(),
                    lib.memcached_server_port(inst)))
            router = Router(spec)
            wrong = 0
            first = None
            for name in NAMES:
                b = name.encode()
                theirs = labels[lib.memcached_generate_hash(mc, b, len(b))]
                ours = router.server_for(b)
                if theirs != ours:
                    wrong += 1
                    first = first or (name, theirs, ours)
            self.assertEqual(wrong, 0, "%s: %d names differ, first %r"
                             % (spec, wrong, first))
        finally:
            lib.memcached_free(mc)

    def test_one(self) -> None:
        self._compare(LISTS[0])

    def test_two(self) -> None:
        self._compare(LISTS[1])

    def test_three(self) -> None:
        self._compare(LISTS[2])

    def test_five_single_precision(self) -> None:
        self._compare(LISTS[3])

    def test_ten(self) -> None:
        self._compare(LISTS[4])


class TestKetamaMap(unittest.TestCase):
    """The ring against the C library's program (KETAMA_MAP LIST reads
    names on stdin and prints HOST:PORT per line)."""

    def test_same_servers(self) -> None:
        prog = os.environ.get("KETAMA_MAP")
        if not prog or not os.access(prog, os.X_OK):
            self.skipTest("KETAMA_MAP not set to the C check program")
        data = ("\n".join(NAMES) + "\n").encode()
        for spec in LISTS:
            out = subprocess.run([prog, spec], input=data,
                                 capture_output=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr.decode())
            lines = out.stdout.decode().splitlines()
            self.assertEqual(len(lines), len(NAMES), spec)
            router = Router(spec)
            diff = [n for n, got in zip(NAMES, lines)
                    if got != router.server_for(n.encode())]
            self.assertEqual(diff, [], "%s: %d names differ" % (spec,
                                                                len(diff)))


if __name__ == "__main__":
    unittest.main()
