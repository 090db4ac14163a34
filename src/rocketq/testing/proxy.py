"""FaultProxy: a loopback TCP relay in front of a daemon that delays, drops, resets or cuts frames.

Modelled on redis-py's DelayProxy (tests/test_asyncio/test_cwe_404.py), extended with the faults the
fault suite needs (docs/fault-tests.md): per direction a delay and a blackhole, connection resets (RST) and
refusals, and a cut in the middle of a RocketMQ frame. The relay knows the frame layout's 4-byte
length prefix (docs/protocol.md 1.2), so "cut" means: forward the first half of the next frame, then
reset, close or stall the connection, which is what a peer dying (or a cable pulled) mid-write looks
like to the other side. Everything else is relayed byte for byte.

Usage::

    async with FaultProxy(broker.addr) as proxy:
        client_addr = proxy.addr                 # point the client here
        with proxy.delay(0.5, Direction.DOWNSTREAM):
            ...                                  # answers arrive 0.5 s late
        with proxy.blackhole(Direction.UPSTREAM):
            ...                                  # requests vanish, connections stay open
        order = proxy.cut_frame(Direction.DOWNSTREAM, then="reset")
        ...                                      # the next answer is cut in half
        await order.wait()

Strategy: one link per accepted connection, with one pipe per direction. A pipe's reader task reads
chunks, applies the blackhole and the cut (both decided when a chunk arrives) and queues the chunk
with its due time (arrival + delay); the pipe's writer task writes chunks in order when due. The
queue is bounded, so a flood under a long delay pushes back on the sender instead of growing. An EOF
travels through the queue too and half-closes the other side (a FIN stays a FIN); a reset or write
error tears the whole link down with RST. All state lives on the loop that started the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

_CHUNK = 64 * 1024
_QUEUE_CHUNKS = 256
_LINGER_RST = struct.pack("ii", 1, 0)
_EOF = b""
_CUT = None  # queued after the first half of a cut frame

CutThen = Literal["reset", "close", "stall"]


class Direction(enum.Flag):
    """UPSTREAM = client to daemon (requests), DOWNSTREAM = daemon to client (responses)."""

    UPSTREAM = 1
    DOWNSTREAM = 2
    BOTH = 3


_DIRECTIONS = (Direction.UPSTREAM, Direction.DOWNSTREAM)


@dataclass(slots=True)
class CutOrder:
    """A request to cut the next `count` frames of one direction; `wait()` until they were cut."""

    direction: Direction
    then: CutThen
    count: int
    claimed: int = 0
    cuts: int = 0
    cut_bytes: list[int] = field(default_factory=list)  # where each frame was cut (bytes forwarded of it)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def record(self, forwarded: int) -> None:
        self.cut_bytes.append(forwarded)
        self.cuts += 1
        if self.cuts >= self.count:
            self.done.set()

    async def wait(self, timeout_s: float = 10.0) -> Self:
        """Until every ordered cut happened; TimeoutError naming the order otherwise."""
        try:
            await asyncio.wait_for(self.done.wait(), timeout_s)
        except TimeoutError:
            raise TimeoutError(f"{self} was not completed within {timeout_s}s") from None
        return self


@dataclass(slots=True)
class _Faults:
    delay_s: float = 0.0
    blackhole: bool = False
    cuts: list[CutOrder] = field(default_factory=list)


@dataclass(slots=True)
class DirectionStats:
    bytes_forwarded: int = 0
    bytes_dropped: int = 0
    frames: int = 0  # complete frames seen (a stream that is not framed counts none)


class _FrameTracker:
    """Follows frame boundaries of one byte stream (length prefix only; contents are not parsed)."""

    __slots__ = ("prefix", "seen", "total")

    def __init__(self) -> None:
        self.prefix = bytearray()
        self.seen = 0  # bytes of the current frame seen, prefix included
        self.total: int | None = None  # 4 + frame length, once the prefix is complete

    def take_prefix(self, data: bytes, pos: int) -> int:
        """Consume prefix bytes from data[pos:]; returns how many were taken."""
        take = data[pos : pos + 4 - len(self.prefix)]
        self.prefix += take
        self.seen += len(take)
        if len(self.prefix) == 4:
            length = int.from_bytes(self.prefix, "big", signed=True)
            # A negative length is not a frame: follow nothing more on this stream.
            self.total = 4 + length if length >= 0 else 1 << 62
        return len(take)

    def finish(self) -> None:
        self.prefix.clear()
        self.seen = 0
        self.total = None


class _Pipe:
    """One direction of one link: reads, applies the faults, writes in order when due."""

    def __init__(
        self,
        link: _Link,
        direction: Direction,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.link = link
        self.direction = direction
        self.reader = reader
        self.writer = writer  # the other side's writer
        self.queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue(_QUEUE_CHUNKS)
        self.frames = _FrameTracker()
        self.cut: CutOrder | None = None  # the order this pipe is cutting the current frame for
        self.cut_at = 0
        self.stalled = False

    @property
    def faults(self) -> _Faults:
        return self.link.proxy.faults[self.direction]

    @property
    def stats(self) -> DirectionStats:
        return self.link.proxy.stats[self.direction]

    async def read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await self.reader.read(_CHUNK)
                if not data:
                    await self.queue.put((loop.time(), _EOF))
                    return
                if self.stalled or self.faults.blackhole:
                    self.stats.bytes_dropped += len(data)
                    continue
                out, cut = self._apply_cut(data)
                due = loop.time() + self.faults.delay_s
                if out:
                    await self.queue.put((due, out))
                if cut:
                    await self.queue.put((due, _CUT))
        except (ConnectionError, OSError):
            self.link.abort()

    def _apply_cut(self, data: bytes) -> tuple[bytes, bool]:
        """The bytes to forward, and whether they end at a cut point (the rest is then dropped)."""
        tracker = self.frames
        pos = 0
        end = len(data)
        while pos < end:
            if tracker.total is None:
                pos += tracker.take_prefix(data, pos)
                if tracker.total is None:
                    continue
                if self.cut is None and tracker.total > 4:
                    self.cut = self.link.proxy.claim_cut(self.direction)
                    self.cut_at = max(4, tracker.total // 2)
            else:
                take = min(tracker.total - tracker.seen, end - pos)
                if self.cut is not None:
                    take = min(take, self.cut_at - tracker.seen)
                pos += take
                tracker.seen += take
            if self.cut is not None and tracker.seen >= self.cut_at:
                self.stats.bytes_forwarded += pos
                self.stats.bytes_dropped += end - pos
                self.stalled = True
                return data[:pos], True
            if tracker.seen == tracker.total:
                tracker.finish()
                self.stats.frames += 1
        self.stats.bytes_forwarded += end
        return data, False

    async def write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        writer = self.writer
        try:
            while True:
                due, data = await self.queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is _CUT:
                    await writer.drain()
                    self._act_on_cut()
                    return
                if not data:
                    if writer.can_write_eof() and not writer.is_closing():
                        writer.write_eof()
                    self.link.half_closed(self.direction)
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            self.link.abort()

    def _act_on_cut(self) -> None:
        order = self.cut
        assert order is not None
        order.record(self.frames.seen)
        if order.then == "reset":
            self.link.abort()
        elif order.then == "close":
            self.link.close()
        # "stall": the reader keeps dropping this direction; the link stays open


class _Link:
    """One relayed connection: the client side, the daemon side and a pipe each way."""

    def __init__(
        self,
        proxy: FaultProxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self.proxy = proxy
        self.client_writer = client[1]
        self.server_writer = server[1]
        self.up = _Pipe(self, Direction.UPSTREAM, client[0], server[1])
        self.down = _Pipe(self, Direction.DOWNSTREAM, server[0], client[1])
        self._half_closed: set[Direction] = set()
        self.tasks: list[asyncio.Task[None]] = []
        self.closed = asyncio.Event()

    def start(self) -> None:
        for pipe in (self.up, self.down):
            self.tasks.append(asyncio.ensure_future(pipe.read_loop()))
            self.tasks.append(asyncio.ensure_future(pipe.write_loop()))
        for task in self.tasks:
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if all(t.done() for t in self.tasks):
            self.close()

    def half_closed(self, direction: Direction) -> None:
        self._half_closed.add(direction)
        if len(self._half_closed) == 2:
            self.close()

    def abort(self) -> None:
        """Reset both sides (RST, as a crashed peer's kernel sends)."""
        for writer in (self.client_writer, self.server_writer):
            _reset(writer)
        self._finish()

    def close(self) -> None:
        """Close both sides in order (FIN)."""
        for writer in (self.client_writer, self.server_writer):
            if not writer.is_closing():
                writer.close()
        self._finish()

    def _finish(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for task in self.tasks:
            if not task.done() and task is not asyncio.current_task():
                task.cancel()
        self.proxy.links.discard(self)


def _reset(writer: asyncio.StreamWriter) -> None:
    if writer.is_closing():
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    writer.transport.abort()


class FaultProxy:
    """A loopback relay to `target` ("host:port"); an async context manager.

    Args:
        target: the daemon's address.
        host / port: where the proxy listens (port 0 = any free port; `addr` tells which).
    """

    def __init__(self, target: str, *, host: str = "127.0.0.1", port: int = 0) -> None:
        target_host, _, target_port = target.rpartition(":")
        self.target = (target_host.strip("[]"), int(target_port))
        self.host = host
        self.port = port
        self.faults = {d: _Faults() for d in _DIRECTIONS}
        self.stats = {d: DirectionStats() for d in _DIRECTIONS}
        self.links: set[_Link] = set()
        self.accepted = 0
        self.rejecting = False
        self._server: asyncio.Server | None = None

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connection_count(self) -> int:
        """Relayed connections open now."""
        return len(self.links)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        """Stop listening and reset every relayed connection."""
        if self._server is not None:
            self._server.close()
        self.reset_all()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.rejecting:
            _reset(client_writer)
            return
        try:
            server = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(client_writer)  # the daemon is down: the client sees what it would see without us
            return
        link = _Link(self, (client_reader, client_writer), server)
        self.links.add(link)
        link.start()

    # -- faults ---------------------------------------------------------------------------------
    def set_delay(self, seconds: float, direction: Direction = Direction.BOTH) -> None:
        """Hold every chunk arriving from now on for `seconds` before forwarding it (order kept)."""
        for d in _split(direction):
            self.faults[d].delay_s = seconds

    def set_blackhole(self, on: bool, direction: Direction = Direction.BOTH) -> None:
        """Silently discard what arrives (connections stay open, nothing is forwarded)."""
        for d in _split(direction):
            self.faults[d].blackhole = on

    def set_rejecting(self, on: bool) -> None:
        """New connections are reset as soon as they are accepted (a daemon that refuses)."""
        self.rejecting = on

    def reset_all(self) -> int:
        """Reset every relayed connection now (both sides get RST); returns how many."""
        links = list(self.links)
        for link in links:
            link.abort()
        return len(links)

    def cut_frame(
        self, direction: Direction = Direction.UPSTREAM, *, then: CutThen = "reset", count: int = 1
    ) -> CutOrder:
        """Cut the next `count` frames of `direction` (on any connection) in half.

        The first half of such a frame is forwarded, the rest is dropped, then the connection is reset
        ("reset"), closed with FIN ("close"), or left open with that direction silent ("stall").
        """
        if direction not in _DIRECTIONS:
            raise ValueError("cut one direction at a time")
        order = CutOrder(direction, then, count)
        self.faults[direction].cuts.append(order)
        return order

    def claim_cut(self, direction: Direction) -> CutOrder | None:
        """The pending cut order a frame starting now in `direction` belongs to, if any."""
        cuts = self.faults[direction].cuts
        if not cuts:
            return None
        order = cuts[0]
        order.claimed += 1
        if order.claimed >= order.count:
            cuts.pop(0)
        return order

    def heal(self) -> None:
        """Clear every fault: no delay, no blackhole, no pending cut, accept again."""
        for faults in self.faults.values():
            faults.delay_s = 0.0
            faults.blackhole = False
            faults.cuts.clear()
        self.rejecting = False

    # -- the same as context managers -----------------------------------------------------------
    @contextlib.contextmanager
    def delay(self, seconds: float, direction: Direction = Direction.BOTH) -> Iterator[Self]:
        before = {d: self.faults[d].delay_s for d in _split(direction)}
        self.set_delay(seconds, direction)
        try:
            yield self
        finally:
            for d, value in before.items():
                self.faults[d].delay_s = value

    @contextlib.contextmanager
    def blackhole(self, direction: Direction = Direction.BOTH) -> Iterator[Self]:
        before = {d: self.faults[d].blackhole for d in _split(direction)}
        self.set_blackhole(True, direction)
        try:
            yield self
        finally:
            for d, value in before.items():
                self.faults[d].blackhole = value

    @contextlib.contextmanager
    def rejecting_new(self) -> Iterator[Self]:
        before = self.rejecting
        self.rejecting = True
        try:
            yield self
        finally:
            self.rejecting = before


def _split(direction: Direction) -> list[Direction]:
    return [d for d in _DIRECTIONS if d & direction]
