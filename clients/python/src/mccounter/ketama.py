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
    value: float = _F32.unpack(_F32.pack(x))[0]
    return value


#: The longest host name or address a server list may hold (the C
#: library's mcc_server_spec keeps 255 bytes and its terminator).
HOST_MAX = 255
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz"
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
_DIGITS = frozenset("0123456789")


def _number(text: str, maximum: int) -> Union[int, None]:
    """text as a decimal 1..maximum, with no sign, space or other junk
    (which int() would take); None otherwise."""
    if not 0 < len(text) <= 10 or not set(text) <= _DIGITS:
        return None
    v = int(text)
    return v if 1 <= v <= maximum else None


def _check_host(host: str, item: str, bracketed: bool) -> None:
    """Refuses an empty or too long host, or one with a byte no host name
    or address has (':' and a zone's '%' only in an IPv6 address)."""
    if not host:
        raise ValueError("server %r: empty host" % item)
    if len(host.encode("utf-8", "surrogatepass")) > HOST_MAX:
        raise ValueError("server %r: host longer than %d bytes"
                         % (item, HOST_MAX))
    for ch in host:
        if ch not in _HOST_CHARS and not (bracketed and ch in ":%"):
            raise ValueError("server %r: bad character %r in host"
                             % (item, ch))


def _parse_item(item: str) -> tuple[str, int, int]:
    """One "HOST:PORT[:WEIGHT]" or "[IPV6]:PORT[:WEIGHT]", by the C
    library's grammar (client/servers.c), so that both read a list the
    same way and so place names on the same servers."""
    if item.startswith("["):
        close = item.find("]")
        if close < 0:
            raise ValueError("server %r: no ']' after the IPv6 address"
                             % item)
        host, rest = item[1:close], item[close + 1:]
        if not rest.startswith(":"):
            raise ValueError("server %r: expected [ADDRESS]:PORT" % item)
        if ":" not in host:
            raise ValueError("server %r: brackets are only for IPv6 "
                             "addresses" % item)
        _check_host(host, item, True)
        fields = rest[1:].split(":", 1)
    else:
        if item.count(":") > 2:
            raise ValueError("server %r: too many ':' (write an IPv6 "
                             "address as [ADDRESS])" % item)
        if ":" not in item:
            raise ValueError("server %r: no port (expected "
                             "HOST:PORT[:WEIGHT])" % item)
        host, rest = item.split(":", 1)
        _check_host(host, item, False)
        fields = rest.split(":", 1)
    port = _number(fields[0], 65535)
    if port is None:
        raise ValueError("server %r: port must be 1 to 65535" % item)
    weight = 1
    if len(fields) == 2:
        w = _number(fields[1], 0xFFFFFFFF)
        if w is None:
            raise ValueError("server %r: weight must be 1 to 4294967295"
                             % item)
        weight = w
    return host, port, weight


def server_label(host: str, port: int) -> str:
    """"HOST:PORT", an IPv6 address in brackets, as the C library prints
    a server (mcc_server_format): the form server= and server_for use."""
    return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)


def parse_servers(servers: ServerSpec) -> list[tuple[str, int, int]]:
    """Returns [(host, port, weight)] from "h:p[:w],..." (an IPv6 address
    as "[addr]:p[:w]") or a list of (host, port[, weight]); refuses empty
    lists and items, bad hosts, ports and weights and a server listed
    twice, with a ValueError naming the item."""
    out: list[tuple[str, int, int]] = []
    if isinstance(servers, str):
        if not servers:
            raise ValueError("empty server list")
        for part in servers.split(","):
            if not part:
                raise ValueError("empty item in server list %r" % servers)
            out.append(_parse_item(part))
    else:
        for it in servers:
            if not isinstance(it, (tuple, list)) or len(it) not in (2, 3):
                raise ValueError("server %r is not (host, port[, weight])"
                                 % (it,))
            host, port = it[0], it[1]
            weight = it[2] if len(it) == 3 else 1  # type: ignore[misc]
            if not isinstance(host, str):
                raise ValueError("server %r: host is not a string" % (it,))
            # An address given apart from its port needs no brackets.
            _check_host(host, repr(it), ":" in host)
            if isinstance(port, bool) or not isinstance(port, int) or \
                    not 1 <= port <= 65535:
                raise ValueError("server %r: port must be 1 to 65535"
                                 % (it,))
            if isinstance(weight, bool) or not isinstance(weight, int) or \
                    not 1 <= weight <= 0xFFFFFFFF:
                raise ValueError("server %r: weight must be 1 to 4294967295"
                                 % (it,))
            out.append((host, port, weight))
        if not out:
            raise ValueError("empty server list")
    seen = set()
    for host, port, _ in out:
        if (host, port) in seen:
            raise ValueError("server %r is listed twice"
                             % server_label(host, port))
        seen.add((host, port))
    return out


def key_hash(name: bytes) -> int:
    """libhashkit's MD5 key hash: the digest's first 4 bytes, little-endian."""
    value: int = struct.unpack_from("<I", hashlib.md5(name).digest())[0]
    return value


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
    marked down is tried again retry_after seconds later."""

    def __init__(self, servers: ServerSpec, remap_rate_limits: bool = False,
                 retry_after: float = 1.0) -> None:
        self.servers = parse_servers(servers)
        self.labels = [server_label(h, p) for h, p, _ in self.servers]
        self.ring = Continuum(self.servers)
        self.remap = remap_rate_limits
        if isinstance(retry_after, bool) or \
                not isinstance(retry_after, (int, float)) or \
                not 0 <= retry_after < float("inf"):
            raise ValueError("retry_after must be a number of seconds "
                             ">= 0, not %r" % (retry_after,))
        self.retry_s = float(retry_after)
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
        """Records that a server failed; it is tried again after retry_after."""
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
