"""One asyncio.BufferedProtocol per TCP connection: frame decoding, write coalescing, flow control, idle timer.

Port of what Netty's pipeline does for org.apache.rocketmq.remoting.netty.NettyRemotingServer/Client
(NettyDecoder, NettyEncoder, IdleStateHandler, NettyConnectManageHandler), shaped like uvicorn's
H11Protocol. A Connection lives on its *io loop* (a selector loop, or the main loop) and hands
everything it decodes to its *owner* (RemotingServer / RemotingClient) on the owner's loop, so the
owner's state (response table, processors, listeners) is only ever touched by one thread.

Strategy:
- Reads: the transport reads into the io loop's read buffer (get_buffer/buffer_updated) and the
  sans-IO FrameDecoder cuts the frames out of it, or, once a large frame's prefix is in, straight into
  that frame's own buffers, so a 15 MiB body is neither zeroed nor copied on the loop
  (rocketq.remoting.protocol.large_frame). The commands of one read are handed over as one batch
  (one cross-thread hop per read, not per command). A FrameError is logged once, reported to the
  owner (on_exception) and closes this connection only.
- Writes: the owner encodes on its own loop. While the owner handles a batch of commands from one
  read it corks the connection, so the responses its processors produce at once leave as one write.
  Otherwise a frame is written at once if something was read since our last write (request/response
  ping-pong: lowest latency); a second write without a read in between is queued with everything
  else written in the same loop iteration and leaves in one flush at the next (one syscall for a
  burst of 256 requests instead of 256).
  Cross-thread writes use a deque (append/popleft are atomic) and a flag reset *before* draining, so
  a write racing a flush is either drained by it or schedules the next one.
- Flow control: above the high-water mark `is_writable` turns false and `drain()` waits; a peer that
  lets more than `max_write_buffer_bytes` pile up is disconnected (the buffer stays bounded).
- Idle: one timer per connection that re-arms itself for the remaining time instead of being reset
  on every read/write (a write or a read that completes a frame only stores the loop time; bytes of
  an incomplete frame are not activity, so a frame trickled in byte by byte cannot keep a peer alive).
- Limits (rocketq.remoting.transport.limits, docs/limits.md), checked as each request is admitted
  and as each is answered, not once per read: a request is dispatched only while the connection has
  fewer than `max_in_flight` requests unanswered and its unsent answers are below the high-water
  mark; otherwise it waits in the connection's backlog and reading pauses until answers free room
  (the pull of a peer that never reads its answers stops after a couple of them, instead of
  buffering every answer of a pipelined batch). Unsent bytes are checked at every answer against
  `max_write_buffer` and the server-wide output budget; a large frame reserves its length from the
  server-wide input budget; the server's scan closes a connection whose frame has not completed
  within `frame_timeout_s` of its first bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import threading
from collections import deque
from typing import Any, Protocol, cast

from rocketq.remoting.errors import RemotingConnectError, RemotingSendRequestError
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.frame import FrameDecoder, encode_frame, encode_frame_parts
from rocketq.remoting.transport.admission import READ_TURN_BYTES, AdmissionControl, ConnectionSettings
from rocketq.remoting.transport.limits import RESERVE_ABOVE_BYTES

log = logging.getLogger("rocketq.remoting")

_ids = itertools.count(1)

__all__ = ["Connection", "ConnectionOwner", "ConnectionSettings", "format_addr"]

# Bodies at least this large are queued as their own buffer instead of being copied into the frame: a
# pull's answer (32 records of 1 KiB, ~36 KiB) goes out by one writev of its prefix and the store's body.
_SEPARATE_BODY_BYTES = 16 * 1024

# One read buffer per io-loop thread: each read is decoded (what is kept of it copied) before the next.
_READ_BUFFER_BYTES = 256 * 1024
_per_thread = threading.local()


def _read_buffer() -> memoryview:
    try:
        return cast(memoryview, _per_thread.read_buffer)
    except AttributeError:
        view = _per_thread.read_buffer = memoryview(bytearray(_READ_BUFFER_BYTES))
        return view


class ConnectionOwner(Protocol):
    """What a Connection reports to; every method is called on `owner_loop`."""

    owner_loop: asyncio.AbstractEventLoop

    def on_commands(self, conn: Connection, cmds: list[RemotingCommand]) -> None: ...

    def on_connection_made(self, conn: Connection) -> None: ...

    def on_connection_lost(self, conn: Connection, exc: BaseException | None) -> None: ...

    def on_idle(self, conn: Connection) -> None: ...

    def on_backlog_ready(self, conn: Connection) -> None: ...

    def on_frame_error(self, conn: Connection, exc: FrameError) -> None: ...


def format_addr(peer: Any) -> str:
    """ "ip:port" as RemotingHelper.parseChannelRemoteAddr prints it (IPv6 without brackets)."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer) if peer else ""


class Connection(AdmissionControl):
    """A remoting connection. Public API (owner loop): send_request, send_response, close, drain."""

    __slots__ = (
        "__weakref__",
        "_closed_event",
        "_closing",
        "_corked",
        "_decoder",
        "_drain_waiters",
        "_flush_scheduled",
        "_idle_handle",
        "_into_frame",
        "_join_writes",
        "_last_activity",
        "_lost",
        "_out",
        "_out_bytes",
        "_read_failed",
        "_same_loop",
        "_writable",
        "_wrote_since_read",
        "attributes",
        "close_reason",
        "id",
        "io_loop",
        "local_addr",
        "owner",
        "owner_loop",
        "remote_addr",
        "settings",
        "transport",
    )

    def __init__(self, owner: ConnectionOwner, settings: ConnectionSettings) -> None:
        self.id = next(_ids)
        self.owner = owner
        self.owner_loop = owner.owner_loop
        self.io_loop: asyncio.AbstractEventLoop | None = None
        self.settings = settings
        self.attributes: dict[str, Any] = {}
        self.remote_addr = ""
        self.local_addr = ""
        self.transport: asyncio.Transport | None = None
        self.close_reason: str | None = None
        if settings.max_frame_length is None:
            self._decoder = FrameDecoder()
        else:
            self._decoder = FrameDecoder(settings.max_frame_length)
        self._same_loop = True
        self._join_writes = False
        self._out: deque[bytes] = deque()
        self._flush_scheduled = False
        self._corked = False
        self._wrote_since_read = False
        self._closing = False
        self._lost = False
        self._writable = True
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None
        self._read_failed = False
        self._into_frame = False  # the last get_buffer() handed out a large frame's own buffer
        self._closed_event = asyncio.Event()
        self._out_bytes = 0  # bytes queued in _out (not yet handed to the transport)
        self._init_admission()

    def __repr__(self) -> str:
        state = "closed" if self._lost else ("closing" if self._closing else "active")
        return f"<Connection #{self.id} {self.local_addr} -> {self.remote_addr} {state}>"

    # -- state ------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        # _closing is set by every way a connection ends (close, abort, bad frame, idle, lost).
        return not self._closing and self.transport is not None

    @property
    def is_writable(self) -> bool:
        """False while the unsent bytes are above the high-water mark (Netty's isWritable)."""
        return self._writable

    # -- asyncio.BufferedProtocol (io loop) ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport; they implement its interface.
        self.transport = cast(asyncio.Transport, transport)
        self.io_loop = loop = asyncio.get_running_loop()
        self._same_loop = loop is self.owner_loop
        # TLS transports make one record (and one SSLObject.write call) per buffer given to writelines:
        # a batch of answers is joined into one buffer for them instead (see _write_out).
        self._join_writes = transport.get_extra_info("ssl_object") is not None
        self.remote_addr = format_addr(transport.get_extra_info("peername"))
        self.local_addr = format_addr(transport.get_extra_info("sockname"))
        s = self.settings
        self.transport.set_write_buffer_limits(high=s.high_water, low=s.low_water)
        self._tune_socket(transport.get_extra_info("socket"))
        self._last_activity = loop.time()
        if s.idle_s > 0:
            self._idle_handle = loop.call_later(s.idle_s, self._check_idle)
        self._to_owner(self.owner.on_connection_made, self)

    def _tune_socket(self, sock: Any) -> None:
        if sock is None:
            return
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.settings.sndbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.settings.sndbuf)
            if self.settings.rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.settings.rcvbuf)
        except OSError as exc:  # a socket option is a tuning, never a reason to drop the peer
            log.debug("socket options on %s not applied: %s", self.remote_addr, exc)

    # Reads (asyncio.BufferedProtocol): a large frame's bytes are received straight into its own
    # buffers (rocketq.remoting.protocol.large_frame), everything else into the io loop's read buffer,
    # from which the decoder cuts the frames. uvloop's and asyncio's TCP and TLS transports all call
    # get_buffer/buffer_updated; data_received serves any transport that does not.
    def get_buffer(self, sizehint: int) -> memoryview:
        view = self._decoder.receive_buffer()
        if view is not None:
            self._into_frame = True
            return view[:READ_TURN_BYTES]
        self._into_frame = False
        return _read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._read_failed:
            return
        self._wrote_since_read = False
        try:
            if self._into_frame:
                cmds = self._decoder.received(nbytes)
                self._read_turn(nbytes)
            else:
                cmds = self._decoder.feed(_read_buffer()[:nbytes])
        except FrameError as exc:
            self._on_frame_error(exc)
            return
        self._after_read(cmds)

    def data_received(self, data: bytes) -> None:
        if self._read_failed:
            return
        self._wrote_since_read = False
        try:
            cmds = self._decoder.feed(data)
        except FrameError as exc:
            self._on_frame_error(exc)
            return
        self._after_read(cmds)

    def _after_read(self, cmds: list[RemotingCommand]) -> None:
        decoder = self._decoder
        now = self.io_loop.time()  # type: ignore[union-attr]
        if cmds:
            self._last_activity = now
            if self._reserved:  # the reserved frame was the one at the buffer's head: it is complete
                self._release_input()
        if decoder.buffered:
            if cmds or not self._partial_since:
                self._partial_since = now
            if not self._reserved and self.settings.budget is not None:
                pending = decoder.pending_length
                if pending > RESERVE_ABOVE_BYTES:
                    self._reserve_input(pending + 4)
        else:
            self._partial_since = 0.0
        if cmds:
            if self._same_loop:
                self.owner.on_commands(self, cmds)
            else:
                self.owner_loop.call_soon_threadsafe(self.owner.on_commands, self, cmds)

    def _on_frame_error(self, exc: FrameError) -> None:
        # Logged here once; the decoder is poisoned, so nothing more is read from this peer.
        self._read_failed = True
        log.warning("bad frame from %s, closing the connection: %s", self.remote_addr, exc)
        self.close_reason = f"bad frame: {exc}"
        self._to_owner(self.owner.on_frame_error, self, exc)
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def eof_received(self) -> bool | None:
        return None  # close our side too (Netty closes a half-closed channel)

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        self._to_owner(self._on_writable)

    def _on_writable(self) -> None:
        self._wake_drain_waiters(None)
        budget = self.settings.budget
        if budget is not None:
            budget.note_output(self, 0)
        if self._backlog:
            self.schedule_backlog()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._closing = True
        self._writable = True
        self._partial_since = 0.0
        budget = self.settings.budget
        if budget is not None:
            budget.forget_input_waiter(self.id)
            if self._reserved:
                self._release_input()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        self._out.clear()
        if self.close_reason is None:
            self.close_reason = f"connection lost: {exc}" if exc else "closed"
        self._to_owner(self._finish_lost, exc)

    def _finish_lost(self, exc: BaseException | None) -> None:
        self._backlog.clear()
        budget = self.settings.budget
        if budget is not None:
            budget.note_output(self, 0)
        self._wake_drain_waiters(RemotingConnectError(f"connection to {self.remote_addr} closed"))
        try:
            self.owner.on_connection_lost(self, exc)
        finally:
            self._closed_event.set()

    def _drop(self, reason: str) -> None:
        """A limit closes the connection (io loop); the owner hears of it as of an idle one."""
        self.close_reason = reason
        self._to_owner(self.owner.on_idle, self)
        self._closing = True
        if self.transport is not None:
            self.transport.abort()

    # -- idle ---------------------------------------------------------------------------------------
    def _check_idle(self) -> None:
        loop = self.io_loop
        assert loop is not None
        remaining = self._last_activity + self.settings.idle_s - loop.time()
        if remaining > 0:
            self._idle_handle = loop.call_later(remaining, self._check_idle)
            return
        self._idle_handle = None
        if self._closing:
            return
        log.info("connection %s idle for %.0fs, closing it", self.remote_addr, self.settings.idle_s)
        self.close_reason = "idle"
        self._to_owner(self.owner.on_idle, self)
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    # -- writes (owner loop) -----------------------------------------------------------------------
    def send_request(self, cmd: RemotingCommand, coalesce: bool = False) -> None:
        """Queue a request (or oneway) frame; RemotingSendRequestError when the connection is closed.

        `coalesce`: the caller has other requests in flight, so this one need not be written through at
        once (ping-pong); it leaves with whatever else is written in this loop iteration.
        """
        if self._closing:
            raise RemotingSendRequestError(
                f"send request to {self.remote_addr} failed: connection closed ({self.close_reason})"
            )
        self._enqueue(cmd, coalesce)

    def send_response(self, cmd: RemotingCommand) -> bool:
        """Queue a response frame; False (logged) when the connection is already closed."""
        if self._closing:  # common when a client goes while its long-polling pulls are held
            log.debug(
                "response (code %s, opaque %s) to %s dropped: connection closed",
                cmd.code,
                cmd.opaque,
                self.remote_addr,
            )
            return False
        self._enqueue(cmd)
        return True

    def send_responses(self, cmds: list[RemotingCommand]) -> None:
        """send_response for each of `cmds`, in order: the answers of a run of requests. Corked (as a
        run is answered), each is queued as _enqueue queues it, without its two calls and write-through
        tests; the overflow check still follows every answer."""
        if not self._corked:
            for cmd in cmds:
                self.send_response(cmd)
            return
        out = self._out
        high_water = self.settings.high_water
        for i, cmd in enumerate(cmds):
            # Closed before or by an overflow check: the rest are dropped, as send_response drops them.
            if self._closing:
                for rest in cmds[i:]:
                    self.send_response(rest)
                return
            body = cmd.body
            if body and len(body) >= _SEPARATE_BODY_BYTES:
                prefix, body = encode_frame_parts(cmd)
                out.append(prefix)
                out.append(body)
                self._out_bytes += len(prefix) + len(body)
            else:
                frame = encode_frame(cmd)
                out.append(frame)
                self._out_bytes += len(frame)
            if (self._out_bytes > high_water or not self._writable) and self.transport is not None:
                self._check_overflow(self.transport)

    def _enqueue(self, cmd: RemotingCommand, coalesce: bool = False) -> None:
        body = cmd.body
        if body and len(body) >= _SEPARATE_BODY_BYTES:
            prefix, body = encode_frame_parts(cmd)
            frame = None
        else:
            frame = encode_frame(cmd)  # one buffer: header and body joined with one copy
        if self._same_loop and not (self._corked or self._flush_scheduled):
            # Nothing queued. Ping-pong traffic (a read since our last write) writes through at once,
            # the lowest latency for a lone request; a second write with no read in between starts
            # coalescing: it and whatever follows in this loop iteration leave in one flush. So does a
            # request sent while others are in flight (pipelining): written through, the first request
            # after each read would travel alone, and the peer would answer it alone, read after read.
            if not (self._wrote_since_read or coalesce):
                self._wrote_since_read = True
                transport = self.transport
                assert transport is not None
                if frame is None:
                    transport.writelines((prefix, body))
                else:
                    transport.write(frame)
                self._last_activity = self.owner_loop.time()
                if not self._writable:
                    self._check_overflow(transport)
                return
            self._flush_scheduled = True
            self.owner_loop.call_soon(self._flush)
        out = self._out
        if frame is None:
            out.append(prefix)
            out.append(body)
            self._out_bytes += len(prefix) + len(body)
        else:
            out.append(frame)
            self._out_bytes += len(frame)
        if self._out_bytes > self.settings.high_water or not self._writable:
            # Checked at every answer, corked or not: a batch of answers to a peer that does not read
            # must not pile up past the bounds before the batch ends.
            if self.transport is not None:
                self._check_overflow(self.transport)
        if not self._flush_scheduled:  # cross-thread (a same-loop flush was scheduled above or is corked)
            if not self._same_loop:
                self._flush_scheduled = True
                self.io_loop.call_soon_threadsafe(self._flush)  # type: ignore[union-attr]

    def cork(self) -> None:
        """Queue writes until uncork() (the owner does this around a batch of commands)."""
        if self._same_loop:
            self._corked = True

    def uncork(self) -> None:
        """Write what was queued while corked, as one buffer."""
        if self._corked:  # only ever set on a same-loop connection
            self._corked = False
            if self._out:
                self._write_out()

    def _flush(self) -> None:
        """Write everything queued as one buffer (io loop; scheduled, never called while corked)."""
        self._flush_scheduled = False  # before draining: see the module docstring
        if self._corked:
            return
        self._write_out()

    def _write_out(self) -> None:
        out = self._out
        transport = self.transport
        self._out_bytes = 0
        if transport is None or self._lost:
            out.clear()
            return
        if out:
            if len(out) == 1:
                transport.write(out.popleft())
            else:
                parts = []
                pop = out.popleft
                while out:
                    parts.append(pop())
                if self._join_writes:
                    transport.write(b"".join(parts))
                else:
                    transport.writelines(parts)
        self._last_activity = self.io_loop.time()  # type: ignore[union-attr]
        if not self._writable:
            self._check_overflow(transport)
        if self._backlog:  # _out_bytes just fell to 0: backlogged requests may have room now
            self._to_owner(self.schedule_backlog)

    def _check_overflow(self, transport: asyncio.Transport) -> None:
        """Drop a peer that lets more than max_write_buffer bytes pile up (it does not read), or that
        holds more than its share of the server's output budget while that budget is exceeded."""
        if self._closing:
            return
        unsent = transport.get_write_buffer_size() + self._out_bytes
        settings = self.settings
        if unsent > settings.max_write_buffer:
            why = f"more than maxWriteBufferBytes ({settings.max_write_buffer})"
        elif settings.budget is not None and settings.budget.note_output(self, unsent):
            budget = settings.budget
            why = (
                f"more than its share of maxTotalBufferedOutputBytes ({budget.output_limit}; "
                f"{budget.output_used} unsent over all connections)"
            )
        else:
            return
        log.warning(
            "%s does not read what we send (%d bytes unsent, %s), closing the connection",
            self.remote_addr,
            unsent,
            why,
        )
        self.close_reason = "write buffer overflow"
        self._out.clear()
        self._out_bytes = 0
        if self.settings.budget is not None:
            self.settings.budget.note_output(self, 0)
        self.abort()

    async def drain(self) -> None:
        """Wait until the connection is writable again (owner loop)."""
        if self._writable or self._lost:
            return
        fut = self.owner_loop.create_future()
        self._drain_waiters.append(fut)
        await fut

    def _wake_drain_waiters(self, exc: BaseException | None) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for fut in waiters:
            if not fut.done():
                if exc is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(exc)

    # -- close ----------------------------------------------------------------------------------
    def close(self, reason: str = "closed locally") -> None:
        """Flush what is queued, then close (idempotent; callable from the owner loop)."""
        if self._closing:
            return
        self._closing = True
        if self.close_reason is None:
            self.close_reason = reason
        if self._same_loop:
            self._close_on_io()
        elif self.io_loop is not None:
            try:
                self.io_loop.call_soon_threadsafe(self._close_on_io)
            except RuntimeError:  # io loop already stopped: nothing left to flush
                pass

    def _close_on_io(self) -> None:
        self._corked = False
        if self._out:
            self._write_out()
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection without flushing (shutdown past its grace period)."""
        self._closing = True
        if self.transport is None:
            return
        if self._same_loop:
            self.transport.abort()
        elif self.io_loop is not None:
            try:
                self.io_loop.call_soon_threadsafe(self.transport.abort)
            except RuntimeError:
                pass

    async def wait_closed(self) -> None:
        """Wait until the owner has seen the connection go (owner loop)."""
        await self._closed_event.wait()
