"""Consume services: hand pulled messages to the listener, concurrently or in queue order, and settle offsets.

Port of org.apache.rocketmq.client.impl.consumer.{ConsumeMessageConcurrentlyService,
ConsumeMessageOrderlyService} (4.9.8). A pool of `consume_thread_max` workers runs listener calls (a
sync listener on a thread of a pool of the same size, an async one on the loop). Concurrent: batches of
consume_message_batch_max_size; a failed batch goes back to the broker (CONSUMER_SEND_MSG_BACK, or a
re-send to %RETRY%<group>), and a message whose send-back fails stays in the ProcessQueue and is
consumed again locally 5 s later, so it is never lost; the offset committed is always the lowest one
not yet consumed. Orderly: one batch at a time per queue under the queue's broker lock;
SUSPEND_CURRENT_QUEUE_A_MOMENT puts the batch back and pauses the queue for suspend_current_queue_time_ms.
Deviations: a listener that returns None counts as success; an orderly queue is never consumed for more
than 60 s in one go (as Java) but without holding a thread while it waits for its lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from rocketq.client import metrics as client_metrics
from rocketq.client.config import ConsumerConfig, MessageModel
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_api import reset_retry_topic
from rocketq.client.consumer.pulled import add_properties
from rocketq.client.model import ConsumeResult
from rocketq.client.trace.encoder import ConsumeReturnType
from rocketq.client.trace.hooks import ConsumeTraceHook
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.msg_id import UniqueIdGenerator
from rocketq.common.service import ServiceState, spawn

log = logging.getLogger("rocketq.client.consume")

Listener = Callable[[list[MessageExt]], Any]
Job = Callable[[], Awaitable[None]]

RETRY_LOCALLY_AFTER_S = 5.0
MAX_TIME_CONSUME_CONTINUOUSLY_MS = 60_000
LOCK_RETRY_OK_S = 0.01
LOCK_RETRY_FAILED_S = 3.0
EXPIRED_PER_QUEUE = 16
EXPIRED_DELAY_LEVEL = 3


class ConsumeHost(Protocol):
    group: str
    config: ConsumerConfig
    offset_store: OffsetStore

    @property
    def client_id(self) -> str: ...

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool: ...

    async def lock_queue(self, mq: MessageQueue) -> bool: ...


class ConsumePool:
    """`size` workers draining a job queue; sync listener calls run on a thread pool of the same size."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._jobs: asyncio.Queue[Job] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._timers: set[asyncio.TimerHandle] = set()
        self.state = ServiceState.CREATE_JUST
        self.busy = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def start(self) -> None:
        self.state = ServiceState.RUNNING
        self._workers = [spawn(f"consume-worker-{i}", self._work()) for i in range(self.size)]

    async def _work(self) -> None:
        while True:
            job = await self._jobs.get()
            self.busy += 1
            self._idle.clear()
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("consume job failed")
            finally:
                self.busy -= 1
                if self.busy == 0:
                    self._idle.set()
                self._jobs.task_done()

    def submit(self, job: Job) -> None:
        if self.state is ServiceState.RUNNING:
            self._jobs.put_nowait(job)

    async def drain(self) -> None:
        """Wait until every submitted job has run (timers not yet fired are not waited for)."""
        await self._jobs.join()

    def submit_later(self, delay_s: float, job: Job) -> None:
        if self.state is not ServiceState.RUNNING:
            return
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            if handle is not None:
                self._timers.discard(handle)
            self.submit(job)

        handle = asyncio.get_running_loop().call_later(delay_s, fire)
        self._timers.add(handle)

    async def call(self, fn: Listener, msgs: list[MessageExt]) -> Any:
        """Run the listener: awaited when async, on the thread pool when sync."""
        if inspect.iscoroutinefunction(fn):
            return await fn(msgs)
        if self._threads is None:
            self._threads = concurrent.futures.ThreadPoolExecutor(
                self.size, thread_name_prefix="rocketq-consume"
            )
        result = await asyncio.get_running_loop().run_in_executor(self._threads, fn, msgs)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def shutdown(self, wait_ms: int) -> None:
        """Stop taking jobs; wait up to `wait_ms` for the running ones, then cancel the workers."""
        self.state = ServiceState.STOPPING
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        try:
            await asyncio.wait_for(self._idle.wait(), wait_ms / 1000)
        except TimeoutError:
            log.info(
                "%d listener call(s) still running at shutdown; their messages will be redelivered", self.busy
            )
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
        self.state = ServiceState.SHUTDOWN_ALREADY


def _normalise(result: Any, orderly: bool) -> ConsumeResult:
    if result is None or result is ConsumeResult.SUCCESS:
        return ConsumeResult.SUCCESS
    if isinstance(result, ConsumeResult):
        if orderly:
            return ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeResult.RECONSUME_LATER
    if result is True:
        return ConsumeResult.SUCCESS
    log.warning("a listener returned %r; treating it as a failure", result)
    return ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT if orderly else ConsumeResult.RECONSUME_LATER


class _BaseService:
    orderly = False

    def __init__(self, host: ConsumeHost, listener: Listener, clock: Clock = SYSTEM_CLOCK) -> None:
        self.host = host
        self.listener = listener
        self.config = host.config
        self._clock = clock
        self.pool = ConsumePool(host.config.consume_thread_max)
        self.ok_count = 0
        self.failed_count = 0
        self.trace: ConsumeTraceHook | None = None  # set by the consumer when enable_msg_trace
        self._request_ids = UniqueIdGenerator()

    def start(self) -> None:
        self.pool.start()

    async def shutdown(self, wait_ms: int) -> None:
        await self.pool.shutdown(wait_ms)

    async def invoke(self, msgs: list[MessageExt]) -> ConsumeResult:
        """Call the listener once; an exception counts as a failed batch."""
        reset_retry_topic(msgs, self.host.group)
        # Each message's CONSUME_START_TIME; a view gets it when its properties are first read.
        start = self._clock.now_ms()
        add_properties(msgs, C.PROPERTY_CONSUME_START_TIMESTAMP, str(start))
        trace = self.trace
        traced = trace.before(msgs, self._request_ids.next_id(self._clock.now_ms())) if trace else None
        returned: Any = None
        try:
            returned = await self.pool.call(self.listener, msgs)
            result = _normalise(returned, self.orderly)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "listener of %s raised on %d message(s); they will be consumed again",
                self.host.group,
                len(msgs),
            )
            result = (
                ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if self.orderly
                else ConsumeResult.RECONSUME_LATER
            )
            returned = _RAISED
        if trace is not None:
            trace.after(
                traced,
                len(msgs),
                result is ConsumeResult.SUCCESS,
                self._return_type(returned, result, start),
            )
        metrics = client_metrics.active()
        if metrics is not None:
            metrics.consumed(
                msgs,
                self.host.group,
                self.host.client_id,
                result is ConsumeResult.SUCCESS,
                start,
                self._clock.now_ms(),
            )
        if result is ConsumeResult.SUCCESS:
            self.ok_count += len(msgs)
        else:
            self.failed_count += len(msgs)
        return result

    def _return_type(self, returned: Any, result: ConsumeResult, started_ms: int) -> ConsumeReturnType:
        """ConsumeMessageConcurrentlyService's ConsumeReturnType of a listener call, for SubAfter's contextCode."""
        if returned is _RAISED:
            return ConsumeReturnType.EXCEPTION
        if returned is None:
            return ConsumeReturnType.RETURNNULL
        if self._clock.now_ms() - started_ms >= self.config.effective_consume_timeout_ms():
            return ConsumeReturnType.TIME_OUT
        return ConsumeReturnType.SUCCESS if result is ConsumeResult.SUCCESS else ConsumeReturnType.FAILED


_RAISED = object()  # the listener raised (ConsumeReturnType.EXCEPTION)


class ConcurrentConsumeService(_BaseService):
    """Any message of any queue may be consumed at any time; offsets follow the lowest unconsumed."""

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        size = self.config.consume_message_batch_max_size
        for i in range(0, len(msgs), size):
            batch = msgs[i : i + size]
            self.pool.submit(lambda b=batch: self._consume(b, pq, mq))  # type: ignore[misc]

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        status = await self.invoke(msgs)
        if pq.dropped:
            log.info("%s was dropped while consuming; %d message(s) will be redelivered", mq, len(msgs))
            return
        await self._settle(status, msgs, pq, mq)

    async def _settle(
        self, status: ConsumeResult, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue
    ) -> None:
        done = msgs
        if status is not ConsumeResult.SUCCESS:
            if self.config.message_model is MessageModel.BROADCASTING:
                log.warning("broadcasting consumer %s drops %d failed message(s)", self.host.group, len(msgs))
            else:
                failed: list[MessageExt] = []
                for msg in msgs:
                    if not await self.host.send_message_back(msg, 0, mq.broker_name):
                        msg.reconsume_times += 1
                        failed.append(msg)
                if failed:
                    done = [m for m in msgs if m not in failed]
                    self.pool.submit_later(RETRY_LOCALLY_AFTER_S, lambda: self._consume(failed, pq, mq))
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            self.host.offset_store.update_offset(mq, offset, increase_only=True)

    async def consume_directly(self, msg: MessageExt) -> ConsumeResult:
        return await self.invoke([msg])

    async def clean_expired(self, queues: Mapping[MessageQueue, ProcessQueue]) -> int:
        """Send back messages stuck in the listener for over consume_timeout; how many were.

        Java ProcessQueue.cleanExpiredMsg: per queue up to 16 of the lowest held messages whose consume
        start is older than the timeout go back to the broker with delay level 3 and leave the queue, so
        the committed offset moves past them. (Java leaves the offset to the next settled batch; here it
        is recorded at once.) The listener call still running is not interrupted; its result for them
        is ignored unless it fails them again.
        """
        timeout_ms = self.config.effective_consume_timeout_ms()
        sent = 0
        for mq, pq in list(queues.items()):
            for _ in range(min(EXPIRED_PER_QUEUE, pq.msg_count)):
                msg = pq.first_message()
                started = msg.properties.get(C.PROPERTY_CONSUME_START_TIMESTAMP) if msg is not None else None
                if (
                    msg is None
                    or pq.dropped
                    or not started
                    or self._clock.now_ms() - int(started) <= timeout_ms
                ):
                    break
                if not await self.host.send_message_back(msg, EXPIRED_DELAY_LEVEL, mq.broker_name):
                    break  # tried again next round
                sent += 1
                log.info(
                    "%s: message %s (offset %d) consumed for over %d ms; sent back",
                    mq,
                    msg.msg_id,
                    msg.queue_offset,
                    timeout_ms,
                )
                if pq.first_message() is msg:
                    offset = pq.remove_messages([msg])
                    if offset >= 0 and not pq.dropped:
                        self.host.offset_store.update_offset(mq, offset, increase_only=True)
        return sent


class OrderlyConsumeService(_BaseService):
    """One batch at a time per queue, in queue order, under the queue's broker lock."""

    orderly = True

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        if dispatch:
            self.pool.submit(lambda: self.consume_queue(pq, mq))

    def _needs_lock(self) -> bool:
        return self.config.message_model is MessageModel.CLUSTERING

    def _lock_valid(self, pq: ProcessQueue) -> bool:
        return pq.locked and not pq.is_lock_expired(self.config.lock_max_live_time_ms)

    async def consume_queue(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        if self._needs_lock() and not self._lock_valid(pq):
            self._lock_later(pq, mq, 0.1)
            return
        begin = self._clock.monotonic_ms()
        async with pq.consume_lock:
            while not pq.dropped:
                if self._needs_lock() and not self._lock_valid(pq):
                    self._lock_later(pq, mq, LOCK_RETRY_OK_S)
                    return
                if self._clock.monotonic_ms() - begin > MAX_TIME_CONSUME_CONTINUOUSLY_MS:
                    self.pool.submit_later(LOCK_RETRY_OK_S, lambda: self.consume_queue(pq, mq))
                    return
                msgs = pq.take_messages(self.config.consume_message_batch_max_size)
                if not msgs:
                    return
                status = await self.invoke(msgs)
                if not await self._settle(status, msgs, pq, mq):
                    return

    async def _settle(
        self, status: ConsumeResult, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue
    ) -> bool:
        """Commit or put back the batch; False when the queue pauses."""
        commit = -1
        if status is ConsumeResult.SUCCESS:
            commit = pq.commit()
        elif await self._must_suspend(msgs):
            pq.make_messages_to_consume_again(msgs)
            self.pool.submit_later(
                self.config.suspend_current_queue_time_ms / 1000, lambda: self.consume_queue(pq, mq)
            )
            return False
        else:
            commit = pq.commit()
        if commit >= 0:
            # Recorded even when the queue was just dropped: its release waits for this batch (it holds
            # pq.consume_lock) and then persists this offset, so the next owner does not redo the batch.
            self.host.offset_store.update_offset(mq, commit, increase_only=False)
        return True

    async def _must_suspend(self, msgs: list[MessageExt]) -> bool:
        """Java checkReconsumeTimes: over the limit go to the DLQ (if that works), the rest are retried."""
        limit = self.config.effective_max_reconsume_times(orderly=True)
        suspend = False
        for msg in msgs:
            if msg.reconsume_times >= limit:
                msg.properties[C.PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times)
                if not await self.host.send_message_back(msg, -1, msg.broker_name or None):
                    suspend = True
                    msg.reconsume_times += 1
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend

    def _lock_later(self, pq: ProcessQueue, mq: MessageQueue, delay_s: float) -> None:
        async def relock() -> None:
            if pq.dropped:
                return
            ok = await self.host.lock_queue(mq)
            self.pool.submit_later(
                LOCK_RETRY_OK_S if ok else LOCK_RETRY_FAILED_S, lambda: self.consume_queue(pq, mq)
            )

        self.pool.submit_later(delay_s, relock)

    async def consume_directly(self, msg: MessageExt) -> ConsumeResult:
        return await self.invoke([msg])
