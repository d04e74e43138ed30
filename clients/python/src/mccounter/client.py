"""The blocking client: one socket per server, connected on first use,
every operation as a method, pipelining, waiting acquisition with leases,
and the events the server sends collected in order.

A Client is not thread-safe: use one per thread (each has its own
connections, and holdings belong to a connection).
"""
from __future__ import annotations

import collections
import selectors
import socket
import time
from typing import Any, Callable, Optional, Union

from . import ops
from . import protocol as p
from .ketama import Router, ServerSpec
from .protocol import Request
from .quota import Allowances, QuotaMixin

Name = Union[str, bytes]
#: The most events kept for events() before the oldest are dropped.
EVENT_BACKLOG = 65536
#: The most requests a pipeline writes before reading their answers.
PIPELINE_CHUNK = 1024


class _Ops:
    """Every operation, written once: each builds its Request (checking
    its arguments) and hands it to _run, which the blocking client
    executes and the pipeline queues."""

    def _run(self, req: Request) -> Any:
        raise NotImplementedError

    def noop(self, server: Optional[str] = None) -> None:
        """Noop: checks that a server answers."""
        return self._run(ops.noop(server))

    def get(self, name: Name) -> int:
        """The counter's current consumption (StatusError 0x01 if none)."""
        return self._run(ops.get(name))

    def acquire(self, name: Name, resources: int, maximum: int) -> int:
        """Acquires resources if the consumption stays at most maximum;
        returns the resources acquired (StatusError 0x21 when refused)."""
        return self._run(ops.acquire(name, resources, maximum))

    def release(self, name: Name, resources: int) -> None:
        """Releases resources this connection acquired."""
        return self._run(ops.release(name, resources))

    def stats(self, server: Optional[str] = None) -> dict[str, str]:
        """The server's statistics, name to value, in its order."""
        return self._run(ops.stats(server))

    def dump(self, server: Optional[str] = None) -> list[p.DumpRecord]:
        """Every counter of a server."""
        return self._run(ops.dump(server))

    def queues(self, server: Optional[str] = None) -> list[p.QueueRecord]:
        """Every counter of a server that has waiters."""
        return self._run(ops.queues(server))

    def wait_acquire_start(self, name: Name, resources: int, maximum: int,
                           wait_ms: int, lease_ms: int = 0) -> p.WaitAnswer:
        """Sends a Wait_acquire and returns its answer (granted now or
        queued) without waiting for the event that follows a queued one."""
        return self._run(ops.wait_acquire(name, resources, maximum,
                                          wait_ms, lease_ms))

    def renew(self, name: Name, lease_ms: int) -> int:
        """Renews this connection's grant on name; returns its lease id."""
        return self._run(ops.renew(name, lease_ms))

    def wait_release(self, name: Name) -> int:
        """Cancels a queued wait (0) or returns a grant (its resources)."""
        return self._run(ops.wait_release(name))

    def ttl_insert(self, name: Name, quota: int, ttl: int,
                   unit: int = p.Unit.S) -> None:
        """Creates a TTL counter (StatusError 0x28 while one lives)."""
        return self._run(ops.ttl_insert(name, quota, ttl, unit))

    def ttl_query(self, name: Name) -> p.TtlView:
        """A TTL counter's quota and time left."""
        return self._run(ops.ttl_query(name))

    def ttl_update(self, name: Name, attribute: int, change: int, value: int,
                   unit: int = p.Unit.S) -> p.TtlView:
        """Changes a TTL counter's quota or TTL; returns the new view."""
        return self._run(ops.ttl_update(name, attribute, change, value, unit))

    def ttl_purge(self, name: Name) -> None:
        """Removes a TTL counter."""
        return self._run(ops.ttl_purge(name))

    def window_check(self, name: Name, limit: int, cost: int = 1,
                     window_ns: int = 0, slots: int = 0,
                     peek: bool = False) -> p.CheckAnswer:
        """A sliding-window check (limit per window_ns, default 1 s)."""
        return self._run(ops.window_check(name, limit, cost, window_ns,
                                          slots, peek))

    def gcra_check(self, name: Name, burst: int, count: int, period_ns: int,
                   cost: int = 1, peek: bool = False) -> p.CheckAnswer:
        """A GCRA check: count per period_ns with a burst."""
        return self._run(ops.gcra_check(name, burst, count, period_ns, cost,
                                        peek))

    def multi_check(self, items: list[Union[p.WindowItem, p.GcraItem]],
                    peek: bool = False) -> p.MultiAnswer:
        """Up to 16 checks as one, all charged or none; every item must
        map to the same server."""
        return self._run(self._multi(items, peek))

    def auth(self, secret: Union[str, bytes],
             server: Optional[str] = None) -> None:
        """Authenticates the connection to a server (privileged opcodes)."""
        return self._run(ops.auth(secret, server))

    def throttle(self, tenant: Name, units: int) -> p.ThrottleAnswer:
        """Charges units to a tenant: allowed, or throttled with a reason
        and retry_after_ns."""
        return self._run(ops.throttle(tenant, units))

    def tenant_show(self, tenant: Name) -> p.TenantView:
        """A tenant's settings and counts."""
        return self._run(ops.tenant_show(tenant))

    def tenant_list(self, server: Optional[str] = None) -> list[p.TenantView]:
        """Every tenant record of a server."""
        return self._run(ops.tenant_list(server))

    def node_show(self, server: Optional[str] = None) -> p.NodeView:
        """A server's capacity and counts this second."""
        return self._run(ops.node_show(server))

    def tenant_set(self, tenant: Name, reserved: Optional[int] = None,
                   hard_limit: Optional[int] = None) -> None:
        """Sets a tenant's reserve and/or hard limit (privileged)."""
        return self._run(ops.tenant_set(tenant, reserved, hard_limit))

    def tenant_remove(self, tenant: Name) -> None:
        """Puts a tenant back to the defaults (privileged)."""
        return self._run(ops.tenant_remove(tenant))

    def node_set(self, capacity: int, server: Optional[str] = None) -> None:
        """Sets a server's capacity, units per second (privileged)."""
        return self._run(ops.node_set(capacity, server))

    def tenant_set_json(self, tenant: Name,
                        document: Union[dict, str, bytes]) -> dict:
        """Configures a tenant with a JSON document, {"reserved": N,
        "hard_limit": N or "unlimited"} (privileged); returns the tenant's
        settings after it."""
        return self._run(ops.tenant_set_json(tenant, document))

    def node_set_json(self, document: Union[dict, str, bytes],
                      server: Optional[str] = None) -> dict:
        """Sets a server's capacity with a JSON document, {"capacity": N}
        (privileged); returns what was applied."""
        return self._run(ops.node_set_json(document, server))

    def unthrottle(self, server: Optional[str] = None) -> None:
        """Makes this connection's charges always allowed (privileged)."""
        return self._run(ops.unthrottle(server))

    def reload(self, server: Optional[str] = None) -> None:
        """Reads the server's throttle settings file again (privileged)."""
        return self._run(ops.reload(server))

    def _multi(self, items: list[Union[p.WindowItem, p.GcraItem]],
               peek: bool) -> Request[p.MultiAnswer]:
        req = ops.multi_check(items, peek)
        router: Router = self._router()
        first = router.server_for(req.key or b"")
        for it in items:
            other = router.server_for(p.name_bytes(it.name))
            if other != first:
                raise ValueError("multi-check items are on different "
                                 "servers: %r on %s, %r on %s"
                                 % (items[0].name, first, it.name, other))
        return req

    def _router(self) -> Router:
        raise NotImplementedError


def run_streamed(req: Request, packet: p.Packet) -> bool:
    """Adds one packet of a streamed answer to req.records; True when it
    was the end marker (status 0, empty body)."""
    p.check_status(packet)
    if not packet.body:
        return True
    req.records.append(req.decode(packet))
    return False


class _Conn:
    """One socket to one server, with its read buffer."""

    def __init__(self, index: int, label: str, sock: socket.socket) -> None:
        self.index = index
        self.label = label
        self.sock = sock
        self.buf = bytearray()
        self.next_opaque = p.TEXT_PROBE_OPAQUE
        self.closed = False

    def opaque(self) -> int:
        o = self.next_opaque
        self.next_opaque = (o + 1) & p.U32_MAX or 1
        return o

    def read_packet(self, deadline: Optional[float]) -> p.Packet:
        """The next packet (answer or event); TimeoutError at deadline,
        ConnectionError when the server closed."""
        while True:
            try:
                got = p.decode_packet(self.buf)
            except p.MemcachePortError:
                raise p.MemcachePortError(self.label) from None
            if got is not None:
                pkt, used = got
                del self.buf[:used]
                return pkt
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer from %s in time"
                                       % self.label)
                self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError("no answer from %s in time"
                                   % self.label) from None
            if not data:
                raise ConnectionError("%s closed the connection"
                                      % self.label)
            self.buf += data

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass


class Lease:
    """A granted Wait_acquire: its lease id (a fencing token), renew(),
    release(); as a context manager it releases on exit. lost becomes True
    when the server reports the lease expired or shut down."""

    def __init__(self, client: "Client", conn: _Conn, name: bytes,
                 opaque: int, lease_id: int, resources: int,
                 consumption: int) -> None:
        self.client = client
        self.name = name
        self.lease_id = lease_id
        self.resources = resources
        self.consumption = consumption
        self.server = conn.label
        self.lost = False
        self.released = False
        self._conn = conn
        self._opaque = opaque

    @property
    def id(self) -> int:
        """The lease id."""
        return self.lease_id

    def renew(self, lease_ms: int) -> int:
        """Extends the lease to lease_ms from now; returns the lease id."""
        return self.client._run_on(self._conn, ops.renew(self.name, lease_ms))

    def release(self) -> int:
        """Returns the grant; returns the resources given back."""
        try:
            n = self.client._run_on(self._conn, ops.wait_release(self.name))
        finally:
            self.released = True
            self.client._leases.pop((self._conn, self._opaque), None)
        return n

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.released:
            try:
                self.release()
            except (p.StatusError, p.ServerDown):
                # A lost lease answers 0x27 (or its server is gone): that
                # was reported through lost; an exception already on its
                # way out matters more than this one.
                if exc[0] is None and not self.lost:
                    raise


class Client(_Ops, QuotaMixin):
    """A blocking client for a list of servers.

    servers: "host:port[:weight],..." or a list of (host, port[, weight]);
    names map to servers by ketama. timeout: seconds per call. secret: the
    admin secret, sent with Auth on every new connection.
    remap_rate_limits: move TTL, window, GCRA and multi-check names to the
    next live server when theirs is down (other names raise ServerDown).
    retry_ms: how long a server that failed is left alone. on_event: a
    callable given each event as it is read. max_lease: get_lease's batch
    size (1: every call asks the server).
    """

    def __init__(self, servers: ServerSpec, timeout: Optional[float] = 5.0,
                 secret: Union[str, bytes, None] = None,
                 remap_rate_limits: bool = False, retry_ms: int = 1000,
                 on_event: Optional[Callable[[p.Event], None]] = None,
                 max_lease: int = 1) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive")
        self.allowances = Allowances(max_lease)
        self.router = Router(servers, remap_rate_limits, retry_ms)
        self.timeout = timeout
        self.secret = secret
        self.on_event = on_event
        self._conns: dict[int, _Conn] = {}
        self._events: collections.deque[p.Event] = collections.deque(
            maxlen=EVENT_BACKLOG)
        self._wait_events: dict[tuple[int, int], p.Event] = {}
        self._waiting: set[tuple[int, int]] = set()
        self._leases: dict[tuple[_Conn, int], Lease] = {}

    # -- public helpers -----------------------------------------------------

    def server_for(self, name: Name) -> str:
        """The "host:port" a name maps to."""
        return self.router.server_for(p.name_bytes(name))

    def close(self) -> None:
        """Closes every connection (the servers release what they held)."""
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pipeline(self) -> "Pipeline":
        """A batch of requests sent together, one round trip per server."""
        return Pipeline(self)

    def events(self, timeout: float = 0.0) -> list[p.Event]:
        """The events received so far, oldest first (and forgotten here).
        With none pending, waits up to timeout seconds for some."""
        if not self._events and timeout > 0:
            self._poll_events(time.monotonic() + timeout)
        else:
            self._poll_events(None)
        out = list(self._events)
        self._events.clear()
        return out

    def wait_acquire(self, name: Name, resources: int, maximum: int,
                     wait_ms: int, lease_ms: int = 0) -> Lease:
        """Waits up to wait_ms for resources of name; returns the Lease.
        Raises WaitTimedOut when the server drops the wait, StatusError
        for a refusal (0x21 when wait_ms is 0 and they do not fit)."""
        req = ops.wait_acquire(name, resources, maximum, wait_ms, lease_ms)
        conn = self._pick(req)
        ans: p.WaitAnswer = self._exchange(conn, [req])[0]
        n = p.name_bytes(name)
        if ans.granted:
            lease = Lease(self, conn, n, req.opaque, ans.lease_id, resources,
                          ans.consumption)
            self._leases[(conn, req.opaque)] = lease
            return lease
        key = (conn.index, req.opaque)
        self._waiting.add(key)
        try:
            deadline = None
            if wait_ms != p.GROUP_DEFAULT:
                deadline = time.monotonic() + wait_ms / 1000.0 + \
                    (self.timeout or 5.0)
            ev = self._await_event(conn, key, deadline)
        except TimeoutError as timed_out:
            # The server did not say in time: cancel the wait (a grant
            # that raced this is returned by the same request). If the
            # cancel fails too, the timeout is still what the caller must
            # see; the cancel's failure comes along as its cause.
            try:
                self._run_on(conn, ops.wait_release(n))
            except Exception as e:
                raise timed_out from e
            raise
        finally:
            self._waiting.discard(key)
            self._wait_events.pop(key, None)
        if ev.kind == p.EventKind.GRANTED:
            lease = Lease(self, conn, n, req.opaque, ev.lease_id, resources,
                          ev.value)
            self._leases[(conn, req.opaque)] = lease
            return lease
        if ev.kind == p.EventKind.TIMED_OUT:
            raise p.WaitTimedOut("wait for %r timed out" % (name,))
        raise p.ServerDown(conn.label, "shut down while waiting")

    # -- machinery ----------------------------------------------------------

    def _router(self) -> Router:
        return self.router

    def _run(self, req: Request) -> Any:
        return self._exchange(self._pick(req), [req])[0]

    def _run_on(self, conn: _Conn, req: Request) -> Any:
        """Runs req on one given connection (a lease's), which must still
        be the client's connection to that server."""
        if conn.closed or self._conns.get(conn.index) is not conn:
            raise p.ServerDown(conn.label, "the lease's connection is gone")
        return self._exchange(conn, [req])[0]

    def _indexes(self, req: Request) -> list[int]:
        if req.key is None or req.server is not None:
            return [self.router.node(req.server)]
        return self.router.candidates(req.key, req.remap)

    def _pick(self, req: Request) -> _Conn:
        """The connection req goes on, by the failure policy."""
        err: Optional[p.ServerDown] = None
        for idx in self._indexes(req):
            conn = self._conns.get(idx)
            if conn is not None:
                return conn
            if self.router.is_down(idx):
                err = err or p.ServerDown(self.router.labels[idx],
                                          "failed recently; retried later")
                continue
            try:
                return self._connect(idx)
            except p.ServerDown as e:
                err = err or e
        assert err is not None
        raise err

    def _connect(self, idx: int) -> _Conn:
        host, port, _ = self.router.servers[idx]
        label = self.router.labels[idx]
        try:
            s = socket.create_connection((host, port), timeout=self.timeout)
        except OSError as e:
            self.router.mark_down(idx)
            raise p.ServerDown(label, str(e)) from None
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(idx, label, s)
        self._conns[idx] = conn
        self.router.mark_up(idx)
        if self.secret is not None:
            try:
                self._exchange(conn, [ops.auth(self.secret, label)])
            except Exception:
                self._drop(conn)
                raise
        return conn

    def _drop(self, conn: _Conn) -> None:
        conn.close()
        if self._conns.get(conn.index) is conn:
            del self._conns[conn.index]
        for key in [k for k in self._leases if k[0] is conn]:
            self._leases.pop(key).lost = True

    def _deadline(self) -> Optional[float]:
        return None if self.timeout is None else \
            time.monotonic() + self.timeout

    def _exchange(self, conn: _Conn, reqs: list[Request],
                  raise_on_error: bool = True) -> list[Any]:
        """Sends reqs in one write and reads their answers in order. A
        lost connection raises ServerDown (the server is marked down); a
        timeout closes the connection (its answers would come out of step)
        and raises TimeoutError."""
        out = []
        for r in reqs:
            r.opaque = conn.opaque()
            r.records = []
            out.append(p.encode_packet(r.opcode, r.body, r.opaque))
        deadline = self._deadline()
        results: list[Any] = []
        try:
            conn.sock.settimeout(self.timeout)
            conn.sock.sendall(b"".join(out))
            for r in reqs:
                results.append(self._read_result(conn, r, deadline))
        except TimeoutError:
            # As after any failure (and as the C library does), the server
            # is left alone for retry_ms.
            self._drop(conn)
            self.router.mark_down(conn.index)
            raise
        except (OSError, ConnectionError) as e:
            self._drop(conn)
            self.router.mark_down(conn.index)
            raise p.ServerDown(conn.label, str(e)) from None
        except p.ProtocolError:
            self._drop(conn)
            raise
        if raise_on_error:
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        return results

    def _read_result(self, conn: _Conn, req: Request,
                     deadline: Optional[float]) -> Any:
        while True:
            pkt = self._read_answer(conn, deadline)
            if pkt.opaque != req.opaque or pkt.opcode != req.opcode:
                raise p.ProtocolError(
                    "answer 0x%02x/%d does not match request 0x%02x/%d"
                    % (pkt.opcode, pkt.opaque, req.opcode, req.opaque))
            try:
                if not req.stream:
                    return req.decode(pkt)
                if run_streamed(req, pkt):
                    recs = req.records
                    return [_with_server(x, conn.label) for x in recs]
            except p.StatusError as e:
                return e

    def _read_answer(self, conn: _Conn, deadline: Optional[float]
                     ) -> p.Packet:
        while True:
            pkt = conn.read_packet(deadline)
            if pkt.magic == p.MAGIC_EVENT:
                self._event(conn, pkt)
                continue
            return pkt

    def _event(self, conn: _Conn, pkt: p.Packet) -> None:
        ev = p.decode_event(pkt, conn.label)
        key = (conn.index, ev.opaque)
        if key in self._waiting:
            self._wait_events[key] = ev
        lease = self._leases.get((conn, ev.opaque))
        if lease is not None and ev.kind in (p.EventKind.LEASE_EXPIRED,
                                             p.EventKind.SHUTDOWN):
            lease.lost = True
        self._events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    def _await_event(self, conn: _Conn, key: tuple[int, int],
                     deadline: Optional[float]) -> p.Event:
        """Reads conn (nothing else is in flight on it) until the event of
        key arrives."""
        while key not in self._wait_events:
            try:
                pkt = conn.read_packet(deadline)
            except TimeoutError:
                raise
            except (OSError, ConnectionError) as e:
                self._drop(conn)
                self.router.mark_down(conn.index)
                raise p.ServerDown(conn.label, str(e)) from None
            except p.ProtocolError:
                self._drop(conn)
                raise
            if pkt.magic != p.MAGIC_EVENT:
                self._drop(conn)
                raise p.ProtocolError("an answer nothing asked for")
            self._event(conn, pkt)
        return self._wait_events.pop(key)

    def _poll_events(self, deadline: Optional[float]) -> None:
        """Reads what the open connections have (events only: nothing is
        in flight) until some event came or deadline passed (None: just
        what is there now)."""
        conns = [c for c in self._conns.values() if not c.closed]
        if not conns:
            if deadline is not None:
                time.sleep(max(0.0, deadline - time.monotonic()))
            return
        with selectors.DefaultSelector() as sel:
            for c in conns:
                sel.register(c.sock, selectors.EVENT_READ, c)
            while True:
                left = 0.0 if deadline is None else \
                    max(0.0, deadline - time.monotonic())
                ready = sel.select(left)
                for key, _ in ready:
                    c: _Conn = key.data
                    try:
                        c.sock.settimeout(0)
                        data = c.sock.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(c.sock)
                        self._drop(c)
                        self.router.mark_down(c.index)
                        continue
                    c.buf += data
                    try:
                        self._take_events(c)
                    except p.ProtocolError:
                        # The stream cannot be trusted past this point.
                        self._drop(c)
                        raise
                if deadline is None or self._events or \
                        time.monotonic() >= deadline or not sel.get_map():
                    return

    def _take_events(self, c: _Conn) -> None:
        """Handles the whole packets in c's buffer, which must be events."""
        while True:
            got = p.decode_packet(c.buf)
            if got is None:
                return
            pkt, used = got
            del c.buf[:used]
            if pkt.magic != p.MAGIC_EVENT:
                raise p.ProtocolError("an answer nothing asked for from %s"
                                      % c.label)
            self._event(c, pkt)


def _with_server(rec: Any, label: str) -> Any:
    """A record with its server's label filled in."""
    if hasattr(rec, "server"):
        import dataclasses
        return dataclasses.replace(rec, server=label)
    return rec


class _Batch(_Ops):
    """What both pipelines share: the operations queue their requests
    (returning None) for an execute() of the pipeline's own."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._reqs: list[Request] = []

    def _router(self) -> Router:
        return self.client.router

    def _run(self, req: Request) -> Any:
        self._reqs.append(req)
        return None

    def __len__(self) -> int:
        return len(self._reqs)


class Pipeline(_Batch):
    """Requests queued by the same methods as the client's (they return
    None here), then sent by execute(): one write and one round trip per
    server, answers in order. Not for wait_acquire's Lease helper."""

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: object) -> None:
        self._reqs.clear()

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Sends the queued requests and returns their results in the
        order they were queued. A StatusError is raised after every answer
        was read, or with raise_on_error=False put in its result's place."""
        reqs, self._reqs = self._reqs, []
        groups: dict[int, list[int]] = {}
        conns: dict[int, _Conn] = {}
        for i, r in enumerate(reqs):
            conn = self.client._pick(r)
            conns[conn.index] = conn
            groups.setdefault(conn.index, []).append(i)
        results: list[Any] = [None] * len(reqs)
        for idx, members in groups.items():
            # In chunks: a batch whose answers overfill both sockets'
            # buffers before this side reads would stall both ends.
            for k in range(0, len(members), PIPELINE_CHUNK):
                part = members[k:k + PIPELINE_CHUNK]
                got = self.client._exchange(conns[idx],
                                            [reqs[i] for i in part],
                                            raise_on_error=False)
                for i, r in zip(part, got):
                    results[i] = r
        if raise_on_error:
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        return results
