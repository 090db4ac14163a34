"""RemotingClient: one connection per address, sync / async / oneway requests, and server callbacks.

Port of org.apache.rocketmq.remoting.netty.NettyRemotingClient (getAndCreateChannel, invokeSync,
invokeAsync, invokeOneway, closeChannel). The client lives on the loop that first uses it. A
connection is opened on demand (concurrent callers share one attempt) and re-opened on the next call
after it failed or closed; when it closes, every request pending on it fails at once. Requests that a
server sends over the same connection (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE) go to
the processors registered here. Deviation: no namesrv address rotation here (the SDK picks the
address); `clientCloseSocketIfTimeout` defaults to false (see config.py).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Any

from rocketq.common.service import ServiceState, spawn
from rocketq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    map_exceptions,
)
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import codec_negotiation
from rocketq.remoting.transport.client_settings import ClientSettings
from rocketq.remoting.transport.connection import Connection, ConnectionSettings
from rocketq.remoting.transport.dispatch import Executor, RequestProcessor
from rocketq.remoting.transport.endpoint import RemotingEndpoint
from rocketq.remoting.transport.hooks import run_after

if TYPE_CHECKING:
    from rocketq.remoting.transport.config import ClientConfig

log = logging.getLogger("rocketq.remoting")

# A connect that times out is a connect failure (Java: RemotingConnectException), not a request timeout.
# Read on every request of start_sync: module names, not enum members read through their class.
_JSON, _MSGPACK = SerializeType.JSON, SerializeType.MSGPACK
_AGREED = codec_negotiation.AGREED_ATTRIBUTE
_CONNECT_ERRORS = {OSError: RemotingConnectError, asyncio.IncompleteReadError: RemotingConnectError}


def parse_addr(addr: str) -> tuple[str, int]:
    """("host", port) of "host:port" / "[v6]:port"; RemotingConnectError when malformed."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RemotingConnectError(f"bad address {addr!r}: expected host:port")
    return host.strip("[]"), int(port)


class RemotingClient(RemotingEndpoint):
    """A RocketMQ remoting client (shared by every producer/consumer of one client instance).

    Usage::

        client = RemotingClient()
        response = await client.invoke_sync("127.0.0.1:9876", request, timeout_ms=3000)
        await client.shutdown()
    """

    def __init__(
        self, config: ClientConfig | ClientSettings | None = None, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        # The defaults without the validated ClientConfig: no pydantic to import in a process that only pulls.
        self.config = config or ClientSettings()
        self.ssl_context = ssl_context  # TLS on every connection (tls.client_context builds one)
        c = self.config
        super().__init__(
            async_permits=c.client_async_semaphore_value,
            oneway_permits=c.client_oneway_semaphore_value,
            scan_interval_ms=c.response_scan_interval_ms,
        )
        self.executor = Executor("remoting-client", c.client_worker_threads, c.client_queue_capacity)
        self.settings = ConnectionSettings(
            idle_s=c.client_channel_max_idle_time_s,
            high_water=c.write_buffer_high_water_mark_bytes,
            low_water=c.write_buffer_low_water_mark_bytes,
            max_write_buffer=c.max_write_buffer_bytes,
            max_frame_length=c.max_frame_length_bytes,
        )
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}
        # CREATE_JUST until the first connection (_ensure_started), STOPPING from the first line of
        # shutdown() on: a connection that completes during shutdown is closed, not kept.
        self._state = ServiceState.CREATE_JUST
        # Offer msgpack headers on each connection and write JSON requests as msgpack once the server
        # accepted (see codec_negotiation); off by default: the caller's serialize type is kept.
        self.negotiate_msgpack = False

    def register_processor(
        self, code: int, processor: RequestProcessor, executor: Executor | None = None
    ) -> None:
        """Serve requests with `code` that a server sends us over our connection."""
        self._register(code, processor, executor or self.executor)

    # -- connections -------------------------------------------------------------------------------
    async def _ensure_started(self) -> None:
        if self._closed:
            raise RemotingConnectError("the remoting client is shut down")
        if self._state is ServiceState.CREATE_JUST:
            self._bind_loop()
            self._state = ServiceState.RUNNING
            await self._scan.start()

    def is_connected(self, addr: str) -> bool:
        conn = self._conns.get(addr)
        return conn is not None and conn.is_active

    async def get_connection(self, addr: str) -> Connection:
        """The open connection to `addr`, opening it if needed. Raises RemotingConnectError."""
        conn = self._conns.get(addr)
        if conn is not None and conn.is_active:
            return conn
        await self._ensure_started()
        task = self._connecting.get(addr)
        if task is None:
            task = self.owner_loop.create_task(self._connect(addr), name=f"remoting-connect-{addr}")
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connect_done(addr, t))
        return await asyncio.shield(task)

    def _connect_done(self, addr: str, task: asyncio.Task[Connection]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # retrieved here, so an attempt nobody awaits any more is not reported

    async def _connect(self, addr: str) -> Connection:
        host, port = parse_addr(addr)
        timeout_s = self.config.connect_timeout_ms / 1000
        ctx = self.ssl_context
        where = f"TLS connect to {addr} (TLS handshake included)" if ctx is not None else f"connect to {addr}"
        with map_exceptions(where, _CONNECT_ERRORS):
            async with asyncio.timeout(timeout_s):
                if ctx is None:
                    _transport, conn = await self.owner_loop.create_connection(
                        lambda: Connection(self, self.settings), host, port
                    )
                else:
                    _transport, conn = await self.owner_loop.create_connection(
                        lambda: Connection(self, self.settings),
                        host,
                        port,
                        ssl=ctx,
                        server_hostname=host,
                        ssl_handshake_timeout=timeout_s,
                    )
        conn.attributes["addr"] = addr
        if self._closed:
            conn.close("client shut down")
            raise RemotingConnectError("the remoting client is shut down")
        old = self._conns.get(addr)
        if old is not None and old is not conn:
            old.close("replaced by a new connection")
        self._conns[addr] = conn
        log.info("connected to %s (%s)", addr, conn.local_addr)
        return conn

    def on_connection_lost(self, conn: Connection, exc: BaseException | None) -> None:
        addr = conn.attributes.get("addr")
        if addr is not None and self._conns.get(addr) is conn:
            del self._conns[addr]
        super().on_connection_lost(conn, exc)

    def close_connection(self, addr: str) -> None:
        """Close the connection to `addr` (pending requests on it fail at once); the next call reconnects."""
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close("closed by the client")

    # -- invocations --------------------------------------------------------------------------------
    async def invoke_sync(self, addr: str, cmd: RemotingCommand, timeout_ms: float = 3000) -> RemotingCommand:
        """Send `cmd` to `addr` and wait for its response.

        Raises:
            RemotingConnectError: no connection could be opened, or it closed before the response.
            RemotingSendRequestError: the request could not be written.
            RemotingTimeoutError: no response within `timeout_ms` (connecting included).
        """
        conn = self._conns.get(addr)
        if conn is None or conn._closing:  # is_active, inlined (a connection in _conns has its transport)
            begin = asyncio.get_running_loop().time()
            conn = await self.get_connection(addr)
            timeout_ms -= (self.owner_loop.time() - begin) * 1000
            if timeout_ms <= 0:
                raise RemotingTimeoutError(
                    f"invokeSync call the addr[{addr}] timeout (connecting took it all)"
                )
        offered = False
        if self.negotiate_msgpack and cmd.serialize_type == SerializeType.JSON:
            if conn.attributes.get(codec_negotiation.AGREED_ATTRIBUTE) is None:
                codec_negotiation.offer(cmd)
                offered = True
            else:
                cmd.serialize_type = SerializeType.MSGPACK
        # Endpoint._invoke_sync_on, inlined: one coroutine frame less per request.
        try:
            fut = self._send_sync(conn, cmd, timeout_ms)
            response: RemotingCommand = await fut
        except RemotingSendRequestError:
            log.warning("invokeSync: send request exception, so close the channel[%s]", addr)
            self._close_if_current(addr, conn)
            raise
        except RemotingTimeoutError:
            if self.config.client_close_socket_if_timeout:
                log.warning("invokeSync: close socket because of timeout, %sms, %s", timeout_ms, addr)
                self._close_if_current(addr, conn)
            raise
        except asyncio.CancelledError:
            self.responses.discard(cmd.opaque)
            raise
        if offered and codec_negotiation.accepted(response):
            conn.attributes[codec_negotiation.AGREED_ATTRIBUTE] = SerializeType.MSGPACK
        if self.rpc_hooks:
            run_after(self.rpc_hooks, conn.remote_addr, cmd, response)
        return response

    def start_sync(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float = 3000
    ) -> asyncio.Future[RemotingCommand] | None:
        """invoke_sync's common case as a plain call: send `cmd` on the open connection to `addr` now and
        return the future of its response (failing as invoke_sync fails). None when invoke_sync has more
        to do (open the connection, offer msgpack headers, run RPC hooks after the response, close the
        connection after a timeout): await invoke_sync then. Saves a hot caller (the producer's send) a
        coroutine frame. A caller that gives up cancels the future; its entry then waits for the answer or the deadline."""
        conn = self._conns.get(addr)
        # Before-hooks (ACL's signing) run in _send_sync; a hook with work after the response needs invoke_sync.
        if (
            conn is None
            or conn._closing
            or self._rpc_after_hooks
            or self.config.client_close_socket_if_timeout
        ):
            return None
        if self.negotiate_msgpack and cmd.serialize_type == _JSON:
            if conn.attributes.get(_AGREED) is None:
                return None
            cmd.serialize_type = _MSGPACK
        try:
            return self._send_sync(conn, cmd, timeout_ms)
        except RemotingSendRequestError:
            log.warning("invokeSync: send request exception, so close the channel[%s]", addr)
            self._close_if_current(addr, conn)
            raise

    def _upgrade(self, conn: Connection, cmd: RemotingCommand) -> None:
        """A JSON request goes as msgpack on a connection whose server accepted it (async and oneway
        requests only follow the agreement; invoke_sync makes it)."""
        if cmd.serialize_type == SerializeType.JSON and conn.attributes.get(
            codec_negotiation.AGREED_ATTRIBUTE
        ):
            cmd.serialize_type = SerializeType.MSGPACK

    def _close_if_current(self, addr: str, conn: Connection) -> None:
        if self._conns.get(addr) is conn:
            del self._conns[addr]
        conn.close("closed after a failed request")

    def invoke_async(self, addr: str, cmd: RemotingCommand, timeout_ms: float = 3000) -> asyncio.Future[Any]:
        """Send `cmd` to `addr`; the returned future gets the response or the error.

        Must be called on the client's loop. The future fails with RemotingConnectError,
        RemotingSendRequestError, RemotingTooMuchRequestError (no permit within the timeout) or
        RemotingTimeoutError (raised by the periodic scan after `timeout_ms`).
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        deadline = loop.time() + timeout_ms / 1000
        conn = self._conns.get(addr)
        if conn is not None and conn.is_active and self._async_permits.try_acquire():
            if self.negotiate_msgpack:
                self._upgrade(conn, cmd)
            self._start_async_on(conn, cmd, deadline, timeout_ms, fut)
        else:
            spawn("remoting-invoke-async", self._invoke_async_slow(addr, cmd, deadline, timeout_ms, fut))
        return fut

    async def _invoke_async_slow(
        self, addr: str, cmd: RemotingCommand, deadline: float, timeout_ms: float, fut: asyncio.Future[Any]
    ) -> None:
        try:
            conn = await self.get_connection(addr)
            remaining_ms = (deadline - self.owner_loop.time()) * 1000
            if remaining_ms <= 0:
                raise RemotingTimeoutError(
                    f"invokeAsync call the addr[{addr}] timeout (connecting took it all)"
                )
            await self._acquire_async_permit(remaining_ms)
        except RemotingError as exc:
            if not fut.done():
                fut.set_exception(exc)
            return
        if fut.done():  # the caller gave up meanwhile
            self._async_permits.release()
            return
        if self.negotiate_msgpack:
            self._upgrade(conn, cmd)
        self._start_async_on(conn, cmd, deadline, timeout_ms, fut)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float = 3000) -> None:
        """Send `cmd` to `addr` as a oneway request (no response).

        Raises:
            RemotingConnectError, RemotingSendRequestError, RemotingTooMuchRequestError.
        """
        conn = self._conns.get(addr)
        if conn is None or not conn.is_active:
            conn = await self.get_connection(addr)
        if self.negotiate_msgpack:
            self._upgrade(conn, cmd)
        try:
            await self._invoke_oneway_on(conn, cmd, timeout_ms)
        except RemotingSendRequestError:
            log.warning("invokeOneway: send request exception, so close the channel[%s]", addr)
            self._close_if_current(addr, conn)
            raise

    # -- shutdown ---------------------------------------------------------------------------------------
    async def shutdown(self, timeout_ms: float = 3000) -> None:
        """Close every connection (pending requests fail at once) and stop the client's tasks."""
        if self._closed:
            return
        if self._state is ServiceState.CREATE_JUST:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.STOPPING
        try:
            await self._stop(timeout_ms)
        finally:
            self._state = ServiceState.SHUTDOWN_ALREADY

    @property
    def _closed(self) -> bool:
        return self._state is ServiceState.STOPPING or self._state is ServiceState.SHUTDOWN_ALREADY

    async def _stop(self, timeout_ms: float) -> None:
        connecting = list(self._connecting.values())
        for task in connecting:
            task.cancel()
        if connecting:
            await asyncio.gather(*connecting, return_exceptions=True)
        conns = list(self._conns.values())
        self._conns.clear()
        await self._close_connections(conns, timeout_ms / 1000)
        self._fail_all_pending("remoting client shut down")
        await self._scan.stop()
        await self.executor.shutdown(timeout_ms / 1000)
        for executor in self.registry.executors():
            if executor is not self.executor:
                await executor.shutdown(timeout_ms / 1000)
