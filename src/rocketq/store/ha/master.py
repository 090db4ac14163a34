"""The master's side of replication: accept slaves, stream the commit log to each, collect their acks.

Port of HAService (AcceptSocketService, GroupTransferService, push2SlaveMaxOffset, isSlaveOK) and
HAConnection (ReadSocketService, WriteSocketService) of RocketMQ 4.9.8, on asyncio streams:
- a connection waits for the slave's first offset report; it streams from there, or, when the slave
  reports 0 (an empty store), from the start of the master's last commit-log file;
- each frame carries the bytes written from where the last one ended, up to haTransferBatchSize and
  never across a file end; when there is nothing to send, a heartbeat (size 0) every
  haSendHeartbeatInterval; new data wakes the writers at once (the store's arrival listener, added when the
  first slave connects, and each SYNC_MASTER put), else they look again every 100 ms as Java's do;
- every report is an ack: push2SlaveMaxOffset is the highest, and SYNC_MASTER puts waiting for an
  offset at or below it are released (GroupTransferService); a report past the master's end, a
  malformed stream or haHousekeepingInterval of silence closes the connection.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from typing import Any, Protocol

from rocketq.common.service import spawn, wait_event
from rocketq.common.tls import ServerTls, TlsListener, serve
from rocketq.store.config import MessageStoreConfig
from rocketq.store.ha.codec import HAProtocolError, OffsetReader, encode_frame_header

log = logging.getLogger("rocketq.store.ha")

IDLE_POLL_S = 0.1  # Java's allWaitForRunning(100)
READ_CHUNK = 64 * 1024
_WAITERS_PRUNED_AT = 10_000  # waiters that timed out are dropped from the heap past this many


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class MasterStore(Protocol):
    """What the master's replication reads from the store (rocketq.store.message_store.MessageStore)."""

    config: MessageStoreConfig

    def get_max_phy_offset(self) -> int: ...
    def read_commit_log(self, offset: int, max_bytes: int) -> bytes | None: ...
    def add_arrival_listener(self, listener: Any, topic: str | None = None) -> None: ...


class HAService:
    """Listens on haListenPort (0: any free port; `port` tells which) and serves every slave that connects."""

    def __init__(
        self,
        store: MasterStore,
        host: str = "127.0.0.1",
        port: int | None = None,
        tls: ServerTls | None = None,
    ) -> None:
        self.store = store
        # TLS on the HA port as on the remoting port (same tlsMode: plain or TLS by the first byte).
        self.tls = tls if tls is not None and tls.enabled else None
        self._tls_listener: TlsListener | None = None
        self.config = store.config
        self.host = host
        self._port_wanted = self.config.ha_listen_port if port is None else port
        self.push2slave_max_offset = 0
        self.connections: set[HAConnection] = set()
        self._server: asyncio.Server | None = None
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []  # (offset, seq, future) heap
        self._seq = itertools.count()
        self._listening = False  # the arrival listener is added with the first slave: no cost before

    @property
    def port(self) -> int:
        if self._tls_listener is not None:
            return self._tls_listener.port
        if self._server is None or not self._server.sockets:
            return self._port_wanted
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        if self.tls is not None:
            self._tls_listener = await serve(
                self.host,
                self._port_wanted,
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._accept),
                self.tls,
            )
        else:
            self._server = await asyncio.start_server(self._accept, self.host, self._port_wanted)
        log.info("HA service listening on %s:%d%s", self.host, self.port, " (TLS)" if self.tls else "")

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._tls_listener is not None:
            await self._tls_listener.close()
        for conn in list(self.connections):
            await conn.close()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2)
            except TimeoutError:
                pass
            self._server = None
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)  # the put answers FLUSH_SLAVE_TIMEOUT
        self._waiters = []

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._listening:
            self._listening = True
            self.store.add_arrival_listener(self.on_message_arrival)
        conn = HAConnection(self, reader, writer)
        self.connections.add(conn)
        log.info("HA connection from slave %s", conn.client_addr)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)
            log.info("HA connection from slave %s closed", conn.client_addr)

    # -- what puts ask ----------------------------------------------------------------------------------
    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and not more than haSlaveFallbehindMax behind (Java isSlaveOK)."""
        return bool(self.connections) and (
            master_put_where - self.push2slave_max_offset < self.config.ha_slave_fallbehind_max_bytes
        )

    async def wait_for_slave(self, offset: int, timeout_ms: int) -> bool:
        """Whether a slave acknowledged everything below `offset` within `timeout_ms`."""
        if self.push2slave_max_offset >= offset:
            return True
        # Timed by the loop, not asyncio.timeout: the broker may drive a put's coroutine outside a task.
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        if len(self._waiters) > _WAITERS_PRUNED_AT:
            self._waiters = [w for w in self._waiters if not w[2].done()]
            heapq.heapify(self._waiters)
        heapq.heappush(self._waiters, (offset, next(self._seq), fut))
        timer = loop.call_later(timeout_ms / 1000, _expire, fut)
        fut.add_done_callback(lambda _: timer.cancel())
        self.wakeup_all()
        return await fut or self.push2slave_max_offset >= offset

    def notify_transfer_some(self, offset: int) -> None:
        """A slave acknowledged everything below `offset`."""
        if offset <= self.push2slave_max_offset:
            return
        self.push2slave_max_offset = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= offset:
            _, _, fut = heapq.heappop(waiters)
            if not fut.done():
                fut.set_result(True)

    def wakeup_all(self) -> None:
        """New data: every connection looks for it now."""
        for conn in self.connections:
            conn.data.set()

    def on_message_arrival(self, *_args: object) -> None:
        """The store's arrival listener: wake the writers."""
        self.wakeup_all()


class HAConnection:
    """One slave: a reader of its offset reports and a writer of commit-log frames.

    The two loops are this connection's I/O (Java's HAConnection ReadSocketService and
    WriteSocketService), not periodic services: each waits on the socket or on new data, ends with the
    connection, and `_closed` is the connection's state, not a service lifecycle. They stay plain
    `while` loops; the HAService that owns the connections is the long-lived object.
    """

    def __init__(
        self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.service = service
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.client_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.data = asyncio.Event()
        self._requested = asyncio.Event()
        self._closed = False

    async def serve(self) -> None:
        write_task = spawn(f"ha-write-{self.client_addr}", self._write_loop())
        try:
            await self._read_loop()
        except (OSError, HAProtocolError) as exc:
            log.warning("HA connection from %s: %s", self.client_addr, exc)
        finally:
            write_task.cancel()
            await asyncio.gather(write_task, return_exceptions=True)
            await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 1)
        except (OSError, TimeoutError):
            pass

    async def _read_loop(self) -> None:
        cfg = self.service.config
        offsets = OffsetReader()
        while not self._closed:
            try:
                async with asyncio.timeout(cfg.ha_housekeeping_interval_ms / 1000):
                    data = await self.reader.read(READ_CHUNK)
            except TimeoutError:
                log.warning(
                    "HA connection from %s: silent for %d ms; closing",
                    self.client_addr,
                    cfg.ha_housekeeping_interval_ms,
                )
                return
            if not data:
                return
            offset = offsets.feed(data)
            if offset is None:
                continue
            self.slave_ack_offset = offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = offset
                self._requested.set()
                log.info("slave %s asks for the commit log from offset %d", self.client_addr, offset)
            elif offset > self.service.store.get_max_phy_offset():
                log.warning(
                    "slave %s acknowledged offset %d past this master's end %d; closing",
                    self.client_addr, offset, self.service.store.get_max_phy_offset(),
                )  # fmt: skip
                return
            self.service.notify_transfer_some(offset)

    async def _write_loop(self) -> None:
        store = self.service.store
        cfg = self.service.config
        try:
            await self._requested.wait()
            if self.slave_request_offset == 0:
                end = store.get_max_phy_offset()
                next_offset = end - end % cfg.mapped_file_size_commit_log_bytes
            else:
                next_offset = self.slave_request_offset
            log.info("streaming the commit log to slave %s from offset %d", self.client_addr, next_offset)
            heartbeat_s = cfg.ha_send_heartbeat_interval_ms / 1000
            last_write = time.monotonic()
            writer = self.writer
            while not self._closed:
                self.data.clear()
                body = store.read_commit_log(next_offset, cfg.ha_transfer_batch_size_bytes)
                if body:
                    writer.write(encode_frame_header(next_offset, len(body)))
                    writer.write(body)
                    next_offset += len(body)
                    await writer.drain()
                    last_write = time.monotonic()
                    continue
                if time.monotonic() - last_write > heartbeat_s:
                    writer.write(encode_frame_header(next_offset, 0))
                    await writer.drain()
                    last_write = time.monotonic()
                await wait_event(self.data, IDLE_POLL_S)
        except OSError as exc:
            log.warning("HA connection to %s: writing failed: %s", self.client_addr, exc)
        finally:
            self.writer.close()  # the reader sees the end and the connection goes
