"""Test doubles for the transport without sockets: a captured transport, a manual loop clock, an owner.

MockTransport records writes like uvicorn's MockTransport; FakeTimerLoop lets a test fire timers by
advancing time (uvicorn's MockLoop.run_later) instead of sleeping.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.transport.connection import Connection


class MockTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.write_calls = 0
        self.closed = False
        self.aborted = False
        self.buffer_size = 0
        self.limits: tuple[int | None, int | None] = (None, None)
        self.paused = False
        self.pauses = 0

    def write(self, data: bytes) -> None:
        self.write_calls += 1
        self.writes.append(bytes(data))

    def writelines(self, parts: Any) -> None:
        self.write_calls += 1
        self.writes.append(b"".join(parts))

    @property
    def data(self) -> bytes:
        return b"".join(self.writes)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.7", 51234), "sockname": ("127.0.0.1", 10911)}.get(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.limits = (high, low)

    def get_write_buffer_size(self) -> int:
        return self.buffer_size

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.pauses += not self.paused
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


class FakeOwner:
    """Records what a Connection reports (ConnectionOwner)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.owner_loop = loop
        self.batches: list[list[RemotingCommand]] = []
        self.events: list[str] = []
        self.frame_errors: list[FrameError] = []

    def on_commands(self, conn: Connection, cmds: list[RemotingCommand]) -> None:
        self.batches.append(cmds)

    def on_connection_made(self, conn: Connection) -> None:
        self.events.append("made")

    def on_connection_lost(self, conn: Connection, exc: BaseException | None) -> None:
        self.events.append("lost")

    def on_idle(self, conn: Connection) -> None:
        self.events.append("idle")

    def on_frame_error(self, conn: Connection, exc: FrameError) -> None:
        self.events.append("frame_error")
        self.frame_errors.append(exc)


class FakeTimer:
    def __init__(self, when: float, callback: Any, args: tuple[Any, ...]) -> None:
        self._when, self._callback, self._args, self._cancelled = when, callback, args, False

    def when(self) -> float:
        return self._when

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled

    def run(self) -> None:
        self._callback(*self._args)


class FakeTimerLoop:
    """Just enough of a loop for ResponseTable: a settable clock and timers fired on demand."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[FakeTimer] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Any, *args: Any) -> FakeTimer:
        handle = FakeTimer(when, callback, args)
        self.timers.append(handle)
        return handle

    def advance(self, seconds: float) -> None:
        """Move the clock and run every live timer that is due, in deadline order."""
        self.now += seconds
        while True:
            due = sorted(
                (h for h in self.timers if not h.cancelled() and h.when() <= self.now), key=FakeTimer.when
            )
            if not due:
                return
            self.timers.remove(due[0])
            due[0].run()


class FakeConnection:
    """What Dispatcher and the endpoint need from a connection: an address and send_response."""

    def __init__(self) -> None:
        self.remote_addr = "10.0.0.7:51234"
        self.attributes: dict[str, Any] = {}
        self.sent: list[RemotingCommand] = []
        self.corked = 0
        self.backlog_size = 0

    def send_response(self, cmd: RemotingCommand) -> bool:
        self.sent.append(cmd)
        return True

    def send_responses(self, cmds: list[RemotingCommand]) -> None:
        self.sent.extend(cmds)

    def admit(self, cmd: RemotingCommand) -> bool:
        return True

    def request_done(self) -> None:
        return None

    def cork(self) -> None:
        self.corked += 1

    def uncork(self) -> None:
        self.corked -= 1
