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
from typing import Any, Callable, Optional, TypeVar, Union

from . import ops
from . import protocol as p
from .ketama import Router, ServerSpec
from .ops import BatchRunner, Operations
from .protocol import Request
from .quota import Allowances, QuotaMixin

T = TypeVar("T")

Name = Union[str, bytes]
#: The most events kept for events() before the oldest are dropped.
EVENT_BACKLOG = 65536
#: The most requests a pipeline writes before reading their answers.
PIPELINE_CHUNK = 1024


def check_one_server(router: Router, req: Request[Any]) -> None:
    """Refuses a multi-check whose items map to different servers (the
    server checks them as one, so they must live on one)."""
    if len(req.names) < 2:
        return
    first = router.server_for(req.names[0])
    for n in req.names[1:]:
        other = router.server_for(n)
        if other != first:
            raise ValueError("multi-check items are on different servers: "
                             "%r on %s, %r on %s"
                             % (req.names[0], first, n, other))


def run_streamed(req: Request[Any], packet: p.Packet) -> bool:
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
    """A granted Wait_acquire: its lease_id (a fencing token), renew(),
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

    def renew(self, lease: Optional[float]) -> int:
        """Extends the lease to lease seconds from now (None: the group's
        lease); returns the lease id."""
        return self.client._run_on(self._conn, ops.renew(self.name, lease))

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


class Client(QuotaMixin, Operations):
    """A blocking client for a list of servers.

    servers: "host:port[:weight],..." or a list of (host, port[, weight]);
    names map to servers by ketama. timeout: seconds per call. secret: the
    admin secret, sent with Auth on every new connection; with user, the
    user's secret, and every new connection logs in as that user with
    Auth_user instead (nonblocking: as auth_user's).
    remap_rate_limits: move TTL, window, GCRA and multi-check names to the
    next live server when theirs is down (other names raise ServerDown).
    retry_after: seconds a server that failed is left alone. on_event: a
    callable given each event as it is read. max_lease: get_lease's batch
    size (1: every call asks the server).
    """

    def __init__(self, servers: ServerSpec, timeout: Optional[float] = 5.0,
                 secret: Union[str, bytes, None] = None,
                 remap_rate_limits: bool = False, retry_after: float = 1.0,
                 on_event: Optional[Callable[[p.Event], None]] = None,
                 max_lease: int = 1,
                 user: Union[str, bytes, None] = None,
                 nonblocking: bool = False) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive")
        ops.login_request(user, secret, nonblocking, None)
        self.allowances = Allowances(max_lease)
        self.router = Router(servers, remap_rate_limits, retry_after)
        self.timeout = timeout
        self.secret = secret
        self.user = user
        self.nonblocking = nonblocking
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
                     wait: Optional[float],
                     lease: Optional[float] = 0) -> Lease:
        """Waits up to wait seconds for resources of name (None: the
        group's wait); returns the Lease, which lasts lease seconds
        unrenewed (0: until released; None: the group's lease). Raises
        WaitTimedOut when the server drops the wait, a StatusError for a
        refusal (Busy when wait is 0 and they do not fit)."""
        req = ops.wait_acquire(name, resources, maximum, wait, lease)
        conn = self._pick(req)
        ans: p.WaitAnswer = self._exchange(conn, [req])[0]
        n = p.name_bytes(name)
        if ans.granted:
            held = Lease(self, conn, n, req.opaque, ans.lease_id, resources,
                         ans.consumption)
            self._leases[(conn, req.opaque)] = held
            return held
        key = (conn.index, req.opaque)
        self._waiting.add(key)
        try:
            deadline = None
            if wait is not None:
                deadline = time.monotonic() + wait + (self.timeout or 5.0)
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
            held = Lease(self, conn, n, req.opaque, ev.lease_id, resources,
                         ev.value)
            self._leases[(conn, req.opaque)] = held
            return held
        if ev.kind == p.EventKind.TIMED_OUT:
            raise p.WaitTimedOut("wait for %r timed out" % (name,))
        raise p.ServerDown(conn.label, "shut down while waiting")

    # -- machinery ----------------------------------------------------------

    def _run(self, req: Request[T]) -> T:
        check_one_server(self.router, req)
        result: T = self._exchange(self._pick(req), [req])[0]
        return result

    def _run_on(self, conn: _Conn, req: Request[T]) -> T:
        """Runs req on one given connection (a lease's), which must still
        be the client's connection to that server."""
        if conn.closed or self._conns.get(conn.index) is not conn:
            raise p.ServerDown(conn.label, "the lease's connection is gone")
        result: T = self._exchange(conn, [req])[0]
        return result

    def _indexes(self, req: Request[Any]) -> list[int]:
        if req.key is None or req.server is not None:
            return [self.router.node(req.server)]
        return self.router.candidates(req.key, req.remap)

    def _pick(self, req: Request[Any]) -> _Conn:
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
        login = ops.login_request(self.user, self.secret, self.nonblocking,
                              label)
        if login is not None:
            try:
                self._exchange(conn, [login])
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

    def _exchange(self, conn: _Conn, reqs: list[Request[Any]],
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
            # is left alone for retry_after.
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

    def _read_result(self, conn: _Conn, req: Request[Any],
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
                    c = key.data
                    assert isinstance(c, _Conn)
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


class _Batch(BatchRunner, Operations):
    """What both pipelines share: the operations queue their requests
    (returning None) for an execute() of the pipeline's own."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._reqs: list[Request[Any]] = []

    def _run(self, req: Request[Any]) -> None:
        check_one_server(self.client.router, req)
        self._reqs.append(req)

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
