"""mccounter: a pure-Python client of memcached-counter's counter protocol
(doc/protocol.md), blocking (Client) and asyncio (AsyncClient), with ketama
server-list hashing compatible with libmemcached and the C client."""
from .aio import AsyncClient, AsyncLease, AsyncPipeline
from .client import Client, Lease, Pipeline
from .ketama import Continuum, Router, parse_servers
from .protocol import (GROUP_DEFAULT, RETRY_NEVER, UNLIMITED, CheckAnswer,
                       CheckState, CounterError, DumpRecord, Event,
                       EventKind, GcraItem, MultiAnswer, NodeView, Op,
                       MemcachePortError, ProtocolError, QueueRecord,
                       ServerDown, Status, StatusError, TenantView, ThrottleAnswer,
                       ThrottleReason, TtlAttribute, TtlChange, TtlView,
                       Unit, WaitAnswer, WaitTimedOut, WindowItem)

__version__ = "1.0.0"

__all__ = [
    "AsyncClient", "AsyncLease", "AsyncPipeline", "Client", "Lease", "Pipeline", "Continuum",
    "Router", "parse_servers", "GROUP_DEFAULT", "RETRY_NEVER", "UNLIMITED",
    "CheckAnswer", "CheckState", "CounterError", "DumpRecord", "Event",
    "EventKind", "GcraItem", "MultiAnswer", "NodeView", "Op",
    "MemcachePortError", "ProtocolError", "QueueRecord", "ServerDown",
    "Status", "StatusError",
    "TenantView", "ThrottleAnswer", "ThrottleReason", "TtlAttribute",
    "TtlChange", "TtlView", "Unit", "WaitAnswer", "WaitTimedOut",
    "WindowItem", "__version__",
]
