"""Four consumers of one group join and leave every few seconds while N messages are consumed.

docs/fault-tests.md. One NameServer, two brokers, a topic with 4 queues on each (8 queues). A paced SDK
Producer sends N self-checking bodies (rocketq.testing.ledger.make_body) while a CLUSTERING group of
up to four PushConsumers churns (rocketq.testing.churn.ChurningGroup): every ~2.5 s one member leaves
(clean shutdown: it commits its offsets) or a new one joins; at least one member always runs. The
clients use short intervals (rebalance 1 s, heartbeat 1 s, offset commit 0.5 s, route refresh 1 s),
as Java's system properties and ClientConfig allow.

Checked: every acknowledged message is delivered (none lost), nothing corrupt is delivered, and
every duplicate is explained by a membership change within IN_FLIGHT_WINDOW_S of its first delivery
(the message was in flight or not yet committed when its queue moved); the duplicates are counted
and printed (`pytest -s`). CI: 20,000 messages; soak (ROCKETQ_SOAK=1): 100,000.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

import pytest

from rocketq.client import Admin, Producer
from rocketq.testing.churn import ChurningGroup
from rocketq.testing.failover import wait_route
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.ledger import Ledger
from rocketq.testing.send_stream import SendStream
from rocketq.testing.waiting import WaitTimeoutError, wait_for

TOPIC = "Churn"
GROUP = "cg-churn"
CHURN_PERIOD_S = 2.5
CONSUMER_SETTINGS = {
    "rebalance_interval_ms": 1000,
    "heartbeat_broker_interval_ms": 1000,
    "persist_consumer_offset_interval_ms": 500,
    "poll_name_server_interval_ms": 1000,
    "consume_thread_max": 8,
}
# Commit lag (0.5 s) + the rebalance safety net (1 s) + scheduling slack on a busy machine.
IN_FLIGHT_WINDOW_S = 2.0


async def churn(
    cluster_factory: ClusterFactory, messages: int, send_pace_s: float, seed: int, deadline_s: float
) -> None:
    rng = random.Random(seed)
    cluster = await cluster_factory(broker_count=2)
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns, instance_name="churn-admin") as admin:
        await admin.create_topic(TOPIC, read_queues=4, write_queues=4)
    await wait_route(ns, TOPIC, {"broker-a", "broker-b"}, timeout_s=15)
    group = ChurningGroup(ns, GROUP, TOPIC, slots=4, seed=seed, **CONSUMER_SETTINGS)
    for slot in range(4):
        await group.join(slot)
    ledger = Ledger()
    producer = Producer("pg-churn", namesrv_addr=ns, instance_name="churn-producer")
    await producer.start()
    stream = SendStream(producer, TOPIC, ledger, concurrency=4, pace_s=send_pace_s, max_messages=messages)
    started = time.monotonic()
    deadline = started + deadline_s
    stream.start()
    try:
        while len(group.consumed_seqs()) < messages and time.monotonic() < deadline:
            await asyncio.sleep(max(0.2, CHURN_PERIOD_S + rng.uniform(-1.0, 1.0)))
            await group.step()
        await stream.stop()
        assert ledger.acked_count == messages, (
            f"only {ledger.acked_count} of {messages} sends were acknowledged: {ledger.error_samples}"
        )
        if len(group.running) < 2:
            await group.step()  # the tail is consumed with a change in flight too
        try:
            await wait_for(
                lambda: len(group.consumed_seqs()) >= messages,
                timeout_s=max(10.0, deadline - time.monotonic()),
                interval_s=0.2,
                what=f"all {messages} messages consumed",
            )
        except WaitTimeoutError:
            stuck = {
                group.names[i]: sorted(str(mq) for mq in m.assigned_queues())
                for i, m in enumerate(group.members)
                if m
            }
            print(f"\nnot everything was consumed; members and their queues: {stuck}")
        await asyncio.sleep(IN_FLIGHT_WINDOW_S)  # a late duplicate would show now
    finally:
        await stream.stop()
        await producer.shutdown()
        await group.close()
    elapsed = time.monotonic() - started
    report = group.analyse(messages, IN_FLIGHT_WINDOW_S)
    changes = ", ".join(what for _, what in group.changes[4:])
    print(f"\nrebalance churn: {report.summary()} in {elapsed:.1f}s\nchanges: {changes}")
    missing_at = Counter(ledger.acks[seq].position[:2] for seq in report.missing if seq in ledger.acks)
    assert report.missing == [], (
        f"never delivered: {len(report.missing)}, by (broker, queue): {dict(missing_at)}"
    )
    assert report.corrupt == 0
    assert report.unexplained == [], (
        f"duplicates without a membership change within {IN_FLIGHT_WINDOW_S}s of their first delivery: "
        f"{[(seq, report.duplicates[seq]) for seq in report.unexplained[:5]]}"
    )
    assert report.changes >= 8, "too few membership changes to mean anything"


@pytest.mark.timeout(150)
async def test_four_consumers_churning_lose_nothing(cluster_factory: ClusterFactory) -> None:
    await churn(cluster_factory, messages=20_000, send_pace_s=0.004, seed=4, deadline_s=100)


@pytest.mark.soak
@pytest.mark.timeout(300)
async def test_four_consumers_churning_soak(cluster_factory: ClusterFactory) -> None:
    await churn(cluster_factory, messages=100_000, send_pace_s=0.001, seed=44, deadline_s=250)
