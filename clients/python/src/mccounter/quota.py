"""get_lease, the quota manager's call of Tarantool's quotas module, over
the window check: (user, domain, op) make one name (doc/clients.md,
"get_lease", the same bytes as the C library's mcc_get_lease_name),
charged in a 1 s window of 10 slots on the server ketama picks for it.
With max_lease B > 1 the client pre-charges B calls at a time and answers
the next B-1 of that name itself for 100 ms, from a table of fixed size
so that memory stays bounded however many names are used."""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Union

from . import ops
from . import protocol as p
from .ops import AsyncRunner, SyncRunner
from .protocol import Request

Field = Union[str, bytes]
PREFIX = b"getlease:"
#: Entries of the allowance table, direct-mapped by a hash of the name.
ENTRIES = 64
#: How long a pre-charged allowance may be spent (one slot of the window).
ALLOWANCE_S = 0.1
WINDOW_NS = 1_000_000_000
SLOTS = 10


def _field(value: Field, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be str or bytes, not %s"
                    % (what, type(value).__name__))


def lease_name(user: Field, domain: Field, op: Field) -> bytes:
    """The name of (user, domain, op): b"getlease:", then len(user) b":"
    user, len(domain) b":" domain (byte lengths in decimal), then op.
    Raises ValueError when it is longer than the protocol's 65535 bytes."""
    u = _field(user, "user")
    d = _field(domain, "domain")
    o = _field(op, "op")
    name = b"%s%d:%s%d:%s%s" % (PREFIX, len(u), u, len(d), d, o)
    if len(name) > p.NAME_MAX:
        raise ValueError("get_lease name of user %r, domain %r is %d bytes,"
                         " more than %d" % (u[:32], d[:32], len(name),
                                            p.NAME_MAX))
    return name


def _entry_of(name: bytes) -> int:
    """FNV-1a, as the C library, to spread names over the table."""
    h = 14695981039346656037
    for b in name:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h % ENTRIES


class Allowances:
    """The local allowances of get_lease (one per table entry)."""

    def __init__(self, max_lease: int) -> None:
        if isinstance(max_lease, bool) or not isinstance(max_lease, int) \
                or max_lease < 1:
            raise ValueError("max_lease must be an integer >= 1, not %r"
                             % (max_lease,))
        self.max_lease = max_lease
        #: The clock of the allowances' 100 ms (tests may replace it).
        self.clock: Callable[[], float] = time.monotonic
        # name, calls left, monotonic end
        self._e: list[Optional[tuple[bytes, int, float]]] = [None] * ENTRIES

    def take(self, name: bytes) -> bool:
        """Spends one local call of name's allowance if it has one."""
        if self.max_lease == 1:
            return False
        i = _entry_of(name)
        e = self._e[i]
        if e is None or e[0] != name or e[1] <= 0 \
                or self.clock() >= e[2]:
            return False
        self._e[i] = (name, e[1] - 1, e[2])
        return True

    def cost(self, quota: int) -> int:
        """What a call without an allowance charges."""
        return min(self.max_lease, quota) if quota > 0 else 1

    def record(self, name: bytes, allowed: bool, cost: int,
               sent: float) -> None:
        """Keeps what a charge of cost sent at `sent` gives (a refusal
        ends the allowance)."""
        if self.max_lease > 1:
            self._e[_entry_of(name)] = (name, cost - 1 if allowed else 0,
                                        sent + ALLOWANCE_S)


def _check_quota(quota: int) -> None:
    if isinstance(quota, bool) or not isinstance(quota, int) \
            or not 0 <= quota <= 0xFFFFFFFF:
        raise ValueError("quota must be an integer in 0..4294967295, not %r"
                         % (quota,))


def _charge(name: bytes, quota: int, cost: int) -> Request[p.CheckAnswer]:
    """The window check that charges cost to name's 1 s window of quota."""
    return ops.window_check(name, quota, cost, WINDOW_NS / 1e9, SLOTS)


class QuotaMixin(SyncRunner):
    """get_lease for the blocking Client (its _run and allowances)."""
    allowances: Allowances

    def get_lease(self, user: Field, domain: Field, op: Field,
                  quota: int) -> bool:
        """True when the action (user, domain, op) happened at most quota
        times in the last second (it is counted), False otherwise."""
        _check_quota(quota)
        name = lease_name(user, domain, op)
        if self.allowances.take(name):
            return True
        cost = self.allowances.cost(quota)
        sent = self.allowances.clock()
        a = self._run(_charge(name, quota, cost))
        if not a.allowed and a.state == p.CheckState.LIMITED \
                and 0 < a.remaining < cost:
            cost = a.remaining
            sent = self.allowances.clock()
            a = self._run(_charge(name, quota, cost))
        self.allowances.record(name, a.allowed, cost, sent)
        return a.allowed


class AsyncQuotaMixin(AsyncRunner):
    """get_lease for the AsyncClient (a coroutine)."""
    allowances: Allowances

    async def get_lease(self, user: Field, domain: Field, op: Field,
                        quota: int) -> bool:
        """As Client.get_lease."""
        _check_quota(quota)
        name = lease_name(user, domain, op)
        if self.allowances.take(name):
            return True
        cost = self.allowances.cost(quota)
        sent = self.allowances.clock()
        a = await self._run(_charge(name, quota, cost))
        if not a.allowed and a.state == p.CheckState.LIMITED \
                and 0 < a.remaining < cost:
            cost = a.remaining
            sent = self.allowances.clock()
            a = await self._run(_charge(name, quota, cost))
        self.allowances.record(name, a.allowed, cost, sent)
        return a.allowed


def init(servers: Any, max_lease: int = 1, **kwargs: Any) -> Any:
    """The seed's init(): a blocking Client of the servers ("host:port
    [:weight],..." or a list) with batch size max_lease; other keyword
    arguments go to Client (remap_rate_limits=True moves a down server's
    names to the next live one)."""
    from .client import Client
    return Client(servers, max_lease=max_lease, **kwargs)
