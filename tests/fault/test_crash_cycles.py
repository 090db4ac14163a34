"""kill -9 of a broker during a steady stream of sends, restart on the same store, cycle after cycle.

docs/fault-tests.md. One NameServer, one broker (SYNC_FLUSH, then ASYNC_FLUSH), one topic of 4 queues. An
SDK Producer on the test's loop keeps 8 sends in flight (rocketq.testing.send_stream.SendStream); the
bodies carry their sequence number, the cycle and a SHA-256 (rocketq.testing.ledger). Each cycle waits
for a share of acknowledgements, lets the stream run a random extra moment, kills the broker with
SIGKILL, checks nothing more can be acknowledged by it, and restarts it on the same store and port;
after the restart every queue's max offset must lie above the highest offset acknowledged before the
crash. At the end a LitePullConsumer of a fresh group reads every queue from its first offset, and
every acknowledged message must be at the queue and offset its acknowledgement named, byte-identical;
every delivered body must check (nothing torn or corrupt), and the queues hold no holes.

SYNC_FLUSH: an acknowledged message was on disk. ASYNC_FLUSH: the process dies, the machine does not,
so the page cache keeps what the broker wrote: nothing acknowledged may be lost either.

The table (printed; `pytest -s` shows it) gives per cycle: sends started, acknowledged, acknowledged
and consumed, lost, failed sends (while the broker was down), and sends that failed at the client but
were stored anyway (their answer died with the broker). CI: 10 cycles per flush mode; soak
(ROCKETQ_SOAK=1, `make soak`): 60 cycles with more messages per cycle.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import pytest

from rocketq.client import Admin, Producer
from rocketq.store.config import FlushDiskType
from rocketq.testing.broker_probe import SMALL_STORE_OVERRIDES, BrokerProbe
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.ledger import Comparison, Ledger, compare
from rocketq.testing.send_stream import SendStream, queue_ends, read_back
from rocketq.testing.waiting import wait_for

TOPIC = "CrashCycles"
QUEUES = 4
CONCURRENCY = 8  # sends in flight


@dataclass
class CrashRun:
    flush: FlushDiskType
    cycles: int
    acks_per_cycle: int
    downtime_s: list[float] = field(default_factory=list)  # kill to READY
    first_ack_s: list[float] = field(default_factory=list)  # READY to the next acknowledgement


async def _topic_routed(ns: str) -> bool:
    async with Admin(namesrv_addr=ns, instance_name="crash-route") as admin:
        route = await admin.topic_route(TOPIC)
    return bool(route.queue_datas)


async def _check_acks_survived(addr: str, ledger: Ledger) -> None:
    """After a restart: every queue holds at least up to its highest acknowledged offset."""
    probe = await BrokerProbe.open(addr, timeout_s=10)
    try:
        for (_broker, queue_id), offset in sorted(ledger.highest_acked_offsets().items()):
            end = await probe.max_offset(TOPIC, queue_id)
            assert end > offset, (
                f"queue {queue_id} ends at {end} after the restart, but offset {offset} was acknowledged"
            )
    finally:
        await probe.close()


async def crash_cycles(cluster_factory: ClusterFactory, run: CrashRun, seed: int) -> Comparison:
    rng = random.Random(seed)
    overrides = {**SMALL_STORE_OVERRIDES, "flushDiskType": run.flush.value}
    cluster = await cluster_factory(broker_overrides=overrides)
    broker, ns = cluster.brokers[0], cluster.namesrv_addr
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic(TOPIC, QUEUES)
    await probe.close()
    await wait_for(lambda: _topic_routed(ns), timeout_s=15, what=f"a route of {TOPIC}")
    ledger = Ledger()
    producer = Producer(
        "pg-crash-cycles",
        namesrv_addr=ns,
        instance_name=f"crash-producer-{seed}",
        poll_name_server_interval_ms=200,
        send_msg_timeout_ms=2000,
    )
    await producer.start()
    stream = SendStream(producer, TOPIC, ledger, concurrency=CONCURRENCY, body_size=300)
    stream.start()
    try:
        for cycle in range(run.cycles):
            stream.cycle = cycle
            await stream.wait_acked(run.acks_per_cycle, timeout_s=30, cycle=cycle)
            await asyncio.sleep(rng.uniform(0.0, 0.3))  # the kill lands anywhere in the stream
            killed_at = time.monotonic()
            broker.kill()
            assert await broker.wait_exit(10) is not None, "the broker survived SIGKILL"
            acked_by_dead = ledger.acked_count
            await broker.restart()  # same store, same port
            ready_at = time.monotonic()
            run.downtime_s.append(ready_at - killed_at)
            assert all(a.cycle <= cycle for a in ledger.acks.values()), (
                "an ack was labelled with a later cycle"
            )
            await _check_acks_survived(broker.addr, ledger)
            stream.cycle = cycle + 1
            await stream.wait_acked(acked_by_dead + 1, timeout_s=30)
            run.first_ack_s.append(max(0.0, stream.last_ack_time - ready_at))  # READY is polled every 20 ms
        await stream.wait_acked(run.acks_per_cycle, timeout_s=30, cycle=run.cycles)
    finally:
        await stream.stop()
        await producer.shutdown()
    ends = await queue_ends(ns, TOPIC)
    consumed = await read_back(ns, TOPIC, f"cg-crash-verify-{seed}", timeout_s=90)
    comparison = compare(ledger, consumed)
    print(
        f"\nkill -9 cycles, {run.flush.value}: {run.cycles} crashes of one broker under 8 concurrent sends\n"
        f"{comparison.table()}\n"
        f"downtime per crash (kill to READY): avg {sum(run.downtime_s) / len(run.downtime_s):.2f}s, "
        f"max {max(run.downtime_s):.2f}s; first acknowledgement after READY: avg "
        f"{sum(run.first_ack_s) / len(run.first_ack_s):.2f}s, max {max(run.first_ack_s):.2f}s; "
        f"send errors by type: {dict(ledger.errors)}; first of each: {ledger.error_samples}"
    )
    assert comparison.ok, comparison.problems()
    assert len(consumed) == sum(ends.values()), (
        f"the queues hold holes: {len(consumed)} messages for ends {ends}"
    )
    # Only a send in flight at a crash may be stored without its answer (then failed, or retried and
    # stored twice): at most one per sender per crash. More means answers go missing without a crash.
    unanswered = comparison.duplicates + sum(r.unacked_stored for r in comparison.rows.values())
    assert unanswered <= CONCURRENCY * run.cycles, (
        f"{unanswered} stored messages lost their answer in {run.cycles} crashes; errors: {ledger.error_samples}"
    )
    assert ledger.acked_count >= run.acks_per_cycle * (run.cycles + 1)
    return comparison


@pytest.mark.timeout(180)
async def test_kill_9_cycles_sync_flush_lose_nothing_acknowledged(cluster_factory: ClusterFactory) -> None:
    await crash_cycles(
        cluster_factory, CrashRun(FlushDiskType.SYNC_FLUSH, cycles=10, acks_per_cycle=150), seed=1
    )


@pytest.mark.timeout(180)
async def test_kill_9_cycles_async_flush_lose_nothing_acknowledged(cluster_factory: ClusterFactory) -> None:
    await crash_cycles(
        cluster_factory, CrashRun(FlushDiskType.ASYNC_FLUSH, cycles=10, acks_per_cycle=150), seed=2
    )


@pytest.mark.soak
@pytest.mark.timeout(300)
async def test_kill_9_cycles_sync_flush_soak(cluster_factory: ClusterFactory) -> None:
    await crash_cycles(
        cluster_factory, CrashRun(FlushDiskType.SYNC_FLUSH, cycles=60, acks_per_cycle=400), seed=11
    )


@pytest.mark.soak
@pytest.mark.timeout(300)
async def test_kill_9_cycles_async_flush_soak(cluster_factory: ClusterFactory) -> None:
    await crash_cycles(
        cluster_factory, CrashRun(FlushDiskType.ASYNC_FLUSH, cycles=60, acks_per_cycle=400), seed=12
    )
