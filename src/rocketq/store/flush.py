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
import threading
from concurrent.futures import ThreadPoolExecutor

from rocketq.common.clock import Clock
from rocketq.common.service import PeriodicService, Service
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
    """SYNC_FLUSH: concurrent puts share one fdatasync, on a thread of its own (Java GroupCommitService).

    A put registers "durable past my end offset" and awaits a future; the thread flushes whatever has
    been written when it starts a round, then hands the reached offset back to the loop, which answers
    every request that round covered; requests that came in meanwhile share the next round. A thread
    of its own (not an executor) keeps a round at one hand-over each way. Timeouts are the loop's:
    one timer watches the oldest request, so a flush stuck in the kernel still lets every waiter go
    with FLUSH_DISK_TIMEOUT when its syncFlushTimeout is up.
    """

    name = "GroupCommitService"

    def __init__(self, flusher: CommitLogFlusher, timeout_ms: int = 5000) -> None:
        super().__init__()
        self.flusher = flusher
        self.timeout_s = timeout_ms / 1000
        self._requests: list[tuple[int, float, asyncio.Future[bool]]] = []  # loop thread only
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # A latch, not a Condition: released (from the loop) when there is work, acquired (by the
        # thread) to wait for it. Lock.release is one C call; Condition.notify is Python code, and a
        # put would pay for it. Extra releases coalesce; the thread re-checks _wanted after each wait.
        self._signal = threading.Lock()
        self._signal.acquire()
        self._wanted = 0  # highest offset asked for (written by the loop thread only)
        self._flushed = 0  # highest offset made durable (written by the flush thread only)
        self._stopping = False
        # Set by the thread just before it waits for a signal: only then does a request signal it.
        # While it flushes, requests just raise _wanted, which it reads when the round is done (a
        # signal per put would be a futex wake, or a RuntimeError from releasing the released latch).
        self._idle = False
        self._thread: threading.Thread | None = None
        self._rounds_started = 0  # bumped by the thread as it takes a round's snapshot
        self._group_round = -1  # the round count when the newest request group was opened
        self._wakes = 0  # signals the thread has taken (written by the flush thread only)
        self._signalled_at = -1  # _wakes when a request last signalled the thread (loop thread)

    async def _on_start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    async def _on_stop(self) -> None:
        self._stopping = True
        self._release()
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join, 30)
            self._thread = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # A last round so that nobody is left waiting on a flush that will not come.
        self._answer(self.flusher.flush(0), final=True)

    def request(self, end_offset: int) -> asyncio.Future[bool]:
        """A future that becomes True once the commit log is durable up to `end_offset`, False when
        syncFlushTimeout passes first.

        Requests made before the flush thread starts its next round share one future (and its
        deadline): a round covers them all, so they are answered together.
        """
        requests = self._requests
        if requests and self._group_round == self._rounds_started:
            end, deadline, future = requests[-1]
            if end_offset > end:
                requests[-1] = (end_offset, deadline, future)
                self._ask(end_offset)
            return future
        # The loop the service started on (requests come from it alone): asyncio.get_running_loop() is
        # a getpid system call each time, one more per SYNC_FLUSH put (bench/sync_round_trip.py --perf).
        loop = self._loop or asyncio.get_running_loop()
        future = loop.create_future()
        requests.append((end_offset, loop.time() + self.timeout_s, future))
        self._group_round = self._rounds_started
        self._ask(end_offset)
        if self._timer is None:
            self._timer = loop.call_later(self.timeout_s, self._expire)
        return future

    def wakeup(self) -> None:
        """Flush what is written without anyone waiting (a put with WAIT=false)."""
        self._ask(self.flusher.commit_log.max_offset)

    def _ask(self, end_offset: int) -> None:
        if end_offset > self._wanted:
            self._wanted = end_offset
            # At most one signal outstanding: a signalled thread stays "idle" until it has the GIL,
            # which it gets when the loop next waits, so each later put of a burst would release
            # the released latch again (a RuntimeError raised and caught, ~0.3 us a put). A signal
            # is outstanding while the thread has not counted a wake-up since it was given; after
            # each wake-up the thread re-checks _wanted (raised above, before this check).
            wakes = self._wakes
            if self._idle and self._signalled_at != wakes:
                self._signalled_at = wakes
                self._release()

    def _release(self) -> None:
        try:
            self._signal.release()
        except RuntimeError:
            pass  # already released: the thread has yet to take the earlier signal

    def _run(self) -> None:
        """The flush thread: one fdatasync per round, whatever it covers."""
        while True:
            while not self._stopping and self._wanted <= self._flushed:
                self._idle = True
                # Re-checked after saying so: a request either came before (seen here) or sees _idle.
                if not self._stopping and self._wanted <= self._flushed:
                    self._signal.acquire()
                    self._wakes += 1
                self._idle = False
            if self._stopping:
                return
            self._rounds_started += 1  # requests from now on wait for the next round
            try:
                where = self.flusher.flush(0)
            except OSError as exc:
                log.error("commit-log flush failed: %r", exc)
                if self._signal.acquire(timeout=0.05):  # the disk is failing: do not spin; waiters time out
                    self._wakes += 1
                continue
            self._flushed = max(self._flushed, where)
            loop = self._loop
            if loop is not None:
                try:
                    loop.call_soon_threadsafe(self._answer, where)
                except RuntimeError:
                    return  # the loop is closed: nobody to answer

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
        dispatched = dispatched_offset(self.commit_log, self.index)  # here, on the loop
        await asyncio.get_running_loop().run_in_executor(self.executor, self.flush, thorough, dispatched)

    def flush(self, thorough: bool = True, dispatched: int | None = None) -> None:
        flush_queues(
            self.commit_log, self.queues, self.index, self.checkpoint, self.config, thorough, dispatched
        )


def dispatched_offset(commit_log: CommitLog, index: IndexService | None) -> int:
    """How far the queues and the index hold every record (loop thread): the commit log's end, once
    the index's pending entries are written (a slave's: where its dispatch of replicated records is)."""
    if index is not None:
        index.drain()
    end = commit_log.dispatch_end
    end = commit_log.max_offset if end is None else end
    unwritten = index.unwritten_from if index is not None else None
    return end if unwritten is None else min(end, unwritten)


def flush_queues(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    checkpoint: StoreCheckpoint,
    config: MessageStoreConfig,
    thorough: bool = True,
    dispatched: int | None = None,
) -> None:
    """Flush queues and index, then the checkpoint (thread-safe, given `dispatched`, which
    dispatched_offset() took on the loop; without it this runs on the loop and takes it itself).
    Dispatch is inline, so the commit log's end, with the index drained, is how far the queues and
    the index are complete; the checkpoint then vouches for that."""
    if dispatched is None:
        dispatched = dispatched_offset(commit_log, index)
    store_ts = commit_log.last_store_timestamp
    queues.flush(0 if thorough else config.flush_consume_queue_least_pages)
    # The queues' durable offset advances every round, to the record of the first unit still unflushed
    # (a queue under flushConsumeQueueLeastPages holds it back until a thorough round), so that a crash
    # re-dispatches from near the end instead of from where the last thorough flush left it.
    durable = dispatched if thorough else queues.durable_below(dispatched)
    checkpoint.logics_offset = max(checkpoint.logics_offset, durable)
    if thorough:  # Java's field: when every unit was last known durable
        checkpoint.logics_msg_timestamp = max(checkpoint.logics_msg_timestamp, store_ts)
    if index is not None:
        index.flush()
    checkpoint.index_offset = max(checkpoint.index_offset, dispatched)
    checkpoint.index_msg_timestamp = max(checkpoint.index_msg_timestamp, store_ts)
    checkpoint.flush()
