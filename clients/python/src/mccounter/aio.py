"""The asyncio client: the blocking client's operations as coroutines (the
same descriptions, mccounter.ops.Operations). Each connection has a reader
task that hands answers to the waiting futures in request order (the
server answers in order) and events to `async for ev in client.events()`;
its writer is drained when its buffer passes the high-water mark, so a
fast producer waits for the socket instead of growing the buffer; leases
can renew themselves in the background and report their loss.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
from typing import Any, AsyncIterator, Optional, TypeVar, Union

from . import ops
from . import protocol as p
from .client import EVENT_BACKLOG, _Batch, check_one_server, run_streamed
from .ketama import Router, ServerSpec
from .ops import Operations
from .protocol import Request
from .quota import Allowances, AsyncQuotaMixin

Name = Union[str, bytes]
T = TypeVar("T")
Future = asyncio.Future[Any]


def _seen(fut: Future) -> None:
    if not fut.cancelled():
        fut.exception()


class _AConn:
    """One connection: its streams, reader task and pending requests."""

    def __init__(self, client: "AsyncClient", index: int, label: str,
                 reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.client = client
        self.index = index
        self.label = label
        self.reader = reader
        self.writer = writer
        self.pending: collections.deque[tuple[Request[Any], Future]] = \
            collections.deque()
        self.next_opaque = p.TEXT_PROBE_OPAQUE
        self.closed = False
        self.task = asyncio.get_running_loop().create_task(self._read_loop())

    async def send(self, req: Request[Any]) -> Future:
        """Writes req and returns the future of its result, once the
        writer's buffer is below its high-water mark again (the transport
        pauses the writer above it): memory stays bounded when requests
        come faster than the server reads them."""
        fut = self.send_nowait(req)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError):
            # The reader sees the loss too and fails every pending future,
            # this one included: the caller learns it from the future.
            pass
        return fut

    def send_nowait(self, req: Request[Any]) -> Future:
        """Writes req without waiting for the buffer to drain (for a
        callback that cannot wait); returns the future of its result."""
        if self.closed:
            raise p.ServerDown(self.label, "connection closed")
        req.opaque = self.next_opaque
        self.next_opaque = (self.next_opaque + 1) & p.U32_MAX or 1
        req.records = []
        fut = asyncio.get_running_loop().create_future()
        # Marks a failure as seen even when its caller gave up waiting
        # (cancelled), so asyncio does not log it as never retrieved.
        fut.add_done_callback(_seen)
        self.pending.append((req, fut))
        self.writer.write(p.encode_packet(req.opcode, req.body, req.opaque))
        return fut

    async def _read_loop(self) -> None:
        buf = bytearray()
        why = "closed by the server"
        memcache = False
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                buf += data
                while True:
                    got = p.decode_packet(buf)
                    if got is None:
                        break
                    pkt, used = got
                    del buf[:used]
                    if pkt.magic == p.MAGIC_EVENT:
                        self.client._event(self, pkt)
                    else:
                        self._answer(pkt)
        except asyncio.CancelledError:
            why = "closed"
        except p.MemcachePortError:
            why, memcache = "", True
        except (OSError, p.ProtocolError) as e:
            why = str(e)
        self._fail(why, memcache)

    def _answer(self, pkt: p.Packet) -> None:
        if not self.pending:
            raise p.ProtocolError("an answer nothing asked for")
        req, fut = self.pending[0]
        if pkt.opaque != req.opaque or pkt.opcode != req.opcode:
            raise p.ProtocolError("answer does not match its request")
        try:
            if req.stream:
                if not run_streamed(req, pkt):
                    return
                result: Any = [dataclasses.replace(r, server=self.label)
                               for r in req.records]
            else:
                result = req.decode(pkt)
        except p.CounterError as e:
            self.pending.popleft()
            if not fut.done():
                fut.set_exception(e)
            return
        self.pending.popleft()
        if not fut.done():
            fut.set_result(result)

    def _fail(self, why: str, memcache: bool = False) -> None:
        was_open = not self.closed
        self.closed = True
        while self.pending:
            _, fut = self.pending.popleft()
            if not fut.done():
                fut.set_exception(p.MemcachePortError(self.label) if memcache
                                  else p.ServerDown(self.label, why))
        self.client._lost(self, mark_down=was_open)
        try:
            self.writer.close()
        except RuntimeError:
            pass

    async def close(self) -> None:
        """Closes the connection and waits for its reader to end."""
        self.closed = True
        if self.writer.transport.get_write_buffer_size():
            # Requests still unsent have no one to answer them: a server
            # that stopped reading would otherwise keep the close waiting
            # for the buffer to flush, forever.
            self.writer.transport.abort()
        else:
            self.writer.close()
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


class AsyncLease:
    """A granted Wait_acquire on one connection: its lease_id (a fencing
    token). With auto_renew the lease renews itself every third of its
    lease. lost becomes True (a bool, as on the blocking Lease) when the
    server reports it expired or shut down, or a renewal fails; await
    wait_lost() to wait for that."""

    def __init__(self, client: "AsyncClient", conn: _AConn, name: bytes,
                 opaque: int, lease_id: int, resources: int, consumption: int,
                 lease: Optional[float]) -> None:
        self.client = client
        self.name = name
        self.lease_id = lease_id
        self.resources = resources
        self.consumption = consumption
        self.lease = lease
        self.server = conn.label
        self._lost = asyncio.Event()
        self.lost_reason: Optional[str] = None
        self.released = False
        self._conn = conn
        self._opaque = opaque
        self._renewer: Optional[asyncio.Task[None]] = None

    @property
    def lost(self) -> bool:
        """True once the lease is no longer held (see lost_reason)."""
        return self._lost.is_set()

    async def wait_lost(self) -> None:
        """Returns when the lease is lost (at once if it already is)."""
        await self._lost.wait()

    def _lose(self, why: str) -> None:
        if not self._lost.is_set():
            self.lost_reason = why
            self._lost.set()

    def start_renewal(self) -> None:
        """Renews in the background every third of the lease until
        released (nothing to do without a lease of its own)."""
        if self._renewer is None and self.lease:
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_loop())

    async def _renew_loop(self) -> None:
        assert self.lease
        while not self.released and not self.lost:
            await asyncio.sleep(self.lease / 3)
            if self.released or self.lost:
                return
            try:
                await self.renew(self.lease)
            except (p.CounterError, OSError, asyncio.TimeoutError) as e:
                self._lose("renewal failed: %s" % e)
                return

    async def renew(self, lease: Optional[float]) -> int:
        """Extends the lease to lease seconds from now (None: the group's
        lease); returns the lease id."""
        return await self.client._run_on(self._conn,
                                         ops.renew(self.name, lease))

    async def release(self) -> int:
        """Stops the renewal and returns the grant (its resources)."""
        self.released = True
        if self._renewer is not None:
            self._renewer.cancel()
        self.client._leases.pop((self._conn, self._opaque), None)
        return await self.client._run_on(self._conn,
                                         ops.wait_release(self.name))

    async def __aenter__(self) -> "AsyncLease":
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not self.released:
            try:
                await self.release()
            except (p.StatusError, p.ServerDown):
                if exc[0] is None and not self.lost:
                    raise


class AsyncClient(AsyncQuotaMixin, Operations):
    """The asyncio client; same arguments and operations as Client (each a
    coroutine). Close it with `await client.close()` or `async with`."""

    def __init__(self, servers: ServerSpec, timeout: Optional[float] = 5.0,
                 secret: Union[str, bytes, None] = None,
                 remap_rate_limits: bool = False, retry_after: float = 1.0,
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
        self._conns: dict[int, _AConn] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        # Events not yet taken (the oldest dropped past EVENT_BACKLOG, as
        # in the blocking client), the futures of the events() iterators
        # waiting for more, and how many times the client was closed: an
        # iterator ends once the client closed after it started, so that
        # every one of them ends, however many there are.
        self._events: collections.deque[p.Event] = collections.deque(
            maxlen=EVENT_BACKLOG)
        self._event_waiters: list[Future] = []
        self._closes = 0
        # Closed and not connected since: events() has nothing to wait for.
        self._closed = False
        self._waits: dict[tuple[_AConn, int], Future] = {}
        self._leases: dict[tuple[_AConn, int], AsyncLease] = {}
        # Wait_acquire requests of wait_acquire() whose lease object is not
        # made yet, and the loss an event reported for one meanwhile (the
        # reader may run ahead of the coroutine that makes the lease).
        self._unmade: set[tuple[_AConn, int]] = set()
        self._early_loss: dict[tuple[_AConn, int], str] = {}

    def server_for(self, name: Name) -> str:
        """The "host:port" a name maps to."""
        return self.router.server_for(p.name_bytes(name))

    async def close(self) -> None:
        """Closes every connection; events() iterators end."""
        conns = list(self._conns.values())
        self._conns.clear()
        for c in conns:
            await c.close()
        self._closes += 1
        self._closed = True
        self._wake_event_waiters()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def events(self) -> AsyncIterator[p.Event]:
        """Every event, in the order received, as they come; ends when the
        client is closed (after the events received before it)."""
        started = self._closes
        while True:
            while self._events:
                yield self._events.popleft()
            if self._closes != started or self._closed:
                return
            fut = asyncio.get_running_loop().create_future()
            self._event_waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._event_waiters:
                    self._event_waiters.remove(fut)

    def pending_events(self) -> list[p.Event]:
        """The events received and not yet taken, without waiting."""
        out = list(self._events)
        self._events.clear()
        return out

    def _wake_event_waiters(self) -> None:
        """Wakes every waiting events() iterator (an event came, or the
        client closed); each one looks again for itself."""
        waiters, self._event_waiters = self._event_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def pipeline(self) -> "AsyncPipeline":
        """A batch of requests written together; `await p.execute()`."""
        return AsyncPipeline(self)

    # -- machinery ----------------------------------------------------------

    def _event(self, conn: _AConn, pkt: p.Packet) -> None:
        ev = p.decode_event(pkt, conn.label)
        fut = self._waits.pop((conn, ev.opaque), None)
        if fut is not None and not fut.done():
            fut.set_result(ev)
        if ev.kind in (p.EventKind.LEASE_EXPIRED, p.EventKind.SHUTDOWN):
            why = ev.kind_name.replace("_", " ")
            lease = self._leases.get((conn, ev.opaque))
            if lease is not None:
                lease._lose(why)
            elif (conn, ev.opaque) in self._unmade:
                self._early_loss[(conn, ev.opaque)] = why
        self._events.append(ev)
        self._wake_event_waiters()

    def _lost(self, conn: _AConn, mark_down: bool) -> None:
        if self._conns.get(conn.index) is conn:
            del self._conns[conn.index]
            if mark_down:
                self.router.mark_down(conn.index)
        for key in [k for k in self._waits if k[0] is conn]:
            fut = self._waits.pop(key)
            if not fut.done():
                fut.set_exception(p.ServerDown(conn.label, "connection lost"))
        for key in [k for k in self._leases if k[0] is conn]:
            self._leases.pop(key)._lose("connection lost")
        for key in [k for k in self._unmade if k[0] is conn]:
            self._early_loss.setdefault(key, "connection lost")

    def _indexes(self, req: Request[Any]) -> list[int]:
        if req.key is None or req.server is not None:
            return [self.router.node(req.server)]
        return self.router.candidates(req.key, req.remap)

    async def _pick(self, req: Request[Any]) -> _AConn:
        err: Optional[p.ServerDown] = None
        for idx in self._indexes(req):
            conn = self._conns.get(idx)
            if conn is not None and not conn.closed:
                return conn
            if self.router.is_down(idx):
                err = err or p.ServerDown(self.router.labels[idx],
                                          "failed recently; retried later")
                continue
            try:
                return await self._connect(idx)
            except p.ServerDown as e:
                err = err or e
        assert err is not None
        raise err

    async def _connect(self, idx: int) -> _AConn:
        lock = self._locks.setdefault(idx, asyncio.Lock())
        async with lock:
            conn = self._conns.get(idx)
            if conn is not None and not conn.closed:
                return conn
            host, port, _ = self.router.servers[idx]
            label = self.router.labels[idx]
            try:
                r, w = await asyncio.wait_for(
                    asyncio.open_connection(host, port), self.timeout)
            except (OSError, asyncio.TimeoutError) as e:
                self.router.mark_down(idx)
                raise p.ServerDown(label, str(e) or "connect timed out") \
                    from None
            conn = _AConn(self, idx, label, r, w)
            self._conns[idx] = conn
            self._closed = False
            self.router.mark_up(idx)
            login = ops.login_request(self.user, self.secret, self.nonblocking,
                                  label)
            if login is not None:
                try:
                    await self._await(conn, await conn.send(login))
                except Exception:
                    await conn.close()
                    self._lost(conn, mark_down=False)
                    raise
            return conn

    async def _await(self, conn: _AConn, fut: Future) -> Any:
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.timeout)
        except asyncio.TimeoutError:
            # The answers would come out of step: drop the connection, and
            # leave the server alone for retry_after as after any failure
            # (_fail marks it down only while the connection is open, so
            # it goes before close()).
            conn._fail("timed out")
            await conn.close()
            raise

    async def _run(self, req: Request[T]) -> T:
        check_one_server(self.router, req)
        conn = await self._pick(req)
        result: T = await self._await(conn, await conn.send(req))
        return result

    async def _run_on(self, conn: _AConn, req: Request[T]) -> T:
        if conn.closed or self._conns.get(conn.index) is not conn:
            raise p.ServerDown(conn.label, "the lease's connection is gone")
        result: T = await self._await(conn, await conn.send(req))
        return result

    async def gather(self, *reqs: Request[Any],
                     return_exceptions: bool = False) -> list[Any]:
        """Pipelines requests built by mccounter.ops (all written before
        any answer is awaited) and returns their results in order. As with
        asyncio.gather, the first failure (in request order) is raised,
        unless return_exceptions is true: then a CounterError takes its
        request's place in the list."""
        futs = []
        for r in reqs:
            check_one_server(self.router, r)
            conn = await self._pick(r)
            futs.append((conn, await conn.send(r)))
        out: list[Any] = []
        for conn, f in futs:
            try:
                out.append(await self._await(conn, f))
            except p.CounterError as e:
                if not return_exceptions:
                    raise
                out.append(e)
        return out

    # -- the lease helper ---------------------------------------------------

    async def wait_acquire(self, name: Name, resources: int, maximum: int,
                           wait: Optional[float],
                           lease: Optional[float] = 0,
                           auto_renew: bool = False) -> AsyncLease:
        """Waits up to wait seconds for resources of name (None: the
        group's wait); returns the lease, of lease seconds (0: until
        released; None: the group's), renewing itself every third of it
        with auto_renew. Raises WaitTimedOut when the server drops the
        wait."""
        req = ops.wait_acquire(name, resources, maximum, wait, lease)
        conn = await self._pick(req)
        fut = await conn.send(req)
        key = (conn, req.opaque)
        self._unmade.add(key)
        try:
            return await self._finish_wait(conn, req, fut, name, resources,
                                           wait, lease, auto_renew)
        finally:
            self._unmade.discard(key)
            self._early_loss.pop(key, None)

    async def _finish_wait(self, conn: _AConn, req: Request[Any],
                           fut: Future, name: Name, resources: int,
                           wait: Optional[float], lease: Optional[float],
                           auto_renew: bool) -> AsyncLease:
        # The event may follow the answer in the same read: be ready.
        evf = asyncio.get_running_loop().create_future()
        evf.add_done_callback(_seen)
        self._waits[(conn, req.opaque)] = evf
        n = p.name_bytes(name)
        try:
            ans: p.WaitAnswer = await self._await(conn, fut)
            if ans.granted:
                lid, cons = ans.lease_id, ans.consumption
            else:
                if wait is None:
                    ev: p.Event = await evf
                else:
                    ev = await asyncio.wait_for(
                        evf, wait + (self.timeout or 5.0))
                if ev.kind == p.EventKind.TIMED_OUT:
                    raise p.WaitTimedOut("wait for %r timed out" % (name,))
                if ev.kind != p.EventKind.GRANTED:
                    raise p.ServerDown(conn.label, "shut down while waiting")
                lid, cons = ev.lease_id, ev.value
        except p.WaitTimedOut:
            # The server dropped the wait itself: nothing to give back.
            raise
        except BaseException:
            # Cancelled (asyncio.wait_for timing out around us included),
            # no event in time, or lost: the server may still hold the
            # wait or its grant with nobody left to release it.
            self._abandon_wait(conn, fut, n)
            raise
        finally:
            self._waits.pop((conn, req.opaque), None)
        held = AsyncLease(self, conn, n, req.opaque, lid, resources, cons,
                          lease)
        early = self._early_loss.pop((conn, req.opaque), None)
        if early is not None:
            held._lose(early)
        else:
            self._leases[(conn, req.opaque)] = held
        if auto_renew:
            held.start_renewal()
        return held

    def _abandon_wait(self, conn: _AConn, fut: Future,
                      name: bytes) -> None:
        """Gives back a Wait_acquire nobody will take: once its answer
        came and said queued or granted, a Wait_release (which cancels a
        queued wait and returns a grant, even one that raced this) is
        written without waiting for its answer, since the caller may be a
        cancelled task; the answer and any failure are dropped by the
        future's _seen callback. A refused wait (an error answer) holds
        nothing, and releasing then could return another grant this
        connection holds on the name."""
        def settle(answer: Future) -> None:
            if answer.cancelled() or answer.exception() is not None:
                return
            if conn.closed or self._conns.get(conn.index) is not conn:
                return      # a closed connection ended its waits
            try:
                conn.send_nowait(ops.wait_release(name))
            except p.ServerDown:
                pass
        if fut.done():
            settle(fut)
        else:
            fut.add_done_callback(settle)

    async def lease(self, name: Name, resources: int, maximum: int,
                    wait: Optional[float], lease: float) -> AsyncLease:
        """wait_acquire with background renewal: the lease helper. Use as
        `async with await client.lease(...) as l:`; l.lost reports loss."""
        return await self.wait_acquire(name, resources, maximum, wait,
                                       lease, auto_renew=True)


class AsyncPipeline(_Batch):
    """Requests queued by the blocking client's method names (they return
    None here), then written together by `await execute()`; results in
    the order queued. Not for the lease helpers."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Sends the queued requests; a StatusError is raised after every
        answer came, or with raise_on_error=False put in its place."""
        reqs, self._reqs = self._reqs, []
        results: list[Any] = await self.client.gather(
            *reqs, return_exceptions=True)
        if raise_on_error:
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        return results
