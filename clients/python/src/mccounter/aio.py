"""The asyncio client: the blocking client's operations as coroutines. Each
connection has a reader task that hands answers to the waiting futures in
request order (the server answers in order) and events to
`async for ev in client.events()`; leases can renew themselves in the
background and report their loss.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
from typing import Any, AsyncIterator, Optional, Union

from . import ops
from . import protocol as p
from .client import EVENT_BACKLOG, _Batch, run_streamed
from .ketama import Router, ServerSpec
from .protocol import Request
from .quota import Allowances, AsyncQuotaMixin

Name = Union[str, bytes]


def _seen(fut: asyncio.Future) -> None:
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
        self.pending: collections.deque[tuple[Request, asyncio.Future]] = \
            collections.deque()
        self.next_opaque = p.TEXT_PROBE_OPAQUE
        self.closed = False
        self.task = asyncio.get_running_loop().create_task(self._read_loop())

    def send(self, req: Request) -> asyncio.Future:
        """Writes req and returns the future of its result."""
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
    """A granted Wait_acquire on one connection. With auto_renew the lease
    renews itself every lease_ms / 3. lost becomes True (a bool, as on the
    blocking Lease) when the server reports it expired or shut down, or a
    renewal fails; await wait_lost() to wait for that."""

    def __init__(self, client: "AsyncClient", conn: _AConn, name: bytes,
                 opaque: int, lease_id: int, resources: int, consumption: int,
                 lease_ms: int) -> None:
        self.client = client
        self.name = name
        self.lease_id = lease_id
        self.resources = resources
        self.consumption = consumption
        self.lease_ms = lease_ms
        self.server = conn.label
        self._lost = asyncio.Event()
        self.lost_reason: Optional[str] = None
        self.released = False
        self._conn = conn
        self._opaque = opaque
        self._renewer: Optional[asyncio.Task] = None

    @property
    def id(self) -> int:
        """The lease id (a fencing token)."""
        return self.lease_id

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
        """Renews in the background every lease_ms / 3 until released."""
        if self._renewer is None and 0 < self.lease_ms < p.GROUP_DEFAULT:
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_loop())

    async def _renew_loop(self) -> None:
        while not self.released and not self.lost:
            await asyncio.sleep(self.lease_ms / 3000.0)
            if self.released or self.lost:
                return
            try:
                await self.renew(self.lease_ms)
            except (p.CounterError, OSError, asyncio.TimeoutError) as e:
                self._lose("renewal failed: %s" % e)
                return

    async def renew(self, lease_ms: int) -> int:
        """Extends the lease to lease_ms from now; returns the lease id."""
        return await self.client._run_on(self._conn,
                                         ops.renew(self.name, lease_ms))

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


class AsyncClient(AsyncQuotaMixin):
    """The asyncio client; same arguments and operations as Client (each a
    coroutine). Close it with `await client.close()` or `async with`."""

    def __init__(self, servers: ServerSpec, timeout: Optional[float] = 5.0,
                 secret: Union[str, bytes, None] = None,
                 remap_rate_limits: bool = False, retry_ms: int = 1000,
                 max_lease: int = 1) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive")
        self.allowances = Allowances(max_lease)
        self.router = Router(servers, remap_rate_limits, retry_ms)
        self.timeout = timeout
        self.secret = secret
        self._conns: dict[int, _AConn] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        # Events not yet taken (the oldest dropped past EVENT_BACKLOG, as
        # in the blocking client), the futures of the events() iterators
        # waiting for more, and how many times the client was closed: an
        # iterator ends once the client closed after it started, so that
        # every one of them ends, however many there are.
        self._events: collections.deque[p.Event] = collections.deque(
            maxlen=EVENT_BACKLOG)
        self._event_waiters: list[asyncio.Future] = []
        self._closes = 0
        # Closed and not connected since: events() has nothing to wait for.
        self._closed = False
        self._waits: dict[tuple[_AConn, int], asyncio.Future] = {}
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

    def _indexes(self, req: Request) -> list[int]:
        if req.key is None or req.server is not None:
            return [self.router.node(req.server)]
        return self.router.candidates(req.key, req.remap)

    async def _pick(self, req: Request) -> _AConn:
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
            if self.secret is not None:
                try:
                    await self._await(conn, conn.send(
                        ops.auth(self.secret, label)))
                except Exception:
                    await conn.close()
                    self._lost(conn, mark_down=False)
                    raise
            return conn

    async def _await(self, conn: _AConn, fut: asyncio.Future) -> Any:
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.timeout)
        except asyncio.TimeoutError:
            # The answers would come out of step: drop the connection, and
            # leave the server alone for retry_ms as after any failure
            # (_fail marks it down only while the connection is open, so
            # it goes before close()).
            conn._fail("timed out")
            await conn.close()
            raise

    async def _run(self, req: Request) -> Any:
        conn = await self._pick(req)
        return await self._await(conn, conn.send(req))

    async def _run_on(self, conn: _AConn, req: Request) -> Any:
        if conn.closed or self._conns.get(conn.index) is not conn:
            raise p.ServerDown(conn.label, "the lease's connection is gone")
        return await self._await(conn, conn.send(req))

    async def gather(self, *reqs: Request) -> list[Any]:
        """Pipelines requests built by mccounter.ops: all written before
        any answer is awaited; results (or exceptions) in order."""
        futs = []
        for r in reqs:
            conn = await self._pick(r)
            futs.append((conn, conn.send(r)))
        out = []
        for conn, f in futs:
            try:
                out.append(await self._await(conn, f))
            except p.CounterError as e:
                out.append(e)
        return out

    # -- operations ---------------------------------------------------------

    async def noop(self, server: Optional[str] = None) -> None:
        """Noop: checks that a server answers."""
        return await self._run(ops.noop(server))

    async def get(self, name: Name) -> int:
        """The counter's current consumption."""
        return await self._run(ops.get(name))

    async def acquire(self, name: Name, resources: int, maximum: int) -> int:
        """Acquires resources if the consumption stays at most maximum."""
        return await self._run(ops.acquire(name, resources, maximum))

    async def release(self, name: Name, resources: int) -> None:
        """Releases resources this connection acquired."""
        return await self._run(ops.release(name, resources))

    async def stats(self, server: Optional[str] = None) -> dict[str, str]:
        """The server's statistics."""
        return await self._run(ops.stats(server))

    async def dump(self, server: Optional[str] = None
                   ) -> list[p.DumpRecord]:
        """Every counter of a server."""
        return await self._run(ops.dump(server))

    async def queues(self, server: Optional[str] = None
                     ) -> list[p.QueueRecord]:
        """Every counter of a server that has waiters."""
        return await self._run(ops.queues(server))

    async def wait_acquire_start(self, name: Name, resources: int,
                                 maximum: int, wait_ms: int,
                                 lease_ms: int = 0) -> p.WaitAnswer:
        """Sends a Wait_acquire and returns its first answer."""
        return await self._run(ops.wait_acquire(name, resources, maximum,
                                                wait_ms, lease_ms))

    async def wait_acquire(self, name: Name, resources: int, maximum: int,
                           wait_ms: int, lease_ms: int = 0,
                           auto_renew: bool = False) -> AsyncLease:
        """Waits up to wait_ms for resources of name; returns the lease
        (renewing itself every lease_ms / 3 with auto_renew). Raises
        WaitTimedOut when the server drops the wait."""
        req = ops.wait_acquire(name, resources, maximum, wait_ms, lease_ms)
        conn = await self._pick(req)
        fut = conn.send(req)
        key = (conn, req.opaque)
        self._unmade.add(key)
        try:
            return await self._finish_wait(conn, req, fut, name, resources,
                                           wait_ms, lease_ms, auto_renew)
        finally:
            self._unmade.discard(key)
            self._early_loss.pop(key, None)

    async def _finish_wait(self, conn: _AConn, req: Request,
                           fut: asyncio.Future, name: Name, resources: int,
                           wait_ms: int, lease_ms: int,
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
                if wait_ms == p.GROUP_DEFAULT:
                    ev: p.Event = await evf
                else:
                    ev = await asyncio.wait_for(
                        evf, wait_ms / 1000.0 + (self.timeout or 5.0))
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
        lease = AsyncLease(self, conn, n, req.opaque, lid, resources, cons,
                           lease_ms)
        early = self._early_loss.pop((conn, req.opaque), None)
        if early is not None:
            lease._lose(early)
        else:
            self._leases[(conn, req.opaque)] = lease
        if auto_renew:
            lease.start_renewal()
        return lease

    def _abandon_wait(self, conn: _AConn, fut: asyncio.Future,
                      name: bytes) -> None:
        """Gives back a Wait_acquire nobody will take: once its answer
        came and said queued or granted, a Wait_release (which cancels a
        queued wait and returns a grant, even one that raced this) is
        written without waiting for its answer, since the caller may be a
        cancelled task; the answer and any failure are dropped by the
        future's _seen callback. A refused wait (an error answer) holds
        nothing, and releasing then could return another grant this
        connection holds on the name."""
        def settle(answer: asyncio.Future) -> None:
            if answer.cancelled() or answer.exception() is not None:
                return
            if conn.closed or self._conns.get(conn.index) is not conn:
                return      # a closed connection ended its waits
            try:
                conn.send(ops.wait_release(name))
            except p.ServerDown:
                pass
        if fut.done():
            settle(fut)
        else:
            fut.add_done_callback(settle)

    async def lease(self, name: Name, resources: int, maximum: int,
                    wait_ms: int, lease_ms: int) -> AsyncLease:
        """wait_acquire with background renewal: the lease helper. Use as
        `async with await client.lease(...) as l:`; l.lost reports loss."""
        return await self.wait_acquire(name, resources, maximum, wait_ms,
                                       lease_ms, auto_renew=True)

    async def renew(self, name: Name, lease_ms: int) -> int:
        """Renews this connection's grant on name; returns its lease id."""
        return await self._run(ops.renew(name, lease_ms))

    async def wait_release(self, name: Name) -> int:
        """Cancels a queued wait (0) or returns a grant (its resources)."""
        return await self._run(ops.wait_release(name))

    async def ttl_insert(self, name: Name, quota: int, ttl: int,
                         unit: int = p.Unit.S) -> None:
        """Creates a TTL counter."""
        return await self._run(ops.ttl_insert(name, quota, ttl, unit))

    async def ttl_query(self, name: Name) -> p.TtlView:
        """A TTL counter's quota and time left."""
        return await self._run(ops.ttl_query(name))

    async def ttl_update(self, name: Name, attribute: int, change: int,
                         value: int, unit: int = p.Unit.S) -> p.TtlView:
        """Changes a TTL counter's quota or TTL."""
        return await self._run(ops.ttl_update(name, attribute, change,
                                              value, unit))

    async def ttl_purge(self, name: Name) -> None:
        """Removes a TTL counter."""
        return await self._run(ops.ttl_purge(name))

    async def window_check(self, name: Name, limit: int, cost: int = 1,
                           window_ns: int = 0, slots: int = 0,
                           peek: bool = False) -> p.CheckAnswer:
        """A sliding-window check."""
        return await self._run(ops.window_check(name, limit, cost,
                                                window_ns, slots, peek))

    async def gcra_check(self, name: Name, burst: int, count: int,
                         period_ns: int, cost: int = 1,
                         peek: bool = False) -> p.CheckAnswer:
        """A GCRA check."""
        return await self._run(ops.gcra_check(name, burst, count, period_ns,
                                              cost, peek))

    async def multi_check(self, items: list[Union[p.WindowItem, p.GcraItem]],
                          peek: bool = False) -> p.MultiAnswer:
        """Up to 16 checks as one; every item must map to one server."""
        req = ops.multi_check(items, peek)
        first = self.router.server_for(req.key or b"")
        for it in items:
            other = self.router.server_for(p.name_bytes(it.name))
            if other != first:
                raise ValueError("multi-check items are on different "
                                 "servers: %r on %s, %r on %s"
                                 % (items[0].name, first, it.name, other))
        return await self._run(req)

    async def auth(self, secret: Union[str, bytes],
                   server: Optional[str] = None) -> None:
        """Authenticates the connection to a server."""
        return await self._run(ops.auth(secret, server))

    async def throttle(self, tenant: Name, units: int) -> p.ThrottleAnswer:
        """Charges units to a tenant."""
        return await self._run(ops.throttle(tenant, units))

    async def tenant_show(self, tenant: Name) -> p.TenantView:
        """A tenant's settings and counts."""
        return await self._run(ops.tenant_show(tenant))

    async def tenant_list(self, server: Optional[str] = None
                          ) -> list[p.TenantView]:
        """Every tenant record of a server."""
        return await self._run(ops.tenant_list(server))

    async def node_show(self, server: Optional[str] = None) -> p.NodeView:
        """A server's capacity and counts this second."""
        return await self._run(ops.node_show(server))

    async def tenant_set(self, tenant: Name, reserved: Optional[int] = None,
                         hard_limit: Optional[int] = None) -> None:
        """Sets a tenant's reserve and/or hard limit (privileged)."""
        return await self._run(ops.tenant_set(tenant, reserved, hard_limit))

    async def tenant_remove(self, tenant: Name) -> None:
        """Puts a tenant back to the defaults (privileged)."""
        return await self._run(ops.tenant_remove(tenant))

    async def node_set(self, capacity: int,
                       server: Optional[str] = None) -> None:
        """Sets a server's capacity (privileged)."""
        return await self._run(ops.node_set(capacity, server))

    async def tenant_set_json(self, tenant: Name,
                              document: Union[dict, str, bytes]) -> dict:
        """Configures a tenant with a JSON document (privileged)."""
        return await self._run(ops.tenant_set_json(tenant, document))

    async def node_set_json(self, document: Union[dict, str, bytes],
                            server: Optional[str] = None) -> dict:
        """Sets a server's capacity with a JSON document (privileged)."""
        return await self._run(ops.node_set_json(document, server))

    async def unthrottle(self, server: Optional[str] = None) -> None:
        """Makes this connection's charges always allowed (privileged)."""
        return await self._run(ops.unthrottle(server))

    async def reload(self, server: Optional[str] = None) -> None:
        """Reads the throttle settings file again (privileged)."""
        return await self._run(ops.reload(server))


class AsyncPipeline(_Batch):
    """Requests queued by the blocking client's method names (they return
    None here), then written together by `await execute()`; results in
    the order queued. Not for the lease helpers."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Sends the queued requests; a StatusError is raised after every
        answer came, or with raise_on_error=False put in its place."""
        reqs, self._reqs = self._reqs, []
        results = await self.client.gather(*reqs)
        if raise_on_error:
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        return results
