"""Consume services on fakes: settling offsets, send-back and local retry, orderly suspend and order."""

import asyncio

import pytest

from rocketq.client.config import ConsumerConfig
from rocketq.client.consumer import consume_service as cs
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.model import ConsumeResult
from rocketq.common.message import MessageExt, MessageQueue

MQ = MessageQueue("T", "b", 0)


class Host:
    group = "g"
    client_id = "127.0.0.1@test"

    def __init__(self, **cfg: object) -> None:
        self.config = ConsumerConfig.build({"consumer_group": "g", "consume_thread_max": 4, **cfg})
        self.offset_store = OffsetStore("g")
        self.sent_back: list[tuple[bytes, int]] = []
        self.back_ok = True
        self.lock_ok = True
        self.lock_calls = 0

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        self.sent_back.append((msg.body, delay_level))
        return self.back_ok

    async def lock_queue(self, mq: MessageQueue) -> bool:
        self.lock_calls += 1
        return self.lock_ok


def msgs(*offsets: int) -> list[MessageExt]:
    return [MessageExt("T", f"m{o}".encode(), queue_offset=o, queue_id=0) for o in offsets]


async def run(
    service: cs.ConcurrentConsumeService | cs.OrderlyConsumeService, pq: ProcessQueue, batch: list[MessageExt]
) -> None:
    dispatch = pq.put_messages(batch)
    service.submit(batch, pq, MQ, dispatch)
    await service.pool.drain()


@pytest.fixture
def fast_timers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cs, "RETRY_LOCALLY_AFTER_S", 0.0)


async def test_success_commits_past_consumed_messages() -> None:
    host, seen = Host(), list[int]()

    async def listener(batch):
        seen.extend(m.queue_offset for m in batch)
        return ConsumeResult.SUCCESS

    svc = cs.ConcurrentConsumeService(host, listener)
    svc.start()
    pq = ProcessQueue()
    await run(svc, pq, msgs(0, 1, 2, 3))
    assert sorted(seen) == [0, 1, 2, 3]
    assert host.offset_store.read_memory(MQ) == 4
    assert (pq.msg_count, svc.ok_count) == (0, 4)
    await svc.shutdown(100)


async def test_sync_listener_returning_none_counts_as_success() -> None:
    host = Host(consume_message_batch_max_size=3)
    calls = []
    svc = cs.ConcurrentConsumeService(host, lambda batch: calls.append(len(batch)))
    svc.start()
    await run(svc, ProcessQueue(), msgs(*range(7)))
    assert sorted(calls) == [1, 3, 3]
    assert host.offset_store.read_memory(MQ) == 7
    await svc.shutdown(100)


async def test_failure_sends_back_and_moves_on() -> None:
    host = Host()

    def listener(batch):
        if batch[0].queue_offset == 1:
            raise ValueError("boom")
        return ConsumeResult.SUCCESS

    svc = cs.ConcurrentConsumeService(host, listener)
    svc.start()
    pq = ProcessQueue()
    await run(svc, pq, msgs(0, 1, 2))
    assert host.sent_back == [(b"m1", 0)]
    assert host.offset_store.read_memory(MQ) == 3
    assert svc.failed_count == 1
    await svc.shutdown(100)


async def test_failed_send_back_keeps_the_message_and_retries_locally(fast_timers: None) -> None:
    host = Host()
    host.back_ok = False
    attempts: dict[int, int] = {}

    async def listener(batch):
        for m in batch:
            attempts[m.queue_offset] = attempts.get(m.queue_offset, 0) + 1
        return (
            ConsumeResult.RECONSUME_LATER if attempts[batch[0].queue_offset] == 1 else ConsumeResult.SUCCESS
        )

    svc = cs.ConcurrentConsumeService(host, listener)
    svc.start()
    pq = ProcessQueue()
    await run(svc, pq, msgs(5))
    assert host.offset_store.read_memory(MQ) == 5, "the commit stops at the held message"
    assert pq.lowest_unconsumed_offset() == 5
    await asyncio.sleep(0)  # the zero-delay retry timer fires
    await svc.pool.drain()
    assert attempts[5] == 2
    assert host.offset_store.read_memory(MQ) == 6
    assert pq.msg_count == 0
    await svc.shutdown(100)


async def test_dropped_queue_results_are_ignored() -> None:
    host = Host()
    pq = ProcessQueue()

    async def listener(batch):
        pq.dropped = True
        return ConsumeResult.SUCCESS

    svc = cs.ConcurrentConsumeService(host, listener)
    svc.start()
    await run(svc, pq, msgs(0))
    assert host.offset_store.read_memory(MQ) == -1
    await svc.shutdown(100)


async def test_orderly_keeps_order_and_suspends() -> None:
    host = Host(suspend_current_queue_time_ms=10, message_model="BROADCASTING")
    seen: list[int] = []
    failed_once: set[int] = set()

    async def listener(batch):
        off = batch[0].queue_offset
        if off == 2 and off not in failed_once:
            failed_once.add(off)
            return ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        seen.append(off)
        return ConsumeResult.SUCCESS

    svc = cs.OrderlyConsumeService(host, listener)
    svc.start()
    pq = ProcessQueue()
    await run(svc, pq, msgs(0, 1, 2, 3))
    assert seen == [0, 1]
    assert host.offset_store.read_memory(MQ) == 2
    for _ in range(100):
        if len(seen) == 4:
            break
        await asyncio.sleep(0.01)  # the suspend timer (10 ms) then re-consumption
        await svc.pool.drain()
    assert seen == [0, 1, 2, 3]
    assert host.offset_store.read_memory(MQ) == 4
    await svc.shutdown(100)


async def test_orderly_clustering_needs_a_valid_lock() -> None:
    host = Host()
    seen: list[int] = []
    svc = cs.OrderlyConsumeService(host, lambda batch: seen.extend(m.queue_offset for m in batch))
    svc.start()
    pq = ProcessQueue()
    await run(svc, pq, msgs(0))
    assert seen == [] and pq.msg_count == 1, "no lock, no consumption"
    pq.mark_locked(True)
    await svc.consume_queue(pq, MQ)
    assert seen == [0]
    await svc.shutdown(100)


async def test_orderly_over_the_limit_goes_to_the_dlq() -> None:
    host = Host(max_reconsume_times=1, message_model="BROADCASTING")
    svc = cs.OrderlyConsumeService(host, lambda batch: ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT)
    svc.start()
    pq = ProcessQueue()
    batch = msgs(0)
    batch[0].reconsume_times = 1
    await run(svc, pq, batch)
    assert host.sent_back == [(b"m0", -1)]
    assert host.offset_store.read_memory(MQ) == 1
    await svc.shutdown(100)


def test_normalise_results() -> None:
    assert cs._normalise(None, False) is ConsumeResult.SUCCESS
    assert cs._normalise(True, False) is ConsumeResult.SUCCESS
    assert cs._normalise(ConsumeResult.CONSUME_SUCCESS, True) is ConsumeResult.SUCCESS
    assert cs._normalise(ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT, False) is ConsumeResult.RECONSUME_LATER
    assert cs._normalise(ConsumeResult.RECONSUME_LATER, True) is ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
    assert cs._normalise("weird", False) is ConsumeResult.RECONSUME_LATER


async def test_messages_stuck_past_the_consume_timeout_are_sent_back_and_released() -> None:
    from rocketq.common.clock import ManualClock

    clock = ManualClock()
    host = Host(consume_timeout_ms=1000)
    assert host.config.effective_consume_timeout_ms() == 1000
    assert Host().config.effective_consume_timeout_ms() == 15 * 60_000
    entered, release = asyncio.Event(), asyncio.Event()

    async def listener(batch):
        if batch[0].queue_offset == 0:  # offset 0 hangs; 1 and 2 are consumed, 3 waits its turn
            entered.set()
            await release.wait()
        return ConsumeResult.SUCCESS

    svc = cs.ConcurrentConsumeService(host, listener, clock)
    svc.start()
    pq = ProcessQueue(clock=clock)
    batch = msgs(0, 1, 2)
    svc.submit(batch, pq, MQ, pq.put_messages(batch))
    await entered.wait()
    for _ in range(1000):  # offsets 1 and 2 settle within a few loop turns
        if pq.msg_count == 1:
            break
        await asyncio.sleep(0)
    assert pq.msg_count == 1
    pq.put_messages(msgs(3))  # held, not yet handed to the listener: no consume start, never expired
    assert await svc.clean_expired({MQ: pq}) == 0, "not past the timeout yet"
    clock.advance(1001)
    assert await svc.clean_expired({MQ: pq}) == 1
    assert host.sent_back == [(b"m0", 3)]
    assert pq.first_message() is not None and pq.first_message().queue_offset == 3
    assert host.offset_store.read_memory(MQ) == 3
    clock.advance(5000)
    assert await svc.clean_expired({MQ: pq}) == 0
    release.set()
    await svc.pool.drain()
    assert host.sent_back == [(b"m0", 3)] and host.offset_store.read_memory(MQ) == 3
    await svc.shutdown(100)
