"""Builds the Request of every operation, with its arguments checked.

Both clients call these and only differ in how they send the result, so
an argument is refused (ValueError, naming it) the same way by both and
before anything is sent.
"""
from __future__ import annotations

from typing import Optional, Union

from . import protocol as p
from .protocol import Request

Name = Union[str, bytes]


def noop(server: Optional[str]) -> Request[None]:
    """Noop, to a node."""
    return Request(p.Op.NOOP, b"", None, p.decode_none, server=server)


def get(name: Name) -> Request[int]:
    """Get: the counter's consumption."""
    n = p.name_bytes(name)
    return Request(p.Op.GET, p.body_get(n), n, p.decode_u32)


def acquire(name: Name, resources: int, maximum: int) -> Request[int]:
    """Acquire: the resources acquired."""
    n = p.name_bytes(name)
    return Request(p.Op.ACQUIRE, p.body_acquire(n, resources, maximum), n,
                   p.decode_u32)


def release(name: Name, resources: int) -> Request[None]:
    """Release."""
    n = p.name_bytes(name)
    return Request(p.Op.RELEASE, p.body_release(n, resources), n,
                   p.decode_none)


def stats(server: Optional[str]) -> Request[dict[str, str]]:
    """Stats, to a node."""
    return Request(p.Op.STATS, b"", None, p.decode_stats, server=server)


def dump(server: Optional[str]) -> Request[list[p.DumpRecord]]:
    """Dump, to a node: a streamed list of records."""
    return Request(p.Op.DUMP, b"", None, p.decode_dump_record, stream=True,
                   server=server)


def queues(server: Optional[str]) -> Request[list[p.QueueRecord]]:
    """Queues, to a node: a streamed list of records."""
    return Request(p.Op.QUEUES, b"", None, p.decode_queue_record,
                   stream=True, server=server)


def wait_acquire(name: Name, resources: int, maximum: int, wait_ms: int,
                 lease_ms: int) -> Request[p.WaitAnswer]:
    """Wait_acquire: granted now or queued."""
    n = p.name_bytes(name)
    return Request(p.Op.WAIT_ACQUIRE,
                   p.body_wait_acquire(n, resources, maximum, wait_ms,
                                       lease_ms), n, p.decode_wait)


def renew(name: Name, lease_ms: int) -> Request[int]:
    """Renew: the grant's lease id."""
    n = p.name_bytes(name)
    return Request(p.Op.RENEW, p.body_renew(n, lease_ms), n, p.decode_u64)


def wait_release(name: Name) -> Request[int]:
    """Wait_release: the resources returned (0 for a cancelled wait)."""
    n = p.name_bytes(name)
    return Request(p.Op.WAIT_RELEASE, p.body_get(n), n, p.decode_u32)


def ttl_insert(name: Name, quota: int, ttl: int,
               unit: int = p.Unit.S) -> Request[None]:
    """Ttl_insert."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_INSERT, p.body_ttl_insert(n, quota, ttl, unit),
                   n, p.decode_none, remap=True)


def ttl_query(name: Name) -> Request[p.TtlView]:
    """Ttl_query."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_QUERY, p.body_get(n), n, p.decode_ttl_view,
                   remap=True)


def ttl_update(name: Name, attribute: int, change: int, value: int,
               unit: int = p.Unit.S) -> Request[p.TtlView]:
    """Ttl_update."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_UPDATE,
                   p.body_ttl_update(n, attribute, change, value, unit), n,
                   p.decode_ttl_view, remap=True)


def ttl_purge(name: Name) -> Request[None]:
    """Ttl_purge."""
    n = p.name_bytes(name)
    return Request(p.Op.TTL_PURGE, p.body_get(n), n, p.decode_none,
                   remap=True)


def window_check(name: Name, limit: int, cost: int = 1, window_ns: int = 0,
                 slots: int = 0, peek: bool = False
                 ) -> Request[p.CheckAnswer]:
    """Window_check."""
    n = p.name_bytes(name)
    return Request(p.Op.WINDOW_CHECK,
                   p.body_window(n, limit, cost, window_ns, slots, peek), n,
                   p.decode_check, remap=True)


def gcra_check(name: Name, burst: int, count: int, period_ns: int,
               cost: int = 1, peek: bool = False) -> Request[p.CheckAnswer]:
    """Gcra_check."""
    n = p.name_bytes(name)
    return Request(p.Op.GCRA_CHECK,
                   p.body_gcra(n, burst, count, period_ns, cost, peek), n,
                   p.decode_check, remap=True)


def multi_check(items: list[Union[p.WindowItem, p.GcraItem]],
                peek: bool = False) -> Request[p.MultiAnswer]:
    """Multi_check; the client checks that every item maps to one server
    (routed by the first item's name)."""
    body = p.body_multi(list(items), peek)
    return Request(p.Op.MULTI_CHECK, body, p.name_bytes(items[0].name),
                   p.decode_multi, remap=True)


def auth(secret: Union[str, bytes], server: Optional[str]) -> Request[None]:
    """Auth, to a node."""
    s = p.name_bytes(secret, "secret")
    return Request(p.Op.AUTH, p.body_get(s), None, p.decode_none,
                   server=server)


def throttle(tenant: Name, units: int) -> Request[p.ThrottleAnswer]:
    """Throttle: charge units to the tenant (routed by the tenant)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.THROTTLE, p.body_throttle(t, units), t,
                   p.decode_throttle)


def tenant_show(tenant: Name) -> Request[p.TenantView]:
    """Tenant_show (routed by the tenant)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SHOW, p.body_get(t), t, p.decode_tenant_view)


def tenant_list(server: Optional[str]) -> Request[list[p.TenantView]]:
    """Tenant_list, to a node: a streamed list of tenant records."""
    return Request(p.Op.TENANT_LIST, b"", None, p.decode_tenant_record,
                   stream=True, server=server)


def node_show(server: Optional[str]) -> Request[p.NodeView]:
    """Node_show, to a node."""
    return Request(p.Op.NODE_SHOW, b"", None, p.decode_node_view,
                   server=server)


def tenant_set(tenant: Name, reserved: Optional[int] = None,
               hard_limit: Optional[int] = None) -> Request[None]:
    """Tenant_set (privileged; routed by the tenant)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SET, p.body_tenant_set(t, reserved,
                                                      hard_limit),
                   t, p.decode_none)


def tenant_remove(tenant: Name) -> Request[None]:
    """Tenant_remove (privileged; routed by the tenant)."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_REMOVE, p.body_get(t), t, p.decode_none)


def node_set(capacity: int, server: Optional[str]) -> Request[None]:
    """Node_set (privileged), to a node."""
    return Request(p.Op.NODE_SET, p.body_node_set(capacity), None,
                   p.decode_none, server=server)


def tenant_set_json(tenant: Name, document: Union[dict, str, bytes]
                    ) -> Request[dict]:
    """Tenant_set_json (privileged; routed by the tenant): the seed's
    SetBucketThrottleProperties; answers the tenant's settings."""
    t = p.name_bytes(tenant, "tenant")
    return Request(p.Op.TENANT_SET_JSON,
                   p.body_tenant_set_json(t, p.json_doc(document)), t,
                   p.decode_json)


def node_set_json(document: Union[dict, str, bytes],
                  server: Optional[str]) -> Request[dict]:
    """Node_set_json (privileged), to a node: the seed's
    SetNodeThrottleProperties; answers the capacity applied."""
    return Request(p.Op.NODE_SET_JSON,
                   p.body_node_set_json(p.json_doc(document)), None,
                   p.decode_json, server=server)


def unthrottle(server: Optional[str]) -> Request[None]:
    """Unthrottle (privileged), to a node."""
    return Request(p.Op.UNTHROTTLE, b"", None, p.decode_none, server=server)


def reload(server: Optional[str]) -> Request[None]:
    """Reload (privileged), to a node."""
    return Request(p.Op.RELOAD, b"", None, p.decode_none, server=server)
