"""PullRequestHoldService: pulls parked until a message arrives for their queue or their time is up.

Port of org.apache.rocketmq.broker.longpolling.{PullRequestHoldService, ManyPullRequest, PullRequest,
NotifyMessageArrivingListener} (4.9.8). A pull that found nothing (PULL_NOT_FOUND) with the suspend bit
set is parked under (topic, queueId). It is replayed (re-executed with suspension disabled, answered
with the original opaque through `conn.send_response`) when:
- the store reports a new message for that queue that passes the pull's filter, or
- the periodic re-check (every 5 s, Java's fixed period) finds the queue grew, or
- its hold time (the request's suspendTimeoutMillis, or shortPollingTimeMills with long polling off)
  has passed.
Deviation: besides Java's 5 s scan, each parked pull gets its own timer for its deadline, so a 15 s
hold is answered after 15 s rather than up to 20 s. Replays are scheduled with `loop.call_soon`, never
run inside the store's dispatch, and arrivals reported from another thread are moved onto the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.store.protocols import MessageFilter

log = logging.getLogger("rocketq.broker.longpolling")


class _Connection(Protocol):
    @property
    def is_active(self) -> bool: ...


Replay = Callable[[Any, RemotingCommand], None]


class PullRequest:
    """One parked pull: what to replay, on which connection, from which offset, until when."""

    __slots__ = ("conn", "deadline_ms", "message_filter", "pull_from_offset", "request", "timer")

    def __init__(
        self,
        request: RemotingCommand,
        conn: Any,
        pull_from_offset: int,
        deadline_ms: int,
        message_filter: MessageFilter | None,
    ) -> None:
        self.request = request
        self.conn = conn
        self.pull_from_offset = pull_from_offset
        self.deadline_ms = deadline_ms
        self.message_filter = message_filter
        self.timer: asyncio.TimerHandle | None = None


class PullRequestHoldService:
    """Holds pulls per queue; `replay(conn, request)` re-runs one (the pull processor's wake-up path)."""

    def __init__(
        self,
        max_offset: Callable[[str, int], int],
        replay: Replay,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._max_offset = max_offset
        self._replay = replay
        self._clock = clock
        self._table: dict[tuple[str, int], list[PullRequest]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    # -- parking ----------------------------------------------------------------------------------
    def suspend(self, topic: str, queue_id: int, request: PullRequest, hold_ms: int) -> None:
        """Park `request` (called on the loop by the pull processor)."""
        self._bind_loop()
        self._table.setdefault((topic, queue_id), []).append(request)
        if self._loop is not None:
            request.timer = self._loop.call_later(
                max(hold_ms, 0) / 1000.0, self._expire, topic, queue_id, request
            )

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._table.values())

    def _bind_loop(self) -> None:
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._loop_thread = threading.get_ident()

    # -- wake-ups ---------------------------------------------------------------------------------
    def on_message_arrival(
        self,
        topic: str,
        queue_id: int,
        logical_offset: int,
        tags_code: int,
        store_timestamp: int,
        properties: dict[str, str] | None,
    ) -> None:
        """The store's arrival listener: cheap when nothing is parked on that queue."""
        if (topic, queue_id) not in self._table:
            return
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(
                self.notify_message_arriving, topic, queue_id, logical_offset + 1, tags_code, properties
            )
            return
        self.notify_message_arriving(topic, queue_id, logical_offset + 1, tags_code, properties)

    def notify_message_arriving(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_code: int | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        key = (topic, queue_id)
        held = self._table.pop(key, None)
        if not held:
            return
        now = self._clock.monotonic_ms()
        keep: list[PullRequest] = []
        for pr in held:
            if not pr.conn.is_active:
                self._cancel_timer(pr)
                continue
            newest = max_offset
            if newest <= pr.pull_from_offset:
                newest = self._max_offset(topic, queue_id)
            if newest > pr.pull_from_offset and self._matches(pr, tags_code, properties):
                self._wake(pr)
            elif now >= pr.deadline_ms:
                self._wake(pr)
            else:
                keep.append(pr)
        if keep:
            self._table.setdefault(key, []).extend(keep)

    @staticmethod
    def _matches(pr: PullRequest, tags_code: int | None, properties: dict[str, str] | None) -> bool:
        f = pr.message_filter
        if f is None:
            return True
        if not f.is_matched_by_consume_queue(tags_code):
            return False
        return properties is None or f.is_matched_by_commit_log(None, properties)

    def check_hold_requests(self) -> None:
        """Java's periodic scan: re-evaluate every parked pull against its queue's max offset."""
        for topic, queue_id in list(self._table):
            try:
                self.notify_message_arriving(topic, queue_id, self._max_offset(topic, queue_id))
            except Exception:
                log.exception("checking held pulls of %s:%d failed", topic, queue_id)

    def _expire(self, topic: str, queue_id: int, pr: PullRequest) -> None:
        held = self._table.get((topic, queue_id))
        if held is None or pr not in held:
            return
        held.remove(pr)
        if not held:
            del self._table[(topic, queue_id)]
        pr.timer = None
        if pr.conn.is_active:
            self._replay(pr.conn, pr.request)

    def _wake(self, pr: PullRequest) -> None:
        self._cancel_timer(pr)
        if self._loop is not None:
            self._loop.call_soon(self._replay, pr.conn, pr.request)
        else:
            self._replay(pr.conn, pr.request)

    @staticmethod
    def _cancel_timer(pr: PullRequest) -> None:
        if pr.timer is not None:
            pr.timer.cancel()
            pr.timer = None

    # -- shutdown -----------------------------------------------------------------------------------
    def drain(self) -> None:
        """Answer every parked pull now (shutdown): clients get PULL_NOT_FOUND instead of a timeout."""
        held = [pr for prs in self._table.values() for pr in prs]
        self._table.clear()
        for pr in held:
            self._cancel_timer(pr)
            if pr.conn.is_active:
                try:
                    self._replay(pr.conn, pr.request)
                except Exception:
                    log.exception("answering a held pull at shutdown failed")
