"""mccounter: a pure-Python client of memcached-counter's counter protocol
(doc/protocol.md), blocking (Client) and asyncio (AsyncClient), with ketama
server-list hashing compatible with libmemcached and the C client."""
from .aio import AsyncClient, AsyncLease, AsyncPipeline
from .client import Client, Lease, Pipeline
from .duration import DurationError, parse_duration
from .ketama import Continuum, Router, parse_servers
from . import quota
from .quota import lease_name
from .protocol import (BUSIEST_MAX, GROUP_DEFAULT, RETRY_NEVER, UNLIMITED,
                       AuthFailed, Busy, BusyRecord, CheckAnswer, CheckState, CounterError,
                       DumpRecord, Event, EventKind, ExceedsMaximum, Exists,
                       GcraItem, LeaseExpired, LimitKind, MultiAnswer,
                       NodeView,
                       NotAcquired, NotFound, NotPermitted, Op,
                       MemcachePortError, OverCapacity, ProtocolError,
                       QueueRecord, ServerDown, Status, StatusError,
                       TenantView, Throttled, ThrottleAnswer, ThrottleReason,
                       TtlAttribute, TtlChange, TtlView, Unit,
                       UnknownGroup, WaitAnswer, WaitTimedOut, WindowItem)

try:
    # Written into the wheel by mcc_build.py, from configure.ac.
    from ._version import __version__  # type: ignore[import]
except ImportError:     # the source tree: read configure.ac itself
    def _source_version() -> str:
        import os
        import re
        conf = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..", "..", "..", "configure.ac")
        try:
            with open(conf, encoding="utf-8") as f:
                m = re.search(r"^AC_INIT\(\[[^]]*\],\s*\[([^]]+)\]",
                              f.read(), re.M)
        except OSError:
            m = None
        return m.group(1) if m else "0+unknown"
    __version__ = _source_version()

__all__ = [
    "AsyncClient", "AsyncLease", "AsyncPipeline", "Client", "Lease", "Pipeline", "Continuum",
    "Router", "parse_servers", "GROUP_DEFAULT", "RETRY_NEVER", "UNLIMITED",
    "CheckAnswer", "CheckState", "CounterError", "DumpRecord", "Event",
    "EventKind", "GcraItem", "MultiAnswer", "NodeView", "Op",
    "MemcachePortError", "ProtocolError", "QueueRecord", "LeaseRecord", "ServerDown",
    "Status", "StatusError", "NotFound", "Busy", "NotAcquired",
    "ExceedsMaximum", "UnknownGroup", "LeaseExpired", "Exists",
    "NotPermitted", "AuthFailed", "OverCapacity", "Throttled",
    "TenantView", "ThrottleAnswer", "ThrottleReason", "TtlAttribute",
    "TtlChange", "TtlView", "Unit", "WaitAnswer", "WaitTimedOut",
    "WindowItem", "quota", "lease_name", "DurationError", "parse_duration",
    "BUSIEST_MAX", "BusyRecord", "LimitKind",
    "__version__",
]
