"""What a remoting server and client share: invoking requests on a connection, and serving them.

Port of org.apache.rocketmq.remoting.netty.NettyRemotingAbstract (invokeSyncImpl, invokeAsyncImpl,
invokeOnewayImpl, processMessageReceived, scanResponseTable, failFast). Both ends can send requests
over one connection and answer the other's, so both own a response table, a processor registry and
permits. Everything here runs on the owner loop (`owner_loop`), the loop that started the endpoint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from rocketq.common.service import PeriodicService
from rocketq.remoting.errors import RemotingConnectError, RemotingTooMuchRequestError
from rocketq.remoting.protocol.command import RPC_ONEWAY, RemotingCommand, next_opaque
from rocketq.remoting.protocol.compiled import constructor
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.transport.connection import Connection
from rocketq.remoting.transport.dispatch import (
    Dispatcher,
    Executor,
    ProcessorRegistry,
    RequestProcessor,
    RequestTimer,
)
from rocketq.remoting.transport.hooks import RPCHook, has_after_response, run_after, run_before
from rocketq.remoting.transport.response_table import Permits, ResponseFuture, ResponseTable

_new_response_future = constructor(ResponseFuture)  # every field, positionally

log = logging.getLogger("rocketq.remoting")


class ConnectionListener:
    """Connection events (Java's ChannelEventListener); override what you need. Called on the owner loop."""

    def on_connect(self, conn: Connection) -> None:
        return None

    def on_close(self, conn: Connection) -> None:
        return None

    def on_idle(self, conn: Connection) -> None:
        return None

    def on_exception(self, conn: Connection) -> None:
        return None


def _closed_error(rf: ResponseFuture) -> RemotingConnectError:
    conn = rf.conn
    return RemotingConnectError(
        f"connection to {conn.remote_addr} closed ({conn.close_reason}) before the response to request "
        f"code {rf.request.code} (opaque {rf.opaque}) came"
    )


class RemotingEndpoint:
    """Response table, processors, hooks, listeners and the invoke_* primitives on a connection."""

    def __init__(self, *, async_permits: int, oneway_permits: int, scan_interval_ms: int) -> None:
        self.owner_loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by _bind_loop
        self.registry = ProcessorRegistry()
        self.rpc_hooks: list[RPCHook] = []
        self._rpc_after_hooks: list[RPCHook] = []  # those of rpc_hooks with after-response work
        # Hooks around the requests the peer sends us only (ACL verification must not see our own).
        self.request_hooks: list[RPCHook] = []
        self._request_after_hooks: list[RPCHook] = []  # those of request_hooks with after-response work
        self.listeners: list[ConnectionListener] = []
        self.dispatcher = Dispatcher(self.registry, self.request_hooks, after_hooks=self._request_after_hooks)
        self.responses: ResponseTable = None  # type: ignore[assignment]
        self._async_permits = Permits("async", async_permits)
        self._oneway_permits = Permits("oneway", oneway_permits)
        self._scan = PeriodicService("remoting-response-scan", scan_interval_ms / 1000, self._scan_once)

    # -- set-up -----------------------------------------------------------------------------------
    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self.owner_loop is None:
            self.owner_loop = loop
            self.responses = ResponseTable(loop)
            self.dispatcher.loop = loop
        elif self.owner_loop is not loop:
            raise RuntimeError("a remoting endpoint is used from one event loop only")

    def register_rpc_hook(self, hook: RPCHook) -> None:
        """Run `hook` around every request, the ones we send and the ones we serve (Java's RPCHook)."""
        self.rpc_hooks.append(hook)
        if has_after_response(hook):
            self._rpc_after_hooks.append(hook)
        self.register_request_hook(hook)

    def register_request_hook(self, hook: RPCHook) -> None:
        """Run `hook` around the requests we serve only (a verifier, such as ACL's)."""
        self.request_hooks.append(hook)
        if has_after_response(hook):
            self._request_after_hooks.append(hook)

    def time_requests(self, timer: RequestTimer | None) -> None:
        """Time every request we serve with `timer` (rocketmq_rpc_latency); None stops timing."""
        self.dispatcher.timer = timer

    def add_connection_listener(self, listener: ConnectionListener) -> None:
        self.listeners.append(listener)

    def _register(self, code: int, processor: RequestProcessor, executor: Executor) -> None:
        self.registry.register(code, processor, executor)
        self._adopt_executor(executor)

    def _adopt_executor(self, executor: Executor) -> None:
        """Requests this executor drops after waiting too long are answered by our dispatcher."""
        if executor.on_expired is None:
            executor.on_expired = self.dispatcher.expire

    async def _scan_once(self) -> None:
        self.responses.scan()

    # -- ConnectionOwner (owner loop) -------------------------------------------------------------
    def on_commands(self, conn: Connection, cmds: list[RemotingCommand]) -> None:
        # Each request is admitted (conn.admit) just before it is dispatched, after the answers of the
        # ones before it: a request over the connection's limits waits in its backlog instead.
        if len(cmds) == 1:  # the common case under light load; one response needs no corking
            cmd = cmds[0]
            if cmd.flag & 1:
                self.responses.complete(cmd)
            elif conn.admit(cmd):
                self.dispatcher.dispatch(conn, cmd)
            return
        complete = self.responses.complete
        dispatcher = self.dispatcher
        dispatch = dispatcher.dispatch
        batchable = self.registry.batchable
        admit = conn.admit
        # Consecutive requests of codes taken together (registry.batchable, one entry) form a run,
        # dispatched as one when something else comes, a request waits for room, or the read ends.
        run: list[RemotingCommand] = []
        run_entry = None
        # Corked: what processors answer at once while we go through this batch leaves as one write.
        conn.cork()
        try:
            for cmd in cmds:
                if cmd.flag & 1:
                    complete(cmd)
                    continue
                admitted = admit(cmd)
                entry = batchable.get(cmd.code) if admitted and not cmd.flag & 2 else None
                if run and entry is not run_entry:
                    dispatcher.dispatch_run(conn, run_entry, run)  # type: ignore[arg-type]
                    run = []
                if entry is not None:
                    run.append(cmd)
                    run_entry = entry
                elif admitted:
                    dispatch(conn, cmd)
            if run:
                dispatcher.dispatch_run(conn, run_entry, run)  # type: ignore[arg-type]
        finally:
            conn.uncork()
        if conn.backlog_size:  # what the uncork wrote may have left room already
            conn.schedule_backlog()

    def on_backlog_ready(self, conn: Connection) -> None:
        """Dispatch a connection's backlogged requests while its limits allow, one at a time."""
        dispatch = self.dispatcher.dispatch
        conn.cork()
        try:
            while (cmd := conn.next_admitted()) is not None:
                dispatch(conn, cmd)
        finally:
            conn.uncork()
        if conn.backlog_size:
            conn.schedule_backlog()

    def on_connection_made(self, conn: Connection) -> None:
        self._notify("on_connect", conn)

    def on_connection_lost(self, conn: Connection, exc: BaseException | None) -> None:
        if self.responses is not None:
            failed = self.responses.fail_connection(conn, _closed_error)
            if failed:
                log.info("connection %s closed: %d pending requests failed at once", conn.remote_addr, failed)
        self._notify("on_close", conn)

    def on_idle(self, conn: Connection) -> None:
        self._notify("on_idle", conn)

    def on_frame_error(self, conn: Connection, exc: FrameError) -> None:
        self._notify("on_exception", conn)

    def _notify(self, event: str, conn: Connection) -> None:
        for listener in self.listeners:
            try:
                getattr(listener, event)(conn)
            except Exception:
                log.exception("connection listener %s.%s failed", type(listener).__name__, event)

    # -- invoking requests on a connection (owner loop) -------------------------------------------
    def _prepare(self, cmd: RemotingCommand) -> None:
        if cmd.opaque == 0 or cmd.opaque in self.responses:
            cmd.opaque = next_opaque()

    def _send_sync(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float) -> asyncio.Future[Any]:
        """Send `cmd` and register it in the response table; the future gets its response or error.

        The frame is written before the request is registered: nothing can answer it before this
        loop runs again (a selector loop hands responses over through this one), and the peer starts
        on it while we register. A request that cannot be sent is never registered.
        """
        hooks = self.rpc_hooks
        if hooks:
            run_before(hooks, conn.remote_addr, cmd)
        table = self.responses
        opaque = cmd.opaque
        pending = table._pending
        if opaque == 0 or opaque in pending:  # _prepare, inlined on the hot path
            cmd.opaque = opaque = next_opaque()
        conn.send_request(cmd, bool(pending))  # with others in flight: coalesced with them
        loop = self.owner_loop
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        deadline, timeout = loop.time() + timeout_ms / 1000, int(timeout_ms)
        rf = _new_response_future(opaque, conn, cmd, fut, deadline, timeout, None)
        # table.insert, inlined: this runs once per request
        pending[opaque] = rf
        group = table._by_timeout.get(timeout)
        if group is None:
            group = table._by_timeout[timeout] = {}
        group[opaque] = rf
        if table._timer is None or deadline < table._timer_at:
            table._arm(deadline)
        return fut

    async def _invoke_sync_on(
        self, conn: Connection, cmd: RemotingCommand, timeout_ms: float
    ) -> RemotingCommand:
        fut = self._send_sync(conn, cmd, timeout_ms)
        try:
            response: RemotingCommand = await fut
        except asyncio.CancelledError:
            self.responses.discard(cmd.opaque)
            raise
        if self.rpc_hooks:
            run_after(self.rpc_hooks, conn.remote_addr, cmd, response)
        return response

    def _start_async_on(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        deadline: float,
        timeout_ms: float,
        fut: asyncio.Future[RemotingCommand],
    ) -> None:
        """Send `cmd` holding an async permit already; `fut` gets the response or the error."""
        hooks = self.rpc_hooks
        try:
            if hooks:
                run_before(hooks, conn.remote_addr, cmd)
            self._prepare(cmd)
            rf = ResponseFuture(
                cmd.opaque, conn, cmd, fut, deadline, int(timeout_ms), self._async_permits.release
            )
            self.responses.add(rf)
        except Exception as exc:  # a hook refused it: the caller sees the error on its future
            self._async_permits.release()
            if not fut.done():
                fut.set_exception(exc)
            return
        try:
            conn.send_request(cmd)
        except Exception as exc:
            self.responses.fail(rf.opaque, exc)
            return
        if hooks:
            fut.add_done_callback(lambda f: self._after_async(conn, cmd, f))

    def _after_async(
        self, conn: Connection, cmd: RemotingCommand, fut: asyncio.Future[RemotingCommand]
    ) -> None:
        if not fut.cancelled() and fut.exception() is None:
            try:
                run_after(self.rpc_hooks, conn.remote_addr, cmd, fut.result())
            except Exception:
                log.exception("rpc hook failed after an async response")

    async def _acquire_async_permit(self, timeout_ms: float) -> None:
        if not await self._async_permits.acquire(timeout_ms / 1000):
            raise RemotingTooMuchRequestError(
                f"invokeAsync: too many requests in flight ({self._async_permits.limit} permits), "
                f"none free within {timeout_ms:.0f}ms"
            )

    async def _invoke_oneway_on(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float) -> None:
        cmd.flag |= RPC_ONEWAY
        permits = self._oneway_permits
        if not permits.try_acquire() and not await permits.acquire(timeout_ms / 1000):
            raise RemotingTooMuchRequestError(
                f"invokeOneway: too many oneway requests in flight ({permits.limit} permits), "
                f"none free within {timeout_ms:.0f}ms"
            )
        try:
            if self.rpc_hooks:
                run_before(self.rpc_hooks, conn.remote_addr, cmd)
            self._prepare(cmd)
            conn.send_request(cmd)
            # The permit is held while the peer is not reading (Java releases it when the write completes).
            if not conn.is_writable:
                await asyncio.wait_for(conn.drain(), timeout_ms / 1000)
        except TimeoutError:
            pass  # queued; the connection's own bound handles a peer that never reads
        finally:
            permits.release()

    # -- shutdown ---------------------------------------------------------------------------------
    async def _close_connections(self, conns: Iterable[Connection], timeout_s: float) -> None:
        """Flush and close `conns`, waiting at most `timeout_s` before aborting what is left."""
        conns = [c for c in conns if c.transport is not None]
        for conn in conns:
            conn.close("shutdown")
        if not conns:
            return
        waits = [asyncio.ensure_future(c.wait_closed()) for c in conns]
        _done, pending = await asyncio.wait(waits, timeout=max(timeout_s, 0.01))
        if pending:
            for conn in conns:
                conn.abort()
            await asyncio.wait(pending, timeout=1.0)
            for w in pending:
                w.cancel()

    def _fail_all_pending(self, why: str) -> None:
        if self.responses is not None:
            self.responses.fail_all(
                lambda rf: RemotingConnectError(f"{why}: request code {rf.request.code} abandoned")
            )
