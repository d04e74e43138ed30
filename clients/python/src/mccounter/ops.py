"""Every operation, described once: a function that builds its Request
(checking its arguments), and Operation, which makes it a method of the
blocking Client, the AsyncClient (a coroutine) and both pipelines (a
queued request). The clients only differ in how they run a Request, so
an argument is refused (ValueError, naming it) the same way by all of
them and before anything is sent, and each operation's signature and
documentation are written here only.

Durations a caller passes are seconds (int or float): wait, lease,
window, period. None, where allowed, asks for the group's setting (a
wait or lease) or the server's default (a window: 1 s).
"""
from __future__ import annotations

import functools
from typing import (Any, Awaitable, Callable, Generic, Optional, ParamSpec,
                    TypeVar, Union, overload)

from . import protocol as p
from .protocol import Request

Name = Union[str, bytes]
# A settings document: a dict written as JSON, or the JSON text itself.
JsonDoc = Union[dict[str, Any], str, bytes]
P = ParamSpec("P")
T = TypeVar("T")


def login_request(user: Union[str, bytes, None],
                  secret: Union[str, bytes, None], nonblocking: bool,
                  server: Optional[str]) -> Optional[Request[None]]:
    """The request a client's new connection starts with: Auth_user
    with a user, Auth with only a secret, none without a secret. The
    clients call it when constructed too, so that a bad user or secret is
    refused there (ValueError) rather than on the first connection."""
    if user is not None:
        if secret is None:
            raise ValueError("user needs the user's secret")
        return auth_user(user, secret, nonblocking, server)
    if secret is not None:
        return auth(secret, server)
    return None


class SyncRunner:
    """A client whose operations return their result (Client)."""

    def _run(self, req: Request[T]) -> T:
        raise NotImplementedError


class AsyncRunner:
    """A client whose operations are coroutines (AsyncClient)."""

    def _run(self, req: Request[T]) -> Awaitable[T]:
        raise NotImplementedError


class BatchRunner:
    """A pipeline: operations queue their request and return None."""

    def _run(self, req: Request[Any]) -> None:
        raise NotImplementedError


class Operation(Generic[P, T]):
    """One operation as a method: calling it on a client builds the
    Request with the wrapped function and hands it to the client's _run.
    What the call returns follows the client's kind (see the runners)."""

    def __init__(self, build: Callable[P, Request[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: Any) -> "Operation[P, T]": ...

    @overload
    def __get__(self, obj: AsyncRunner,
                owner: Any) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, obj: BatchRunner, owner: Any) -> Callable[P, None]: ...

    @overload
    def __get__(self, obj: SyncRunner, owner: Any) -> Callable[P, T]: ...

    def __get__(self, obj: Any, owner: Any) -> Any:
        if obj is None:
            return self
        build = self.build
        run = obj._run

        @functools.wraps(build)
        def call(*args: Any, **kwargs: Any) -> Any:
            return run(build(*args, **kwargs))
        return call


def noop(server: Optional[str] = None) -> Request[None]:
    """Noop: checks that a server answers."""
    return Request(p.Op.NOOP, b"", None, p.decode_none, server=server)


def get(name: Name) -> Request[int]:
    """The counter's current consumption (NotFound if none)."""
    n = p.name_bytes(name)
    return Request(p.Op.GET, p.body_get(n), n, p.decode_u32)


def acquire(name: Name, resources: int, maximum: int) -> Request[int]:
    """Acquires resources if the consumption stays at most maximum;
    returns the resources acquired (Busy when refused)."""
    n = p.name_bytes(name)
    return Request(p.Op.ACQUIRE, p.body_acquire(n, resources, maximum), n,
                   p.decode_u32)


def release(name: Name, resources: int) -> Request[None]:
    """Releases resources this connection acquired (NotAcquired when it
    holds fewer)."""
    n = p.name_bytes(name)
    return Request(p.Op.RELEASE, p.body_release(n, resources), n,
                   p.decode_none)


def stats(server: Optional[str] = None) -> Request[dict[str, str]]:
    """The server's statistics, name to value, in its order."""
    return Request(p.Op.STATS, b"", None, p.decode_stats, server=server)


def dump(server: Optional[str] = None) -> Request[list[p.DumpRecord]]:
    """Every counter of a server."""
    return _streamed(p.Op.DUMP, p.decode_dump_record, server)


def queues(server: Optional[str] = None) -> Request[list[p.QueueRecord]]:
    """Every counter of a server that has waiters."""
    return _streamed(p.Op.QUEUES, p.decode_queue_record, server)


def lease_list(count: int = p.LEASE_LIST_MAX, server: Optional[str] = None
               ) -> Request[list[p.LeaseRecord]]:
    """The count leases of a server nearest to expiry (at most 64: a
    larger count gets 64), nearest first."""
    return _streamed(p.Op.LEASE_LIST, p.decode_lease_record, server,
                     p.body_lease_list(count))


def wait_acquire(name: Name, resources: int, maximum: int,
                 wait: Optional[float], lease: Optional[float] = 0
                 ) -> Request[p.WaitAnswer]:
    """Sends a Wait_acquire and returns its answer (granted now or
    queued) without waiting for the event that follows a queued one.
    wait: seconds to stay queued (0: not at all); lease: seconds a grant
    lasts unrenewed (0: until released); None: the group's setting."""
    n = p.name_bytes(name)
    return Request(p.Op.WAIT_ACQUIRE,
                   p.body_wait_acquire(n, resources, maximum,
                                       p.seconds_ms(wait, "wait"),
                                       p.seconds_ms(lease, "lease")),
                   n, p.decode_wait)


def renew(name: Name, lease: Optional[float]) -> Request[int]:
    """Renews this connection's grant on name for lease seconds (None:
    the group's); returns its lease id."""
    n = p.name_bytes(name)
    return Request(p.Op.RENEW,
                   p.body_renew(n, p.seconds_ms(lease, "lease", 1)), n,
                   p.decode_u64)


def wait_release(name: Name) -> Request[int]:
    """Cancels a queued wait (0) or returns a grant (its resources)."""
    n = p.name_bytes(name)
    return Request(p.Op.WAIT_RELEASE, p.body_get(n), n, p.decode_u32)


def ttl_insert(name: Name, quota: int, ttl: int,
               unit: int = p.Unit.S) -> Request[None]:
    """Creates a TTL counter of quota living ttl units (Exists while one
    lives). The TTL keeps its unit: queries answer in it."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_INSERT, p.body_ttl_insert(n, quota, ttl, unit),
                   n, p.decode_none, remap=True)


def ttl_query(name: Name) -> Request[p.TtlView]:
    """A TTL counter's quota and time left."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_QUERY, p.body_get(n), n, p.decode_ttl_view,
                   remap=True)


def ttl_update(name: Name, attribute: int, change: int, value: int,
               unit: int = p.Unit.S) -> Request[p.TtlView]:
    """Changes a TTL counter's quota or TTL; returns the new view."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_UPDATE,
                   p.body_ttl_update(n, attribute, change, value, unit), n,
                   p.decode_ttl_view, remap=True)


def ttl_purge(name: Name) -> Request[None]:
    """Removes a TTL counter."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_PURGE, p.body_get(n), n, p.decode_none,
                   remap=True)


def window_check(name: Name, limit: int, cost: int = 1,
                 window: Optional[float] = None, slots: int = 0,
                 peek: bool = False) -> Request[p.CheckAnswer]:
    """A sliding-window check: limit per window seconds (None: 1 s) in
    slots (0: 10), charging cost unless peek."""
    n = p.name_bytes(name)
    return Request(p.Op.WINDOW_CHECK,
                   p.body_window(n, limit, cost,
                                 p.seconds_ns(window, "window"), slots,
                                 peek), n, p.decode_check, remap=True)


def gcra_check(name: Name, burst: int, count: int, period: float,
               cost: int = 1, peek: bool = False) -> Request[p.CheckAnswer]:
    """A GCRA check: count per period seconds with a burst, charging
    cost unless peek."""
    n = p.name_bytes(name)
    return Request(p.Op.GCRA_CHECK,
                   p.body_gcra(n, burst, count,
                               p.seconds_ns(period, "period", 1), cost,
                               peek), n, p.decode_check, remap=True)


def multi_check(items: list[Union[p.WindowItem, p.GcraItem]],
                peek: bool = False) -> Request[p.MultiAnswer]:
    """Up to 16 checks as one, all charged or none; every item must map
    to the same server (ValueError otherwise)."""
    body = p.body_multi(list(items), peek)
    names = tuple(p.name_bytes(it.name) for it in items)
    return Request(p.Op.MULTI_CHECK, body, names[0], p.decode_multi,
                   remap=True, names=names)


def auth(secret: Union[str, bytes],
         server: Optional[str] = None) -> Request[None]:
    """Authenticates the connection to a server (privileged opcodes;
    AuthFailed for a wrong secret)."""
    s = p.name_bytes(secret, "secret")
    return Request(p.Op.AUTH, p.body_get(s), None, p.decode_none,
                   server=server)


def auth_user(user: Union[str, bytes], secret: Union[str, bytes],
              nonblocking: bool = False,
              server: Optional[str] = None) -> Request[None]:
    """Logs the connection to a server in as a user of its users file:
    its requests are then charged to the user's tenant (AuthFailed for a
    wrong secret or an unknown user). nonblocking: requests over the
    tenant's share raise Throttled at once instead of waiting on the
    server until its next second."""
    u = p.name_bytes(user, "user")
    s = p.name_bytes(secret, "secret")
    return Request(p.Op.AUTH_USER, p.body_auth_user(u, s, nonblocking),
                   None, p.decode_none, server=server)


def throttle(tenant: Name, units: int) -> Request[p.ThrottleAnswer]:
    """Charges units to a tenant: allowed, or throttled with a reason
    and retry_after."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.THROTTLE, p.body_throttle(t, units), t,
                   p.decode_throttle)


def tenant_show(tenant: Name) -> Request[p.TenantView]:
    """A tenant's settings and counts."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SHOW, p.body_get(t), t, p.decode_tenant_view)


def tenant_list(server: Optional[str] = None
                ) -> Request[list[p.TenantView]]:
    """Every tenant record of a server."""
    return _streamed(p.Op.TENANT_LIST, p.decode_tenant_record, server)


def busiest(count: int = p.BUSIEST_MAX, server: Optional[str] = None
            ) -> Request[list[p.BusyRecord]]:
    """The (at most count, at most BUSIEST_MAX) rate-limit names of a
    server with the most checks in the last whole second, busiest first;
    names with no check in that second are left out."""
    req: Request[Any] = Request(p.Op.BUSIEST, p.body_busiest(count), None,
                                p.decode_busy_record, stream=True,
                                server=server)
    return req


def node_show(server: Optional[str] = None) -> Request[p.NodeView]:
    """A server's capacity and counts this second."""
    return Request(p.Op.NODE_SHOW, b"", None, p.decode_node_view,
                   server=server)


def tenant_set(tenant: Name, reserved: Optional[int] = None,
               hard_limit: Optional[int] = None) -> Request[None]:
    """Sets a tenant's reserve and/or hard limit (privileged)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SET, p.body_tenant_set(t, reserved,
                                                      hard_limit),
                   t, p.decode_none)


def tenant_remove(tenant: Name) -> Request[None]:
    """Puts a tenant back to the defaults (privileged)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_REMOVE, p.body_get(t), t, p.decode_none)


def node_set(capacity: int, server: Optional[str] = None) -> Request[None]:
    """Sets a server's capacity, units per second (privileged)."""
    return Request(p.Op.NODE_SET, p.body_node_set(capacity), None,
                   p.decode_none, server=server)


def tenant_set_json(tenant: Name, document: JsonDoc
                    ) -> Request[dict[str, Any]]:
    """Configures a tenant with a JSON document, {"reserved": N,
    "hard_limit": N or "unlimited"}, the seed's SetBucketThrottleProperties
    (privileged); returns the tenant's settings after it."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SET_JSON,
                   p.body_tenant_set_json(t, p.json_doc(document)), t,
                   p.decode_json)


def node_set_json(document: JsonDoc, server: Optional[str] = None
                  ) -> Request[dict[str, Any]]:
    """Sets a server's capacity with a JSON document, {"capacity": N}, the
    seed's SetNodeThrottleProperties (privileged); returns what was
    applied."""
    return Request(p.Op.NODE_SET_JSON,
                   p.body_node_set_json(p.json_doc(document)), None,
                   p.decode_json, server=server)


def unthrottle(server: Optional[str] = None) -> Request[None]:
    """Makes this connection's charges always allowed (privileged)."""
    return Request(p.Op.UNTHROTTLE, b"", None, p.decode_none, server=server)


def reload(server: Optional[str] = None) -> Request[None]:
    """Reads the server's throttle settings file again (privileged)."""
    return Request(p.Op.RELOAD, b"", None, p.decode_none, server=server)


def _streamed(op: int, decode: Callable[[p.Packet], T],
              server: Optional[str], body: bytes = b"") -> Request[list[T]]:
    """A streamed request: its result is the list of decoded records (the
    Request's decode turns one packet into one record)."""
    req: Request[Any] = Request(op, body, None, decode, stream=True,
                                server=server)
    return req


class Operations:
    """Every operation as a method, shared by Client, AsyncClient and the
    pipelines (the lease helpers, which differ, are their own)."""
    noop = Operation(noop)
    get = Operation(get)
    acquire = Operation(acquire)
    release = Operation(release)
    stats = Operation(stats)
    dump = Operation(dump)
    queues = Operation(queues)
    wait_acquire_start = Operation(wait_acquire)
    renew = Operation(renew)
    wait_release = Operation(wait_release)
    ttl_insert = Operation(ttl_insert)
    ttl_query = Operation(ttl_query)
    ttl_update = Operation(ttl_update)
    ttl_purge = Operation(ttl_purge)
    window_check = Operation(window_check)
    gcra_check = Operation(gcra_check)
    multi_check = Operation(multi_check)
    auth = Operation(auth)
    auth_user = Operation(auth_user)
    throttle = Operation(throttle)
    tenant_show = Operation(tenant_show)
    tenant_list = Operation(tenant_list)
    node_show = Operation(node_show)
    tenant_set = Operation(tenant_set)
    tenant_remove = Operation(tenant_remove)
    node_set = Operation(node_set)
    tenant_set_json = Operation(tenant_set_json)
    node_set_json = Operation(node_set_json)
    unthrottle = Operation(unthrottle)
    reload = Operation(reload)
    lease_list = Operation(lease_list)
    busiest = Operation(busiest)
