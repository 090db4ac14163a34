"""Flush: group commit shares fdatasyncs, FLUSH_DISK_TIMEOUT, async flush thresholds, checkpoint offsets."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.status import PutMessageStatus

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory


async def test_group_commit_shares_flushes_between_concurrent_puts(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushDiskType="SYNC_FLUSH", mappedFileSizeCommitLog=1 << 20, maxMessageSize=4096)
    await store.start()
    assert store._flusher is not None
    flusher = store._flusher
    calls = []
    real_flush = flusher.flush

    def counting_flush(least_pages: int = 0) -> int:
        calls.append(least_pages)
        return real_flush(least_pages)

    flusher.flush = counting_flush  # type: ignore[method-assign]
    results = await asyncio.gather(
        *(store.put_message(message(queue_id=i % 4, body=b"x" * 100)) for i in range(64))
    )
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    assert 1 <= len(calls) < 64
    end = max(r.append.wrote_offset + r.append.wrote_bytes for r in results if r.append)
    assert store.commit_log.queue.flushed_where >= end
    await store.shutdown()


async def test_group_commit_wakes_for_every_round_of_writers_that_wait_in_turn(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    """Writers that each wait for their last put: the flush thread goes idle and is woken again
    hundreds of times (a lost wake-up would be a FLUSH_DISK_TIMEOUT)."""
    store = make_store(flushDiskType="SYNC_FLUSH", mappedFileSizeCommitLog=1 << 20, syncFlushTimeout=3000)
    await store.start()

    async def writer(n: int) -> list[PutMessageStatus]:
        return [(await store.put_message(message(queue_id=n, body=b"%d" % i))).status for i in range(60)]

    statuses = await asyncio.gather(*(writer(n) for n in range(6)))
    assert all(s is PutMessageStatus.PUT_OK for run in statuses for s in run)
    assert store.commit_log.queue.flushed_where == store.get_max_phy_offset()
    await store.shutdown()


class _CountingLatch:
    """The group commit's latch, counting releases and releases of the released latch."""

    def __init__(self, inner: threading.Lock) -> None:
        self.inner = inner
        self.released = 0
        self.refused = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self.inner.acquire(blocking, timeout)

    def release(self) -> None:
        try:
            self.inner.release()
        except RuntimeError:
            self.refused += 1
            raise
        self.released += 1


async def test_a_burst_of_puts_signals_the_waiting_flush_thread_once(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    """The flush thread counts as idle until it has the GIL back, i.e. until the burst is over: the
    first put of a burst signals it, the others neither signal again nor lose a wake-up."""
    store = make_store(flushDiskType="SYNC_FLUSH", mappedFileSizeCommitLog=1 << 20, syncFlushTimeout=3000)
    await store.start()
    group = store._group_commit
    assert group is not None
    latch = _CountingLatch(group._signal)  # type: ignore[arg-type]
    group._signal = latch  # type: ignore[assignment]

    async def writer(n: int) -> list[PutMessageStatus]:
        return [(await store.put_message(message(queue_id=n % 4, body=b"%d" % i))).status for i in range(20)]

    statuses = await asyncio.gather(*(writer(n) for n in range(64)))
    assert all(s is PutMessageStatus.PUT_OK for run in statuses for s in run)
    assert latch.refused == 0 and 1 <= latch.released < 20 * 64  # not one a put
    assert store.commit_log.queue.flushed_where == store.get_max_phy_offset()
    await store.shutdown()


async def test_a_stuck_flush_answers_flush_disk_timeout(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushDiskType="SYNC_FLUSH", syncFlushTimeout=50)
    await store.start()
    assert store._flusher is not None
    release = threading.Event()
    real_flush = store._flusher.flush

    def stuck_flush(least_pages: int = 0) -> int:
        release.wait(10)
        return real_flush(least_pages)

    store._flusher.flush = stuck_flush  # type: ignore[method-assign]
    result = await store.put_message(message())
    assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT and result.is_ok  # stored, not yet durable
    no_wait = await store.put_message(message(WAIT="false"))
    assert no_wait.status is PutMessageStatus.PUT_OK  # WAIT=false does not wait for the flush
    release.set()
    await store.shutdown()
    again = make_store()
    assert again.get_max_offset_in_queue("TopicA", 0) == 2


async def test_sync_flush_without_services_flushes_inline(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushDiskType="SYNC_FLUSH")
    result = await store.put_message(message())
    assert result.status is PutMessageStatus.PUT_OK and result.append is not None
    assert store.commit_log.queue.flushed_where == result.append.wrote_bytes


async def test_async_flush_waits_for_enough_dirty_pages(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(mappedFileSizeCommitLog=1 << 20, flushCommitLogLeastPages=2)
    assert store._flusher is not None
    await store.put_message(message(body=b"x" * 100))
    assert store._flusher.flush(2) == 0  # less than two pages dirty: nothing yet
    for _ in range(10):
        await store.put_message(message(body=b"x" * 1000))
    assert store._flusher.flush(2) == store.get_max_phy_offset()
    assert store.checkpoint is not None and store.checkpoint.physic_offset == store.get_max_phy_offset()


async def test_clean_shutdown_writes_the_checkpoint_and_removes_the_abort_file(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    await store.start()
    assert store.config.abort_path.exists()
    for i in range(20):
        await store.put_message(message(queue_id=i % 3, keys=f"k{i}"))
    end = store.get_max_phy_offset()
    await store.shutdown()
    assert not store.config.abort_path.exists()
    checkpoint = StoreCheckpoint(store.config.checkpoint_path)
    assert (checkpoint.physic_offset, checkpoint.logics_offset, checkpoint.index_offset) == (end, end, end)
    assert checkpoint.physic_msg_timestamp > 0 and checkpoint.safe_offset == end
    checkpoint.close()
    again = make_store()
    assert again.recovery is not None and not again.recovery.abnormal
    assert again.recovery.records_redispatched == 0


async def test_queue_flush_records_how_far_queues_are_durable(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    for _ in range(5):
        await store.put_message(message())
    assert store.checkpoint is not None and store.checkpoint.logics_offset == 0
    end = store.flush()
    assert end == store.get_max_phy_offset()
    assert store.checkpoint.logics_offset == end and store.checkpoint.index_offset == end
    queue = store.queues.get("TopicA", 0)
    assert queue is not None and queue.queue.flushed_where == 5 * 20


async def test_a_list_of_puts_shares_one_flush_wait_and_a_bad_message_fails_alone(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushDiskType="SYNC_FLUSH", mappedFileSizeCommitLog=1 << 20, maxMessageSize=4096)
    await store.start()
    assert store._flusher is not None and store._group_commit is not None
    requests: list[int] = []
    real_request = store._group_commit.request

    def counting_request(end: int) -> asyncio.Future[bool]:
        requests.append(end)
        return real_request(end)

    store._group_commit.request = counting_request  # type: ignore[method-assign]
    msgs = [message(queue_id=i % 4, body=b"x" * 100) for i in range(8)]
    msgs[3] = message(body=b"x" * 5000)  # over maxMessageSize
    results = await store.put_message_list(msgs)
    assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 3 + [
        PutMessageStatus.MESSAGE_ILLEGAL
    ] + [PutMessageStatus.PUT_OK] * 4
    end = max(r.append.wrote_offset + r.append.wrote_bytes for r in results if r.append)
    assert requests == [end]  # one group-commit request, for the highest end
    assert store.commit_log.queue.flushed_where >= end
    await store.shutdown()


async def test_a_list_of_puts_whose_flush_times_out_answers_each_by_its_own_end(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushDiskType="SYNC_FLUSH", syncFlushTimeout=50)
    await store.start()
    assert store._flusher is not None
    first = await store.put_message(message())  # flushed before the flush gets stuck
    assert first.status is PutMessageStatus.PUT_OK
    release = threading.Event()
    real_flush = store._flusher.flush

    def stuck_flush(least_pages: int = 0) -> int:
        release.wait(10)
        return real_flush(least_pages)

    store._flusher.flush = stuck_flush  # type: ignore[method-assign]
    results = await store.put_message_list([message(), message(WAIT="false"), message()])
    assert [r.status for r in results] == [
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.PUT_OK,  # WAIT=false does not wait for the flush
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
    ]
    release.set()
    await store.shutdown()


async def test_a_list_of_puts_to_a_closed_store_is_refused_each(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(open_=False)
    results = await store.put_message_list([message(), message()])
    assert [r.status for r in results] == [PutMessageStatus.SERVICE_NOT_AVAILABLE] * 2
