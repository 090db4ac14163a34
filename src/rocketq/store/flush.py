"""Flushing: ASYNC_FLUSH's periodic commit-log flush, SYNC_FLUSH's group commit, and the queue/index flush.

Port of CommitLog.{FlushRealTimeService, GroupCommitService} and DefaultMessageStore.FlushConsumeQueueService
(4.9.8). Every fdatasync runs on a worker thread, so the event loop keeps appending meanwhile.
Group commit: a put registers "flushed past my end offset" and awaits it; the service flushes whatever
has been written when it starts a round and then answers every request that round covered, so puts
that arrive during one fdatasync share the next one. Checkpoint: the commit log's durable offset is
recorded after each flush; the consume queues' and the index's after a thorough queue flush; the
checkpoint file itself is written by the queue flush, after the files it vouches for.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from rocketq.common.clock import Clock
from rocketq.common.service import PeriodicService, Service, spawn
from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import MessageStoreConfig
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.index_service import IndexService

log = logging.getLogger("rocketq.store")


class CommitLogFlusher:
    """Flushes the commit log and records the durable offset in the checkpoint (thread-safe)."""

    def __init__(self, commit_log: CommitLog, checkpoint: StoreCheckpoint) -> None:
        self.commit_log = commit_log
        self.checkpoint = checkpoint

    def flush(self, least_pages: int = 0) -> int:
        store_ts = self.commit_log.last_store_timestamp
        where = self.commit_log.queue.flush(least_pages)
        if where > self.checkpoint.physic_offset:
            self.checkpoint.physic_offset = where
            self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, store_ts)
        return where


class AsyncFlushService(PeriodicService):
    """ASYNC_FLUSH: every flushIntervalCommitLog, flush when flushCommitLogLeastPages pages are dirty;
    every flushCommitLogThoroughInterval, flush whatever is dirty."""

    def __init__(
        self,
        flusher: CommitLogFlusher,
        config: MessageStoreConfig,
        clock: Clock,
        executor: ThreadPoolExecutor,
    ) -> None:
        super().__init__("FlushRealTimeService", config.flush_interval_commit_log_ms / 1000, self._round)
        self.flusher = flusher
        self.config = config
        self.clock = clock
        self.executor = executor
        self._last_thorough = clock.monotonic_ms()

    async def _round(self) -> None:
        now = self.clock.monotonic_ms()
        least = self.config.flush_commit_log_least_pages
        if now - self._last_thorough >= self.config.flush_commit_log_thorough_interval_ms:
            least = 0
            self._last_thorough = now
        await asyncio.get_running_loop().run_in_executor(self.executor, self.flusher.flush, least)


class GroupCommitService(Service):
    """SYNC_FLUSH: concurrent puts share one fdatasync (a round covers everything written before it).

    Timeouts are the service's job, not each put's: one timer at a time watches the oldest request,
    so a put costs a future and a list append, and a flush stuck in the kernel still lets every
    waiter go with FLUSH_DISK_TIMEOUT when its syncFlushTimeout is up.
    """

    name = "GroupCommitService"

    def __init__(
        self, flusher: CommitLogFlusher, executor: ThreadPoolExecutor, timeout_ms: int = 5000
    ) -> None:
        super().__init__()
        self.flusher = flusher
        self.executor = executor
        self.timeout_s = timeout_ms / 1000
        self._requests: list[tuple[int, float, asyncio.Future[bool]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def _on_start(self) -> None:
        self._task = spawn(self.name, self._run())

    async def _on_stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # A last round so that nobody is left waiting on a flush that will not come.
        where = self.flusher.flush(0)
        self._answer(where, final=True)

    def request(self, end_offset: int) -> asyncio.Future[bool]:
        """A future that becomes True once the commit log is durable up to `end_offset`, False when
        syncFlushTimeout passes first."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._requests.append((end_offset, loop.time() + self.timeout_s, future))
        self._wake.set()
        if self._timer is None:
            self._timer = loop.call_later(self.timeout_s, self._expire)
        return future

    def wakeup(self) -> None:
        self._wake.set()

    def _expire(self) -> None:
        """Fail the requests whose time is up; re-arm for the oldest one left."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending: list[tuple[int, float, asyncio.Future[bool]]] = []
        for request in self._requests:
            _end, deadline, future = request
            if future.done():
                continue
            if deadline <= now:
                future.set_result(False)  # the put logs it
            else:
                pending.append(request)
        self._requests = pending
        if pending:
            self._timer = loop.call_later(max(0.0, pending[0][1] - now), self._expire)

    def _answer(self, where: int, final: bool = False) -> None:
        pending: list[tuple[int, float, asyncio.Future[bool]]] = []
        for request in self._requests:
            future = request[2]
            if future.done():
                continue
            if where >= request[0]:
                future.set_result(True)
            elif final:
                future.set_result(False)
            else:
                pending.append(request)
        self._requests = pending

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                where = await loop.run_in_executor(self.executor, self.flusher.flush, 0)
            except OSError as exc:
                log.error("commit-log flush failed: %r", exc)
                continue
            self._answer(where)
            if self._requests:
                self._wake.set()


class QueueFlushService(PeriodicService):
    """Flushes consume queues and index files on their own schedule, then writes the checkpoint."""

    def __init__(
        self,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: IndexService | None,
        checkpoint: StoreCheckpoint,
        config: MessageStoreConfig,
        clock: Clock,
        executor: ThreadPoolExecutor,
    ) -> None:
        super().__init__(
            "FlushConsumeQueueService", config.flush_interval_consume_queue_ms / 1000, self._round
        )
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self.checkpoint = checkpoint
        self.config = config
        self.clock = clock
        self.executor = executor
        self._last_thorough = clock.monotonic_ms()

    async def _round(self) -> None:
        now = self.clock.monotonic_ms()
        thorough = now - self._last_thorough >= self.config.flush_consume_queue_thorough_interval_ms
        if thorough:
            self._last_thorough = now
        await asyncio.get_running_loop().run_in_executor(self.executor, self.flush, thorough)

    def flush(self, thorough: bool = True) -> None:
        flush_queues(self.commit_log, self.queues, self.index, self.checkpoint, self.config, thorough)


def flush_queues(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    checkpoint: StoreCheckpoint,
    config: MessageStoreConfig,
    thorough: bool = True,
) -> None:
    """Flush queues and index, then the checkpoint (thread-safe). Dispatch is inline, so the commit
    log's end at the start is how far the queues are complete; the checkpoint then vouches for that."""
    dispatched = commit_log.max_offset
    store_ts = commit_log.last_store_timestamp
    queues.flush(0 if thorough else config.flush_consume_queue_least_pages)
    if thorough:
        checkpoint.logics_offset = max(checkpoint.logics_offset, dispatched)
        checkpoint.logics_msg_timestamp = max(checkpoint.logics_msg_timestamp, store_ts)
    if index is not None:
        index.flush()
    checkpoint.index_offset = max(checkpoint.index_offset, dispatched)
    checkpoint.index_msg_timestamp = max(checkpoint.index_msg_timestamp, store_ts)
    checkpoint.flush()
