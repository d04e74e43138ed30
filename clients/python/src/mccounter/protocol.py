"""The counter protocol's bytes: constants, request encoders, the packet
decoder and the typed results of every opcode (doc/protocol.md).

This module does no I/O, so the blocking and the asyncio clients share it,
and the tests can check it against the hex examples of the protocol page.
"""
from __future__ import annotations

import enum
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, TypeVar, Union

MAGIC_REQUEST = 0x90
MAGIC_RESPONSE = 0x91
MAGIC_EVENT = 0x92
HEADER_SIZE = 12
NAME_MAX = 65535
#: The largest legal body: Gcra_check's fixed part and the longest name.
BODY_MAX = 26 + NAME_MAX
#: The largest answer or event (header and body) a client accepts, as the
#: C library bounds its read buffer: a server (or anything else on the
#: port) declaring a bigger body would otherwise make us buffer up to 4 GiB.
RESPONSE_MAX = 128 * 1024
#: Auth_user's fixed part (flags, zero, two lengths) and its one flag:
#: answer requests over the tenant's share Throttled instead of waiting.
AUTH_USER_FIXED = 6
AUTH_NONBLOCKING = 0x01
#: A Throttled answer's fixed part: the u64 retry hint, the reason byte.
THROTTLED_FIXED = 9
#: The most items one Multi_check may carry.
MULTI_MAX = 16
#: Wait_acquire's maximum (as 0), wait or lease: "use the group's setting".
GROUP_DEFAULT = 0xFFFFFFFF
#: A hard limit (and a throttle answer's remaining) that is no limit.
UNLIMITED = 0xFFFFFFFF
#: A check's retry_after_ns when the call can never be allowed.
RETRY_NEVER = 0xFFFFFFFFFFFFFFFF
U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF

_HEADER = struct.Struct(">BBBBII")


class Op(enum.IntEnum):
    """Opcodes of the protocol and of this server's extensions."""
    NOOP = 0x00
    GET = 0x01
    ACQUIRE = 0x02
    RELEASE = 0x03
    STATS = 0x10
    DUMP = 0x11
    WAIT_ACQUIRE = 0x20
    RENEW = 0x21
    WAIT_RELEASE = 0x22
    QUEUES = 0x23
    TTL_INSERT = 0x30
    TTL_QUERY = 0x31
    TTL_UPDATE = 0x32
    TTL_PURGE = 0x33
    WINDOW_CHECK = 0x34
    GCRA_CHECK = 0x35
    MULTI_CHECK = 0x36
    AUTH = 0x40
    THROTTLE = 0x41
    TENANT_SHOW = 0x42
    TENANT_LIST = 0x43
    NODE_SHOW = 0x44
    TENANT_SET = 0x45
    TENANT_REMOVE = 0x46
    NODE_SET = 0x47
    UNTHROTTLE = 0x48
    RELOAD = 0x49
    AUTH_USER = 0x4a
    TENANT_SET_JSON = 0x2a
    NODE_SET_JSON = 0x2c
    LEASE_LIST = 0x24
    BUSIEST = 0x37


class Status(enum.IntEnum):
    """Response statuses (byte 2 of an answer's header)."""
    OK = 0x00
    NOT_FOUND = 0x01
    INVALID = 0x04
    RESOURCE_NOT_AVAILABLE = 0x21
    NOT_ACQUIRED = 0x22
    EXCEEDS_MAXIMUM = 0x23
    ALREADY_ACTIVE = 0x24
    UNKNOWN_GROUP = 0x25
    TOO_MANY_WAITS = 0x26
    LEASE_EXPIRED = 0x27
    EXISTS = 0x28
    BELOW_ZERO = 0x29
    NOT_PERMITTED = 0x2A
    AUTH_FAILED = 0x2B
    OVER_CAPACITY = 0x2C
    THROTTLED = 0x2D
    UNKNOWN_COMMAND = 0x81
    OUT_OF_MEMORY = 0x82


STATUS_TEXT = {
    Status.NOT_FOUND: "Not found",
    Status.INVALID: "Invalid arguments",
    Status.RESOURCE_NOT_AVAILABLE: "Resource not available",
    Status.NOT_ACQUIRED: "Not acquired",
    Status.EXCEEDS_MAXIMUM: "Exceeds maximum",
    Status.ALREADY_ACTIVE: "Already active",
    Status.UNKNOWN_GROUP: "Unknown group",
    Status.TOO_MANY_WAITS: "Too many waits",
    Status.LEASE_EXPIRED: "Lease expired",
    Status.EXISTS: "Exists",
    Status.BELOW_ZERO: "Below zero",
    Status.NOT_PERMITTED: "Not permitted",
    Status.AUTH_FAILED: "Auth failed",
    Status.OVER_CAPACITY: "Over capacity",
    Status.THROTTLED: "Throttled",
    Status.UNKNOWN_COMMAND: "Unknown command",
    Status.OUT_OF_MEMORY: "Out of memory",
}


class EventKind(enum.IntEnum):
    """Event codes: the opcode byte of a packet with magic 0x92."""
    GRANTED = 0x01
    TIMED_OUT = 0x02
    LEASE_EXPIRED = 0x03
    SHUTDOWN = 0x04


class LimitKind(enum.IntEnum):
    """The kinds of rate limit a Busiest record names."""
    TTL = 0
    WINDOW = 1
    GCRA = 2


class Unit(enum.IntEnum):
    """Time units of the TTL opcodes."""
    NS = 0
    US = 1
    MS = 2
    S = 3
    MIN = 4
    H = 5


class TtlAttribute(enum.IntEnum):
    """What a Ttl_update changes."""
    QUOTA = 0
    TTL = 1


class TtlChange(enum.IntEnum):
    """How a Ttl_update changes it."""
    PATCH = 0
    INCREASE = 1
    DECREASE = 2


class CheckState(enum.IntEnum):
    """A check answer's state."""
    ALLOWED = 0
    LIMITED = 1
    NEVER = 2


class ThrottleReason(enum.IntEnum):
    """Why a Throttle charge was throttled."""
    NONE = 0
    RESERVE = 1
    POOL_EMPTY = 2
    HARD_LIMIT = 3


class CounterError(Exception):
    """Base of the errors this package raises (besides ValueError)."""


class StatusError(CounterError):
    """The server answered a request with a status other than 0."""

    def __init__(self, status: int, text: str, opcode: int) -> None:
        self.status = status
        self.text = text
        self.opcode = opcode
        try:
            opname = Op(opcode).name.lower()
        except ValueError:
            opname = "0x%02x" % opcode
        super().__init__("%s: status 0x%02x %s" % (opname, status, text))


class NotFound(StatusError):
    """0x01: no counter (or TTL counter, or tenant) of that name."""


class Busy(StatusError):
    """0x21 Resource not available (the resources do not fit now, or
    others wait first) or 0x26 Too many waits: trying later may work."""


class NotAcquired(StatusError):
    """0x22: nothing of this connection's is held (or active) on the
    name."""


class ExceedsMaximum(StatusError):
    """0x23: more resources than the maximum: it can never be granted."""


class UnknownGroup(StatusError):
    """0x25: a group's setting asked for on a name that is not a group."""


class LeaseExpired(StatusError):
    """0x27: the grant's lease ran out before this Renew or release."""


class Exists(StatusError):
    """0x28: a TTL counter of that name is alive."""


class NotPermitted(StatusError):
    """0x2a: a privileged request on a connection not authenticated (or
    a server without an admin secret)."""


class AuthFailed(NotPermitted):
    """0x2b: Auth with a wrong secret."""


class OverCapacity(StatusError):
    """0x2c: the reserves would add up to more than the capacity."""


class Throttled(StatusError):
    """0x2d: the connection's tenant could not pay for the request this
    second (a connection logged in with auth_user(nonblocking=True)); it
    was not run. retry_after: seconds until the server's next second,
    when a retry can pass; reason: a ThrottleReason."""

    def __init__(self, status: int, text: str, opcode: int,
                 retry_after: float = 0.0, reason: int = 0) -> None:
        super().__init__(status, text, opcode)
        self.retry_after = retry_after
        self.reason = reason


#: The StatusError subclass of each status users branch on; the others
#: raise StatusError itself.
STATUS_ERRORS: dict[int, type[StatusError]] = {
    0x01: NotFound, 0x21: Busy, 0x26: Busy, 0x22: NotAcquired,
    0x23: ExceedsMaximum, 0x25: UnknownGroup, 0x27: LeaseExpired,
    0x28: Exists, 0x2A: NotPermitted, 0x2B: AuthFailed, 0x2C: OverCapacity,
    0x2D: Throttled,
}


def status_error(status: int, text: str, opcode: int) -> StatusError:
    """The exception for a non-zero status: its subclass, if it has one."""
    return STATUS_ERRORS.get(status, StatusError)(status, text, opcode)


class ProtocolError(CounterError):
    """The server sent bytes that are not a valid answer."""


class MemcachePortError(ProtocolError):
    """The port answered in memcache's text protocol: it is a memcache
    port (such as 11211), not the counter port."""

    def __init__(self, server: str = "") -> None:
        self.server = server
        super().__init__("%sthis is a memcache port, not the counter port"
                         % (server + ": " if server else ""))


# The opaque of a connection's first request: its last two bytes are CR LF,
# so a memcache text port, reading the request as a command line, answers
# "ERROR\r\n" at once instead of waiting for a line end.
TEXT_PROBE_OPAQUE = 0x0D0A


def is_text(buf: Union[bytes, bytearray, memoryview]) -> bool:
    """True when buf starts with a line of a text protocol: an upper-case
    letter, then printable ASCII and CR up to the first LF (or 32 bytes)."""
    if not buf or not 0x41 <= buf[0] <= 0x5A:
        return False
    for b in bytes(buf[1:32]):
        if b == 0x0A:
            return True
        if not (0x20 <= b <= 0x7E or b == 0x0D):
            return False
    return True


class ServerDown(CounterError, ConnectionError):
    """The server a name maps to cannot be reached (or was lost)."""

    def __init__(self, server: str, why: str) -> None:
        self.server = server
        super().__init__("server %s is down: %s" % (server, why))


class WaitTimedOut(CounterError):
    """A queued Wait_acquire was dropped by the server after its wait_ms."""


# ---------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Packet:
    """One decoded packet: an answer (magic 0x91) or an event (0x92)."""
    magic: int
    opcode: int
    status: int
    opaque: int
    body: bytes


@dataclass(frozen=True)
class WaitAnswer:
    """Wait_acquire's answer: granted now, or queued at a position."""
    granted: bool
    position: int
    lease_id: int
    consumption: int


@dataclass(frozen=True)
class Event:
    """A packet the server sent on its own about a Wait_acquire request."""
    kind: int
    opaque: int
    lease_id: int
    value: int
    name: bytes
    server: str = ""

    @property
    def kind_name(self) -> str:
        """Printable event kind ("granted", ...; "0xNN" when unknown)."""
        try:
            return EventKind(self.kind).name.lower()
        except ValueError:
            return "0x%02x" % self.kind


@dataclass(frozen=True)
class DumpRecord:
    """One counter of a Dump: consumption and peak in the current window."""
    name: bytes
    current: int
    maximum: int
    server: str = ""


@dataclass(frozen=True)
class QueueRecord:
    """One counter with waiters, from Queues."""
    name: bytes
    consumption: int
    length: int
    server: str = ""


@dataclass(frozen=True)
class LeaseRecord:
    """One lease from Lease_list: the counter's name, the seconds left
    until it expires (whole ms), its lease id and the resources it
    holds."""
    name: bytes
    left: float
    lease_id: int
    resources: int
    server: str = ""


@dataclass(frozen=True)
class BusyRecord:
    """One of the busiest rate-limit names, from Busiest: its kind and its
    checks in the last whole second."""
    name: bytes
    kind: LimitKind
    checks: int
    server: str = ""


@dataclass(frozen=True)
class TtlView:
    """A TTL counter: its quota and time left (rounded up) in its unit."""
    quota: int
    ttl: int
    unit: Unit


@dataclass(frozen=True)
class CheckAnswer:
    """The answer of a Window_check, Gcra_check or Multi_check item."""
    state: CheckState
    limit: int
    remaining: int
    used: int
    retry_after_ns: int
    reset_after_ns: int

    @property
    def allowed(self) -> bool:
        """True when the call was allowed (and charged unless peeked)."""
        return self.state == CheckState.ALLOWED

    @property
    def retry_after(self) -> float:
        """retry_after_ns in seconds (inf: never)."""
        if self.retry_after_ns == RETRY_NEVER:
            return float("inf")
        return self.retry_after_ns / 1e9

    @property
    def reset_after(self) -> float:
        """reset_after_ns in seconds."""
        return self.reset_after_ns / 1e9


@dataclass(frozen=True)
class MultiAnswer:
    """Multi_check's answer: all allowed and charged, or none charged."""
    allowed: bool
    items: list[CheckAnswer]


@dataclass(frozen=True)
class ThrottleAnswer:
    """A Throttle charge's answer."""
    allowed: bool
    reason: ThrottleReason
    used: int
    remaining: int
    retry_after_ns: int

    @property
    def retry_after(self) -> float:
        """retry_after_ns in seconds."""
        return self.retry_after_ns / 1e9


@dataclass(frozen=True)
class TenantView:
    """A tenant's settings and counts (Tenant_show, Tenant_list)."""
    reserved: int
    hard_limit: int
    used: int
    configured: bool
    throttled: int
    units: int
    name: bytes = b""
    server: str = ""


@dataclass(frozen=True)
class NodeView:
    """A node's capacity and counts this second (Node_show)."""
    capacity: int
    used: int
    pool: int
    pool_used: int
    reserved: int
    tenants: int
    throttled: int


@dataclass(frozen=True)
class WindowItem:
    """A Window_check to put in a Multi_check: limit per window seconds
    (None: the server's 1 s) in slots (0: 10)."""
    name: Union[str, bytes]
    limit: int
    cost: int = 1
    window: Optional[float] = None
    slots: int = 0


@dataclass(frozen=True)
class GcraItem:
    """A Gcra_check to put in a Multi_check: count per period seconds,
    with a burst."""
    name: Union[str, bytes]
    burst: int
    count: int
    period: float
    cost: int = 1


T = TypeVar("T")


@dataclass
class Request(Generic[T]):
    """One request ready to send: its opcode and body, the name it is
    routed by (None: a node-wide request), whether the failure policy may
    move it, and how to turn the answer (or the records of a streamed
    answer) into its result."""
    opcode: int
    body: bytes
    key: Optional[bytes]
    decode: Callable[[Packet], T]
    remap: bool = False
    stream: bool = False
    server: Optional[str] = None
    records: list[T] = field(default_factory=list)
    opaque: int = 0
    #: Every name a multi-check routes: they must share one server.
    names: tuple[bytes, ...] = ()


# ---------------------------------------------------------------------------
# Encoding


def name_bytes(name: Union[str, bytes], what: str = "name") -> bytes:
    """Returns the name as bytes, refusing empty and too long names."""
    if isinstance(name, str):
        b = name.encode("utf-8")
    elif isinstance(name, (bytes, bytearray, memoryview)):
        b = bytes(name)
    else:
        raise TypeError("%s must be str or bytes, not %s"
                        % (what, type(name).__name__))
    if not b:
        raise ValueError("%s is empty" % what)
    if len(b) > NAME_MAX:
        raise ValueError("%s is %d bytes, more than %d"
                         % (what, len(b), NAME_MAX))
    return b


def _uint(value: int, what: str, bits: int, low: int = 0) -> int:
    """Checks that value is an integer in [low, 2^bits - 1]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int" % what)
    top = (1 << bits) - 1
    if value < low or value > top:
        raise ValueError("%s is %d, not in %d..%d" % (what, value, low, top))
    return value


def seconds_ms(seconds: Optional[float], what: str,
               low: int = 0) -> int:
    """A duration in seconds as the wire's milliseconds (u32; None: the
    group's setting, 0xffffffff), refusing negative, not finite or too
    long ones, naming the argument."""
    if seconds is None:
        return GROUP_DEFAULT
    ms = _rounded(seconds, 1000, what)
    if ms < low or ms > GROUP_DEFAULT - 1:
        raise ValueError("%s is %r s, not in %g..%g s"
                         % (what, seconds, low / 1000,
                            (GROUP_DEFAULT - 1) / 1000))
    return ms


def seconds_ns(seconds: Optional[float], what: str, low: int = 0) -> int:
    """A duration in seconds as the wire's nanoseconds (u64; None: 0,
    which the window check reads as its default of 1 s)."""
    if seconds is None:
        return 0
    ns = _rounded(seconds, 1_000_000_000, what)
    if ns < low or ns > U64_MAX:
        raise ValueError("%s is %r s, not in %g..%g s"
                         % (what, seconds, low / 1e9, U64_MAX / 1e9))
    return ns


def _rounded(seconds: float, per_second: int, what: str) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError("%s must be a number of seconds, not %s"
                        % (what, type(seconds).__name__))
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise ValueError("%s is %r s, not a finite duration" % (what, seconds))
    if seconds < 0:
        raise ValueError("%s is %r s, negative" % (what, seconds))
    return round(seconds * per_second)


def encode_packet(opcode: int, body: bytes = b"", opaque: int = 0) -> bytes:
    """Returns a request packet: the 12-byte header and the body."""
    return _HEADER.pack(MAGIC_REQUEST, opcode, 0, 0, len(body),
                        opaque & U32_MAX) + body


def _named(fixed: bytes, name: bytes) -> bytes:
    return fixed + struct.pack(">H", len(name)) + name


def body_get(name: bytes) -> bytes:
    """Get's body."""
    return _named(b"", name)


def body_auth_user(user: bytes, secret: bytes, nonblocking: bool) -> bytes:
    """Auth_user's body: flags, a zero byte, the two lengths (the
    secret's first), the user, the secret; both must fit one body."""
    if len(user) + len(secret) > BODY_MAX - AUTH_USER_FIXED:
        raise ValueError("user and secret are %d bytes together, more "
                         "than %d" % (len(user) + len(secret),
                                      BODY_MAX - AUTH_USER_FIXED))
    flags = AUTH_NONBLOCKING if nonblocking else 0
    return struct.pack(">BBHH", flags, 0, len(secret), len(user)) + \
        user + secret


def body_acquire(name: bytes, resources: int, maximum: int) -> bytes:
    """Acquire's body; resources must be 1..maximum."""
    _uint(resources, "resources", 32, 1)
    _uint(maximum, "maximum", 32)
    if resources > maximum:
        raise ValueError("resources %d are above the maximum %d"
                         % (resources, maximum))
    return _named(struct.pack(">II", resources, maximum), name)


def body_release(name: bytes, resources: int) -> bytes:
    """Release's body."""
    _uint(resources, "resources", 32)
    return _named(struct.pack(">I", resources), name)


def body_wait_acquire(name: bytes, resources: int, maximum: int,
                      wait_ms: int, lease_ms: int) -> bytes:
    """Wait_acquire's body (maximum 0, wait or lease 0xffffffff: the
    group's setting)."""
    _uint(resources, "resources", 32, 1)
    _uint(maximum, "maximum", 32)
    _uint(wait_ms, "wait_ms", 32)
    _uint(lease_ms, "lease_ms", 32)
    if maximum != 0 and resources > maximum:
        raise ValueError("resources %d are above the maximum %d"
                         % (resources, maximum))
    return _named(struct.pack(">IIII", resources, maximum, wait_ms,
                              lease_ms), name)


def body_renew(name: bytes, lease_ms: int) -> bytes:
    """Renew's body (lease_ms 1 or more)."""
    _uint(lease_ms, "lease_ms", 32, 1)
    return _named(struct.pack(">I", lease_ms), name)


def body_ttl_insert(name: bytes, quota: int, ttl: int,
                    unit: int = Unit.S) -> bytes:
    """Ttl_insert's body."""
    _uint(quota, "quota", 64)
    _uint(ttl, "ttl", 64, 1)
    _uint(unit, "unit", 32)
    if unit > Unit.H:
        raise ValueError("unit %d is not a time unit (0..5)" % unit)
    return _named(struct.pack(">QQB", quota, ttl, unit), name)


def body_ttl_update(name: bytes, attribute: int, change: int, value: int,
                    unit: int = Unit.S) -> bytes:
    """Ttl_update's body."""
    if attribute not in (0, 1):
        raise ValueError("attribute %r is not 0 (quota) or 1 (ttl)"
                         % (attribute,))
    if change not in (0, 1, 2):
        raise ValueError("change %r is not 0, 1 or 2" % (change,))
    _uint(value, "value", 64)
    if unit not in range(0, 6):
        raise ValueError("unit %r is not a time unit (0..5)" % (unit,))
    return _named(struct.pack(">BBBQ", attribute, change, unit, value), name)


def body_window(name: bytes, limit: int, cost: int = 1, window_ns: int = 0,
                slots: int = 0, peek: bool = False) -> bytes:
    """Window_check's body."""
    _uint(limit, "limit", 32)
    _uint(cost, "cost", 32, 1)
    _uint(window_ns, "window_ns", 64)
    _uint(slots, "slots", 8)
    if slots > 64:
        raise ValueError("slots is %d, more than 64" % slots)
    return _named(struct.pack(">BBHIIQ", 1 if peek else 0, slots, 0, limit,
                              cost, window_ns), name)


def body_gcra(name: bytes, burst: int, count: int, period_ns: int,
              cost: int = 1, peek: bool = False) -> bytes:
    """Gcra_check's body."""
    _uint(burst, "burst", 32)
    _uint(count, "count", 32, 1)
    _uint(cost, "cost", 32, 1)
    _uint(period_ns, "period_ns", 64, 1)
    return _named(struct.pack(">BxxxIIIQ", 1 if peek else 0, burst, count,
                              cost, period_ns), name)


def body_multi(items: list[Union[WindowItem, GcraItem]],
               peek: bool = False) -> bytes:
    """Multi_check's body (1 to 16 window and GCRA items)."""
    if not items:
        raise ValueError("multi-check needs at least one item")
    if len(items) > MULTI_MAX:
        raise ValueError("multi-check has %d items, more than %d"
                         % (len(items), MULTI_MAX))
    out = [struct.pack(">BB", 1 if peek else 0, len(items))]
    for it in items:
        n = name_bytes(it.name)
        if isinstance(it, WindowItem):
            op, b = Op.WINDOW_CHECK, body_window(
                n, it.limit, it.cost, seconds_ns(it.window, "window"),
                it.slots)
        elif isinstance(it, GcraItem):
            op, b = Op.GCRA_CHECK, body_gcra(
                n, it.burst, it.count, seconds_ns(it.period, "period", 1),
                it.cost)
        else:
            raise TypeError("multi-check items are WindowItem or GcraItem")
        out.append(struct.pack(">BH", op, len(b)) + b)
    body = b"".join(out)
    if len(body) > BODY_MAX:
        raise ValueError("multi-check body is %d bytes, more than %d"
                         % (len(body), BODY_MAX))
    return body


def body_throttle(tenant: bytes, units: int) -> bytes:
    """Throttle's body (units 1 or more)."""
    _uint(units, "units", 32, 1)
    return _named(struct.pack(">I", units), tenant)


def body_tenant_set(tenant: bytes, reserved: Optional[int],
                    hard_limit: Optional[int]) -> bytes:
    """Tenant_set's body; None leaves that value as it is."""
    if reserved is None and hard_limit is None:
        raise ValueError("tenant_set needs reserved or hard_limit")
    flags = (1 if reserved is not None else 0) | \
            (2 if hard_limit is not None else 0)
    r = _uint(reserved, "reserved", 32) if reserved is not None else 0
    h = _uint(hard_limit, "hard_limit", 32) if hard_limit is not None else 0
    if reserved is not None and hard_limit is not None and h < r:
        raise ValueError("hard_limit %d is below reserved %d" % (h, r))
    return _named(struct.pack(">BxxxII", flags, r, h), tenant)


def body_node_set(capacity: int) -> bytes:
    """Node_set's body."""
    return struct.pack(">I", _uint(capacity, "capacity", 32))


# The most leases one Lease_list answers (a larger count is clamped).
LEASE_LIST_MAX = 64


def body_lease_list(count: int) -> bytes:
    """Lease_list's body: how many leases, at least 1."""
    return struct.pack(">I", _uint(count, "count", 32, 1))


# The most names one Busiest lists (a larger count lists this many).
BUSIEST_MAX = 16


def body_busiest(count: int) -> bytes:
    """Busiest's body: how many names to list."""
    return struct.pack(">I", _uint(count, "count", 32))


# The longest JSON document Tenant_set_json and Node_set_json take.
JSON_DOC_MAX = 4096


def json_doc(document: Union[dict[str, Any], str, bytes]) -> bytes:
    """A settings document as the server takes it: bytes and str as they
    are (UTF-8), a dict written as compact JSON."""
    if isinstance(document, dict):
        doc = json.dumps(document, separators=(",", ":")).encode()
    elif isinstance(document, str):
        doc = document.encode()
    elif isinstance(document, (bytes, bytearray)):
        doc = bytes(document)
    else:
        raise ValueError("document must be a dict, str or bytes")
    if len(doc) > JSON_DOC_MAX:
        raise ValueError("document is %d bytes, at most %d"
                         % (len(doc), JSON_DOC_MAX))
    return doc


def body_tenant_set_json(tenant: bytes, doc: bytes) -> bytes:
    """Tenant_set_json's body: the tenant, then its JSON document."""
    if len(tenant) + len(doc) > BODY_MAX - 2:
        raise ValueError("tenant and document do not fit one request")
    return _named(b"", tenant) + doc


def body_node_set_json(doc: bytes) -> bytes:
    """Node_set_json's body: the JSON document."""
    return doc


# ---------------------------------------------------------------------------
# Decoding


def decode_packet(buf: Union[bytes, bytearray, memoryview]
                  ) -> Optional[tuple[Packet, int]]:
    """Decodes the packet at the front of buf: (packet, bytes used), or
    None while less than a whole packet is there. Raises ProtocolError for
    a magic other than 0x91 or 0x92, or a packet declared larger than
    RESPONSE_MAX (the stream cannot be trusted), and MemcachePortError,
    judged on the first byte, for the text of a memcache port."""
    if buf and buf[0] not in (MAGIC_RESPONSE, MAGIC_EVENT):
        if is_text(buf):
            raise MemcachePortError()
        raise ProtocolError("bad magic 0x%02x from the server" % buf[0])
    if len(buf) < HEADER_SIZE:
        return None
    magic, opcode, status, _res, blen, opaque = _HEADER.unpack_from(buf, 0)
    if magic not in (MAGIC_RESPONSE, MAGIC_EVENT):
        raise ProtocolError("bad magic 0x%02x from the server" % magic)
    if HEADER_SIZE + blen > RESPONSE_MAX:
        raise ProtocolError("the server declared a %d-byte body, more than "
                            "%d bytes with the header"
                            % (blen, RESPONSE_MAX))
    if len(buf) < HEADER_SIZE + blen:
        return None
    body = bytes(buf[HEADER_SIZE:HEADER_SIZE + blen])
    return Packet(magic, opcode, status, opaque, body), HEADER_SIZE + blen


def check_status(p: Packet) -> None:
    """Raises StatusError for an answer whose status is not 0."""
    if p.status == Status.THROTTLED:
        # The retry hint and the reason come before the text.
        b = _need(p, THROTTLED_FIXED, "throttled")
        ns, reason = struct.unpack_from(">QB", b, 0)
        raise Throttled(p.status,
                        b[THROTTLED_FIXED:].decode("ascii", "replace"),
                        p.opcode, ns / 1e9, reason)
    if p.status != 0:
        text = p.body.decode("ascii", "replace")
        raise status_error(p.status, text, p.opcode)


def _need(p: Packet, n: int, what: str) -> bytes:
    if len(p.body) < n:
        raise ProtocolError("%s answer is %d bytes, expected %d"
                            % (what, len(p.body), n))
    return p.body


def _name_at(body: bytes, off: int, what: str) -> bytes:
    if len(body) < off + 2:
        raise ProtocolError("%s record too short" % what)
    (n,) = struct.unpack_from(">H", body, off)
    if len(body) < off + 2 + n:
        raise ProtocolError("%s record name runs past its body" % what)
    return body[off + 2:off + 2 + n]


def decode_none(p: Packet) -> None:
    """An answer whose body says nothing."""
    check_status(p)


def decode_json(p: Packet) -> dict[str, Any]:
    """Tenant_set_json and Node_set_json: the settings applied, a JSON
    object."""
    check_status(p)
    try:
        doc = json.loads(p.body.decode())
    except ValueError as e:
        raise ProtocolError("settings answer is not JSON: %s" % e) from None
    if not isinstance(doc, dict):
        raise ProtocolError("settings answer is not a JSON object")
    return doc


def decode_u32(p: Packet) -> int:
    """An answer whose body is a u32 (Get, Acquire, Wait_release)."""
    check_status(p)
    value: int = struct.unpack_from(">I", _need(p, 4, "u32"))[0]
    return value


def decode_u64(p: Packet) -> int:
    """An answer whose body is a u64 (Renew's lease id)."""
    check_status(p)
    value: int = struct.unpack_from(">Q", _need(p, 8, "u64"))[0]
    return value


def decode_stats(p: Packet) -> dict[str, str]:
    """Stats' name/value pairs, in the server's order."""
    check_status(p)
    out: dict[str, str] = {}
    b, off = p.body, 0
    while off < len(b):
        if off + 4 > len(b):
            raise ProtocolError("stats pair header cut short")
        nl, vl = struct.unpack_from(">HH", b, off)
        off += 4
        if off + nl + vl > len(b):
            raise ProtocolError("stats pair runs past the body")
        k = b[off:off + nl].decode("ascii", "replace")
        v = b[off + nl:off + nl + vl].decode("ascii", "replace")
        out[k] = v
        off += nl + vl
    return out


def decode_wait(p: Packet) -> WaitAnswer:
    """Wait_acquire's 20-byte answer."""
    check_status(p)
    b = _need(p, 20, "wait_acquire")
    state, pos, lid, cons = struct.unpack_from(">BxxxIQI", b)
    return WaitAnswer(state == 0, pos, lid, cons)


def decode_event(p: Packet, server: str = "") -> Event:
    """An event packet's body."""
    b = _need(p, 14, "event")
    lid, value = struct.unpack_from(">QI", b)
    return Event(p.opcode, p.opaque, lid, value, _name_at(b, 12, "event"),
                 server)


def decode_dump_record(p: Packet) -> DumpRecord:
    """One Dump record."""
    b = _need(p, 10, "dump")
    cur, mx = struct.unpack_from(">II", b)
    return DumpRecord(_name_at(b, 8, "dump"), cur, mx)


def decode_queue_record(p: Packet) -> QueueRecord:
    """One Queues record."""
    b = _need(p, 10, "queues")
    cons, length = struct.unpack_from(">II", b)
    return QueueRecord(_name_at(b, 8, "queues"), cons, length)


def decode_lease_record(p: Packet) -> LeaseRecord:
    """One Lease_list record."""
    b = _need(p, 18, "lease_list")
    left_ms, lid, res = struct.unpack_from(">IQI", b)
    return LeaseRecord(_name_at(b, 16, "lease_list"), left_ms / 1000.0, lid,
                       res)


def decode_busy_record(p: Packet) -> BusyRecord:
    """One Busiest record."""
    b = _need(p, 7, "busiest")
    checks, kind = struct.unpack_from(">IB", b)
    try:
        k = LimitKind(kind)
    except ValueError:
        raise ProtocolError("unknown rate-limit kind %d" % kind) from None
    return BusyRecord(_name_at(b, 5, "busiest"), k, checks)


def decode_ttl_view(p: Packet) -> TtlView:
    """Ttl_query's and Ttl_update's 17-byte view."""
    check_status(p)
    q, t, u = struct.unpack_from(">QQB", _need(p, 17, "ttl view"))
    try:
        unit = Unit(u)
    except ValueError:
        raise ProtocolError("unknown time unit %d" % u) from None
    return TtlView(q, t, unit)


def _check_answer(b: bytes, off: int) -> CheckAnswer:
    st, lim, rem, used, retry, reset = struct.unpack_from(">BxxxIIIQQ",
                                                          b, off)
    try:
        state = CheckState(st)
    except ValueError:
        raise ProtocolError("unknown check state %d" % st) from None
    return CheckAnswer(state, lim, rem, used, retry, reset)


def decode_check(p: Packet) -> CheckAnswer:
    """Window_check's and Gcra_check's 32-byte answer."""
    check_status(p)
    return _check_answer(_need(p, 32, "check"), 0)


def decode_multi(p: Packet) -> MultiAnswer:
    """Multi_check's answer: overall, count, a check answer per item."""
    check_status(p)
    b = _need(p, 2, "multi_check")
    overall, count = b[0], b[1]
    _need(p, 2 + 32 * count, "multi_check")
    items = [_check_answer(b, 2 + 32 * i) for i in range(count)]
    return MultiAnswer(overall == 0, items)


def decode_throttle(p: Packet) -> ThrottleAnswer:
    """Throttle's 24-byte answer."""
    check_status(p)
    st, reason, used, rem, retry = struct.unpack_from(
        ">BBxxIIxxxxQ", _need(p, 24, "throttle"))
    try:
        r = ThrottleReason(reason)
    except ValueError:
        raise ProtocolError("unknown throttle reason %d" % reason) from None
    return ThrottleAnswer(st == 0, r, used, rem, retry)


def _tenant_view(b: bytes, name: bytes) -> TenantView:
    res, hard, used, flags, thr, units = struct.unpack_from(">IIIBxxxQQ", b)
    return TenantView(res, hard, used, bool(flags & 1), thr, units, name)


def decode_tenant_view(p: Packet) -> TenantView:
    """Tenant_show's 32-byte view."""
    check_status(p)
    return _tenant_view(_need(p, 32, "tenant view"), b"")


def decode_tenant_record(p: Packet) -> TenantView:
    """One Tenant_list record: the view and the tenant's name."""
    b = _need(p, 34, "tenant record")
    return _tenant_view(b, _name_at(b, 32, "tenant"))


def decode_node_view(p: Packet) -> NodeView:
    """Node_show's 32-byte view."""
    check_status(p)
    return NodeView(*struct.unpack_from(">IIIIIIQ",
                                        _need(p, 32, "node view")))
