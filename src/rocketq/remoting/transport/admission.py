"""Admission control of one connection: requests in flight, the backlog, paused reads, frame deadlines.

The part of rocketq.remoting.transport.connection.Connection that enforces the limits of
rocketq.remoting.transport.limits (docs/limits.md), kept apart so the connection's I/O stays
readable. A request is admitted (counted in flight) just before it is dispatched, while the
connection has fewer than `max_in_flight` unanswered and its unsent answers are below the high-water
mark; otherwise it waits in the backlog, in order, and reading pauses until answers free room. Large
frames reserve their length from the server's input budget when their length field arrives.
No Java counterpart (Netty's channel has writability, not admission).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import FrameDecoder
from rocketq.remoting.transport.limits import BufferBudget

log = logging.getLogger("rocketq.remoting")

# Why reading is paused (bits of _paused): a frame waits for input budget; requests wait in the backlog.
_PAUSE_INPUT = 1
_PAUSE_BACKLOG = 2
_PAUSE_TURN = 4  # a large frame took its turn at reading: every other connection reads first

# Bytes of a large frame a connection reads before it lets the io loop's other connections read (one
# loop turn): the kernel's copy into a frame's buffer is the broker's biggest cost while many large
# frames arrive, and a bystander's request waits for the loop turn in progress.
READ_TURN_BYTES = 256 * 1024


class ConnectionSettings:
    """The per-connection knobs, shared by every connection of one server or client."""

    __slots__ = (
        "budget",
        "frame_timeout_s",
        "high_water",
        "idle_s",
        "low_water",
        "max_frame_length",
        "max_in_flight",
        "max_write_buffer",
        "rcvbuf",
        "sndbuf",
    )

    def __init__(
        self,
        *,
        idle_s: float = 120.0,
        high_water: int = 4 << 20,
        low_water: int = 1 << 20,
        max_write_buffer: int = 64 << 20,
        max_frame_length: int | None = None,
        sndbuf: int = 0,
        rcvbuf: int = 0,
        max_in_flight: int = 0,
        frame_timeout_s: float = 0.0,
        budget: BufferBudget | None = None,
    ) -> None:
        self.max_in_flight = max_in_flight
        self.frame_timeout_s = frame_timeout_s
        self.budget = budget
        self.idle_s = idle_s
        self.high_water = high_water
        self.low_water = min(low_water, high_water)
        self.max_write_buffer = max(max_write_buffer, high_water)
        self.max_frame_length = max_frame_length
        self.sndbuf = sndbuf
        self.rcvbuf = rcvbuf


class AdmissionControl(asyncio.BufferedProtocol):
    """Limit state and checks; Connection supplies the transport, the loops and the owner."""

    __slots__ = (
        "_backlog",
        "_backlog_scheduled",
        "_inflight",
        "_limit_logged",
        "_partial_since",
        "_paused",
        "_reserved",
        "_turn_bytes",
    )

    # Set by Connection.
    id: int
    owner: Any
    owner_loop: asyncio.AbstractEventLoop
    io_loop: asyncio.AbstractEventLoop | None
    settings: ConnectionSettings
    transport: asyncio.Transport | None
    remote_addr: str
    close_reason: str | None
    _decoder: FrameDecoder
    _same_loop: bool
    _closing: bool
    _lost: bool
    _writable: bool
    _out_bytes: int

    def _init_admission(self) -> None:
        self._backlog: deque[RemotingCommand] = deque()
        self._backlog_scheduled = False
        self._inflight = 0  # requests admitted and not yet answered
        self._paused = 0  # _PAUSE_* bits
        self._reserved = 0  # input budget held for the frame being received
        self._partial_since = 0.0  # io-loop time the incomplete frame at the buffer's head began
        self._limit_logged = False
        self._turn_bytes = 0  # bytes read into large frames since this connection last gave way

    # -- to the owner -----------------------------------------------------------------------------
    def _to_owner(self, fn: Any, *args: Any) -> None:
        if self._same_loop:
            fn(*args)
        else:
            self.owner_loop.call_soon_threadsafe(fn, *args)

    # -- limits: requests in flight and the backlog (owner loop) -------------------------------------
    @property
    def backlog_size(self) -> int:
        """Requests read and waiting for room (reading is paused while there are any)."""
        return len(self._backlog)

    @property
    def in_flight(self) -> int:
        return self._inflight

    def admit(self, cmd: RemotingCommand) -> bool:
        """Count a request as in flight and return True, or keep it in the backlog (False).

        Requests leave in order: once one waits, every later one waits behind it.
        """
        settings = self.settings  # _has_room(), inlined: this runs for every request
        limit = settings.max_in_flight
        if (
            self._backlog
            or not self._writable
            or self._closing
            or self._out_bytes >= settings.high_water
            or (limit and self._inflight >= limit)
        ):
            if self._closing:
                return False  # closed for a limit: nothing will answer it
            self._hold(cmd)
            return False
        self._inflight += 1
        return True

    def _has_room(self) -> bool:
        limit = self.settings.max_in_flight
        return (
            (not limit or self._inflight < limit)
            and self._writable
            and self._out_bytes < self.settings.high_water
            and not self._closing
        )

    def _hold(self, cmd: RemotingCommand) -> None:
        self._backlog.append(cmd)
        if not self._paused & _PAUSE_BACKLOG:
            self._paused |= _PAUSE_BACKLOG
            self._on_io(self._pause_reading)
            if not self._limit_logged:
                self._limit_logged = True
                log.info(
                    "paused reading %s: %d requests unanswered (maxInFlightRequestsPerConnection %d), "
                    "%d answer bytes unsent (high-water mark %d); it is read again as answers leave",
                    self.remote_addr,
                    self._inflight,
                    self.settings.max_in_flight,
                    self._out_bytes + (self.transport.get_write_buffer_size() if self.transport else 0),
                    self.settings.high_water,
                )

    def request_done(self) -> None:
        """A request admitted earlier was answered (or needs no answer now)."""
        self._inflight -= 1
        if self._backlog and not self._backlog_scheduled:
            self.schedule_backlog()

    def schedule_backlog(self) -> None:
        """Let the owner dispatch backlogged requests soon (once room is back)."""
        if not self._backlog_scheduled and self._has_room():
            self._backlog_scheduled = True
            self.owner_loop.call_soon(self.owner.on_backlog_ready, self)

    def next_admitted(self) -> RemotingCommand | None:
        """The next backlogged request, counted in flight, while there is room; None otherwise.

        The owner dispatches each before asking for the next, so every answer is counted before the
        next request is let in. An empty backlog resumes reading.
        """
        self._backlog_scheduled = False
        backlog = self._backlog
        if backlog and self._has_room():
            self._inflight += 1
            return backlog.popleft()
        if not backlog and self._paused & _PAUSE_BACKLOG:
            self._paused &= ~_PAUSE_BACKLOG
            self._on_io(self._resume_reading)
        return None

    # -- limits: reading (io loop) ---------------------------------------------------------------------
    def _on_io(self, fn: Any) -> None:
        if self._same_loop or self.io_loop is None:
            fn()
        else:
            try:
                self.io_loop.call_soon_threadsafe(fn)
            except RuntimeError:  # io loop stopped: the connection is going anyway
                pass

    def _pause_reading(self) -> None:
        if self.transport is not None and not self._closing:
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self.transport is not None and not self._closing and not self._paused:
            self.transport.resume_reading()

    def _read_turn(self, nbytes: int) -> None:
        """Count bytes read into a large frame; past READ_TURN_BYTES, pause until the next loop turn."""
        self._turn_bytes += nbytes
        if self._turn_bytes < READ_TURN_BYTES or self._paused & _PAUSE_TURN or self.io_loop is None:
            return
        self._turn_bytes = 0
        self._paused |= _PAUSE_TURN
        self._pause_reading()
        self.io_loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._paused &= ~_PAUSE_TURN
        self._resume_reading()

    def _reserve_input(self, length: int) -> None:
        budget = self.settings.budget
        assert budget is not None
        if budget.reserve_input(length, self.id, self._input_room_back):
            self._reserved = length
            if self._paused & _PAUSE_INPUT:
                self._paused &= ~_PAUSE_INPUT
                self._resume_reading()
            return
        if not self._paused & _PAUSE_INPUT:
            self._paused |= _PAUSE_INPUT
            self._pause_reading()
            if not self._limit_logged:
                self._limit_logged = True
                log.info(
                    "paused reading %s: its %d-byte frame does not fit in maxTotalBufferedInputBytes "
                    "(%d of %d taken by frames being received); it is read again when others complete",
                    self.remote_addr,
                    length,
                    budget.input_used,
                    budget.input_limit,
                )

    def _input_room_back(self) -> None:
        """The budget has room again (called from any thread): retry the reservation on the io loop."""
        if not self._lost:
            self._on_io(self._retry_reserve)

    def _retry_reserve(self) -> None:
        if self._lost or self._reserved or not self._decoder.buffered:
            return
        self._reserve_input(self._decoder.pending_length + 4)

    def _release_input(self) -> None:
        reserved, self._reserved = self._reserved, 0
        budget = self.settings.budget
        if budget is not None and reserved:
            budget.release_input(reserved)

    def check_frame_deadline(self) -> None:
        """Close the connection if its incomplete frame began more than frame_timeout_s ago (io loop)."""
        timeout = self.settings.frame_timeout_s
        since = self._partial_since
        if not timeout or not since or self._closing or self.io_loop is None:
            return
        if self.io_loop.time() - since <= timeout:
            return
        log.warning(
            "%s sent %d bytes of a %d-byte frame and not the rest within %.0fs (frameReadTimeoutMillis), "
            "closing the connection",
            self.remote_addr,
            self._decoder.buffered,
            self._decoder.pending_length + 4,
            timeout,
        )
        self._drop("frame not complete in time")

    def _drop(self, reason: str) -> None:
        """Close at once without flushing (io loop); Connection implements it."""
        raise NotImplementedError
