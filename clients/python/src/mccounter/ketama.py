"""Server lists and ketama consistent hashing, compatible with
libmemcached's MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, so that a name maps to
the same server from this package, the C client and libmemcached.

Also the failure policy's bookkeeping (which servers are down, and where
a movable name goes then), shared by the blocking and asyncio clients.
"""
from __future__ import annotations

import bisect
import hashlib
import math
import struct
import time
from typing import Iterator, Sequence, Union

DEFAULT_PORT = 11211
_F32 = struct.Struct("<f")

ServerSpec = Union[str, Sequence[Union[tuple[str, int], tuple[str, int, int]]]]


def _f32(x: float) -> float:
    """Rounds x to single precision, as libmemcached's float arithmetic."""
    return _F32.unpack(_F32.pack(x))[0]


def parse_servers(servers: ServerSpec) -> list[tuple[str, int, int]]:
    """Returns [(host, port, weight)] from "h:p[:w],..." or a list of
    (host, port[, weight]); refuses empty lists and bad ports or weights."""
    out: list[tuple[str, int, int]] = []
    if isinstance(servers, str):
        items: list = []
        for part in servers.split(","):
            part = part.strip()
            if not part:
                continue
            f = part.split(":")
            if len(f) not in (2, 3) or not f[0]:
                raise ValueError("server %r is not host:port[:weight]" % part)
            try:
                nums = [int(x) for x in f[1:]]
            except ValueError:
                raise ValueError("server %r is not host:port[:weight]"
                                 % part) from None
            items.append((f[0], *nums))
    else:
        items = list(servers)
    for it in items:
        if not isinstance(it, (tuple, list)) or len(it) not in (2, 3):
            raise ValueError("server %r is not (host, port[, weight])"
                             % (it,))
        host, port = it[0], it[1]
        weight = it[2] if len(it) == 3 else 1
        if not isinstance(host, str) or not host:
            raise ValueError("server host %r is not a host name" % (host,))
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError("server %s port %r is not 1..65535"
                             % (host, port))
        if not isinstance(weight, int) or not 1 <= weight <= 0xFFFFFFFF:
            raise ValueError("server %s:%d weight %r is not 1 or more"
                             % (host, port, weight))
        out.append((host, port, weight))
    if not out:
        raise ValueError("the server list is empty")
    seen = set()
    for host, port, _ in out:
        if (host, port) in seen:
            raise ValueError("server %s:%d is listed twice" % (host, port))
        seen.add((host, port))
    return out


def key_hash(name: bytes) -> int:
    """libhashkit's MD5 key hash: the digest's first 4 bytes, little-endian."""
    return struct.unpack_from("<I", hashlib.md5(name).digest())[0]


class Continuum:
    """The ketama ring of a weighted server list."""

    def __init__(self, servers: Sequence[tuple[str, int, int]]) -> None:
        self.servers = list(servers)
        n = len(self.servers)
        total = sum(w for _, _, w in self.servers)
        points: list[tuple[int, int]] = []
        for index, (host, port, weight) in enumerate(self.servers):
            # libmemcached computes the share and the product in single
            # precision; doing it in double would move a point count where
            # the product lands near a whole number.
            pct = _f32(weight / total)
            per = _f32(_f32(pct * 40) * _f32(float(n)))
            count = int(math.floor(_f32(per + 0.0000000001))) * 4
            for i in range(count // 4):
                if port == DEFAULT_PORT:
                    label = "%s-%d" % (host, i)
                else:
                    label = "%s:%d-%d" % (host, port, i)
                d = hashlib.md5(label.encode()).digest()
                for v in struct.unpack("<4I", d):
                    points.append((v, index))
        points.sort()
        self._values = [v for v, _ in points]
        self._owners = [i for _, i in points]

    def __len__(self) -> int:
        return len(self._values)

    def _start(self, name: bytes) -> int:
        i = bisect.bisect_left(self._values, key_hash(name))
        return 0 if i == len(self._values) else i

    def index(self, name: bytes) -> int:
        """The index of the server a name maps to."""
        if len(self.servers) == 1:
            return 0
        return self._owners[self._start(name)]

    def walk(self, name: bytes) -> Iterator[int]:
        """The servers in the order a name meets them on the ring: its own
        first, then each other one once."""
        if len(self.servers) == 1:
            yield 0
            return
        seen: set[int] = set()
        start, n = self._start(name), len(self._owners)
        for k in range(n):
            o = self._owners[(start + k) % n]
            if o not in seen:
                seen.add(o)
                yield o
                if len(seen) == len(self.servers):
                    return


class Router:
    """Maps names to servers and applies the failure policy: a name whose
    server is down fails, unless it is movable (a rate limit) and remapping
    is on; then it goes to the next live server on the ring. A server
    marked down is tried again retry_ms later."""

    def __init__(self, servers: ServerSpec, remap_rate_limits: bool = False,
                 retry_ms: int = 1000) -> None:
        self.servers = parse_servers(servers)
        self.labels = ["%s:%d" % (h, p) for h, p, _ in self.servers]
        self.ring = Continuum(self.servers)
        self.remap = remap_rate_limits
        self.retry_s = retry_ms / 1000.0
        self._down_until = [0.0] * len(self.servers)

    def server_for(self, name: bytes) -> str:
        """The "host:port" a name maps to (whatever is down)."""
        return self.labels[self.ring.index(name)]

    def index_of(self, server: str) -> int:
        """The index of a "host:port" of the list; ValueError otherwise."""
        try:
            return self.labels.index(server)
        except ValueError:
            raise ValueError("server %r is not in the server list"
                             % (server,)) from None

    def node(self, server: Union[str, None]) -> int:
        """The index of a node-wide request's server: the one named, or the
        only one; several servers need a name."""
        if server is not None:
            return self.index_of(server)
        if len(self.servers) != 1:
            raise ValueError("server= is required with several servers")
        return 0

    def is_down(self, index: int) -> bool:
        """True while a server marked down waits for its retry time."""
        return time.monotonic() < self._down_until[index]

    def mark_down(self, index: int) -> None:
        """Records that a server failed; it is tried again after retry_ms."""
        self._down_until[index] = time.monotonic() + self.retry_s

    def mark_up(self, index: int) -> None:
        """Records that a server answered."""
        self._down_until[index] = 0.0

    def candidates(self, name: bytes, movable: bool) -> list[int]:
        """The servers to try for a name, in order: only its own, or with
        remapping on and a movable name, its own and then the next ones."""
        if movable and self.remap:
            return list(self.ring.walk(name))
        return [self.ring.index(name)]
