"""RemotingServer: accepts connections, serves requests through registered processors, calls clients back.

Port of org.apache.rocketmq.remoting.netty.NettyRemotingServer. Thread model (docs/architecture.md): the boss
accepts; `server_selector_threads` selector loops own the connections (read, decode, write), or the
main loop does when it is 0 or 1; processors always run on the main loop (the one that called
start()), so broker and namesrv state stays single-threaded. Deviation: a duplicate processor
registration raises instead of silently replacing the first one. Limits on what peers may make the
server hold (ServerConfig's ConnectionLimits) are enforced by the connections; the server counts
connections per address and runs the check for frames that do not complete in time with its
response scan (once per responseScanIntervalMillis, no timer per connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
from typing import Any

from rocketq.common.errors import IllegalStateError
from rocketq.common.service import ServiceState, spawn
from rocketq.common.tls import ServerTls, TlsListener, accept_forever, serve
from rocketq.remoting.errors import RemotingError, map_exceptions
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.config import ServerConfig
from rocketq.remoting.transport.connection import Connection, ConnectionSettings
from rocketq.remoting.transport.dispatch import Executor, RequestProcessor
from rocketq.remoting.transport.endpoint import RemotingEndpoint
from rocketq.remoting.transport.limits import AddressCounter, BufferBudget, default_connections_per_address
from rocketq.remoting.transport.selector_loops import SelectorLoop

log = logging.getLogger("rocketq.remoting")


class RemotingServer(RemotingEndpoint):
    """A RocketMQ remoting server.

    Usage::

        server = RemotingServer(ServerConfig(listen_port=0))
        server.register_processor(RequestCode.SEND_MESSAGE, processor, Executor("send", workers=1))
        await server.start()          # on the loop that will run the processors
        ... server.port ...
        await server.shutdown()
    """

    def __init__(self, config: ServerConfig | None = None, tls: ServerTls | None = None) -> None:
        self.config = config or ServerConfig.model_validate({})
        self.tls = tls if tls is not None and tls.enabled else None
        c = self.config
        super().__init__(
            async_permits=c.server_async_semaphore_value,
            oneway_permits=c.server_oneway_semaphore_value,
            scan_interval_ms=c.response_scan_interval_ms,
        )
        self.default_executor = Executor(
            "remoting-default", c.server_worker_threads, c.server_default_queue_capacity
        )
        self.settings = ConnectionSettings(
            idle_s=c.server_channel_max_idle_time_s,
            high_water=c.write_buffer_high_water_mark_bytes,
            low_water=c.write_buffer_low_water_mark_bytes,
            max_write_buffer=c.max_write_buffer_bytes,
            max_frame_length=c.max_frame_length_bytes,
            sndbuf=c.server_socket_snd_buf_size,
            rcvbuf=c.server_socket_rcv_buf_size,
            max_in_flight=c.max_in_flight_requests_per_connection,
            frame_timeout_s=c.frame_read_timeout_ms / 1000,
            budget=BufferBudget(
                c.max_total_buffered_input_bytes or 1 << 62, c.max_total_buffered_output_bytes or 1 << 62
            ),
        )
        self.addresses = AddressCounter(c.max_connections_per_address or default_connections_per_address())
        self.connections: set[Connection] = set()
        self._selectors: list[SelectorLoop] = []
        self._server: asyncio.AbstractServer | None = None
        self._listen_sock: socket.socket | None = None
        self._boss: asyncio.Task[None] | None = None
        self._tls_listener: TlsListener | None = None
        self._port = 0
        # RUNNING from the first line of start() (a second start() is refused while it binds);
        # START_FAILED when binding failed, which shutdown() still cleans up after.
        self._state = ServiceState.CREATE_JUST

    # -- registration ----------------------------------------------------------------------------
    def register_processor(
        self, code: int, processor: RequestProcessor, executor: Executor | None = None
    ) -> None:
        """Serve `code` with `processor` on `executor` (the default executor if None); a code has one owner."""
        self._register(code, processor, executor or self.default_executor)

    def register_default_processor(
        self, processor: RequestProcessor, executor: Executor | None = None
    ) -> None:
        """Serve every code without its own processor (the namesrv's DefaultRequestProcessor)."""
        executor = executor or self.default_executor
        self.registry.register_default(processor, executor)
        self._adopt_executor(executor)

    # -- lifecycle -----------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port (the real one when configured with port 0); 0 before start()."""
        return self._port

    @property
    def selector_count(self) -> int:
        return len(self._selectors)

    def _new_connection(self) -> Connection:
        return Connection(self, self.settings)

    async def start(self) -> None:
        """Bind and start accepting; processors will run on the calling loop. Raises RemotingError."""
        if self._state is not ServiceState.CREATE_JUST:
            raise IllegalStateError("the remoting server is already started")
        self._bind_loop()
        self._state = ServiceState.RUNNING
        c = self.config
        where = f"listen on {c.bind_address}:{c.listen_port}"
        try:
            with map_exceptions(where):
                if self.tls is not None and c.server_selector_threads <= 1:
                    self._tls_listener = await serve(
                        c.bind_address, c.listen_port, self._new_connection, self.tls, c.server_socket_backlog
                    )
                    self._port = self._tls_listener.port
                elif c.server_selector_threads <= 1:
                    self._server = await self.owner_loop.create_server(
                        self._new_connection, c.bind_address, c.listen_port, backlog=c.server_socket_backlog
                    )
                    self._port = self._server.sockets[0].getsockname()[1]
                else:
                    await self._start_with_selectors()
        except RemotingError:
            self._state = ServiceState.START_FAILED
            await self._stop_selectors()
            raise
        await self._scan.start()
        log.info(
            "remoting server listening on %s:%d (%d selector loops, tlsMode %s)",
            c.bind_address,
            self._port,
            len(self._selectors),
            self.tls.mode.value if self.tls is not None else "disabled",
        )

    async def _start_with_selectors(self) -> None:
        c = self.config
        sock = socket.create_server(
            (c.bind_address, c.listen_port),
            family=socket.AF_INET6 if ":" in c.bind_address else socket.AF_INET,
            backlog=c.server_socket_backlog,
            reuse_port=False,
        )
        sock.setblocking(False)
        self._listen_sock = sock
        self._port = sock.getsockname()[1]
        for i in range(c.server_selector_threads):
            selector = SelectorLoop(f"remoting-selector-{i}", c.loop)
            self._selectors.append(selector)
            await asyncio.to_thread(selector.start)
        self._boss = self.owner_loop.create_task(self._accept_loop(sock), name="remoting-boss")

    async def _accept_loop(self, sock: socket.socket) -> None:
        selectors = itertools.cycle(self._selectors)
        await accept_forever(
            self.owner_loop,
            sock,
            lambda conn_sock: next(selectors).adopt(conn_sock, self._new_connection, self.tls),
        )

    async def shutdown(self) -> None:
        """Stop accepting, let running requests finish (bounded), close connections, stop the loops."""
        if self._state is ServiceState.STOPPING:
            return
        if self._state is ServiceState.CREATE_JUST or self._state is ServiceState.SHUTDOWN_ALREADY:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.STOPPING
        try:
            await self._stop()
        finally:
            self._state = ServiceState.SHUTDOWN_ALREADY

    async def _stop(self) -> None:
        loop = self.owner_loop
        deadline = loop.time() + self.config.shutdown_timeout_ms / 1000
        await self._stop_accepting()
        # Graceful part: requests already queued or running may still answer.
        executors = self.registry.executors()
        if self.default_executor not in executors:
            executors.append(self.default_executor)
        await asyncio.gather(*(e.shutdown(max(deadline - loop.time(), 0.0)) for e in executors))
        await self._close_connections(list(self.connections), deadline - loop.time())
        self._fail_all_pending("remoting server shut down")
        await self._scan.stop()
        await self._stop_selectors()
        log.info("remoting server on port %d shut down", self._port)

    async def _stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._tls_listener is not None:
            await self._tls_listener.close()
        if self._boss is not None:
            self._boss.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._boss
        if self._listen_sock is not None:
            self._listen_sock.close()

    async def _stop_selectors(self) -> None:
        selectors, self._selectors = self._selectors, []
        for selector in selectors:
            await asyncio.to_thread(selector.stop)

    # -- connection bookkeeping (owner loop) -----------------------------------------------------------
    def on_connection_made(self, conn: Connection) -> None:
        if self._state is ServiceState.STOPPING or self._state is ServiceState.SHUTDOWN_ALREADY:
            conn.close("server shutting down")
            return
        ip = AddressCounter.ip_of(conn.remote_addr)
        if not self.addresses.admit(ip):
            conn.close_reason = "too many connections from its address"
            conn.attributes["remoting.refused"] = True
            conn.abort()
            return
        conn.attributes["remoting.ip"] = ip
        self.connections.add(conn)
        super().on_connection_made(conn)

    def on_connection_lost(self, conn: Connection, exc: BaseException | None) -> None:
        if conn.attributes.pop("remoting.refused", False):
            return  # listeners never saw it connect
        self.connections.discard(conn)
        ip = conn.attributes.pop("remoting.ip", None)
        if ip is not None:
            self.addresses.release(ip)
        super().on_connection_lost(conn, exc)

    async def _scan_once(self) -> None:
        await super()._scan_once()
        if self.settings.frame_timeout_s:
            for conn in list(self.connections):
                if conn._partial_since:
                    conn._on_io(conn.check_frame_deadline)

    # -- server-initiated requests ---------------------------------------------------------------------
    async def invoke_sync(
        self, conn: Connection, cmd: RemotingCommand, timeout_ms: float = 3000
    ) -> RemotingCommand:
        """Send a request to a client over its connection and wait for the answer.

        Raises:
            RemotingSendRequestError: the connection is closed.
            RemotingTimeoutError: no answer within `timeout_ms`.
            RemotingConnectError: the connection closed before the answer came.
        """
        return await self._invoke_sync_on(conn, cmd, timeout_ms)

    def invoke_async(
        self, conn: Connection, cmd: RemotingCommand, timeout_ms: float = 3000
    ) -> asyncio.Future[Any]:
        """Send a request to a client; the future gets the response or the error (failed by the scan on timeout)."""
        loop = self.owner_loop
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        deadline = loop.time() + timeout_ms / 1000
        if self._async_permits.try_acquire():
            self._start_async_on(conn, cmd, deadline, timeout_ms, fut)
        else:
            spawn("remoting-invoke-async", self._invoke_async_slow(conn, cmd, deadline, timeout_ms, fut))
        return fut

    async def _invoke_async_slow(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        deadline: float,
        timeout_ms: float,
        fut: asyncio.Future[Any],
    ) -> None:
        try:
            await self._acquire_async_permit(timeout_ms)
        except RemotingError as exc:
            if not fut.done():
                fut.set_exception(exc)
            return
        self._start_async_on(conn, cmd, deadline, timeout_ms, fut)

    async def invoke_oneway(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float = 3000) -> None:
        """Send a oneway request to a client (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE)."""
        await self._invoke_oneway_on(conn, cmd, timeout_ms)
