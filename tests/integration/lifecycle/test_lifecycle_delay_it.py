"""Delay levels against real daemons: each level's delay, clamping, and progress surviving kill -9."""

from __future__ import annotations

from pathlib import Path

import pytest
from lifecycle_it_helpers import Recorder, create_topic, delay_offsets, push_consumer

from rocketq.client import Admin, Message, Producer
from rocketq.common import constants as C
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.testing.waiting import wait_for

LATENESS_MS = 1_500  # bounded lateness of a delivery (send latency + scheduling + a loaded CI machine)


def delayed(topic: str, body: bytes, level: int) -> Message:
    msg = Message(topic, body, tags="TagD", keys=body.decode())
    msg.delay_level = level
    return msg


@pytest.mark.timeout(60)
async def test_each_level_is_delivered_after_its_delay_and_soon_after(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": "1s 2s 3s"})
    ns, topic = cluster.namesrv_addr, "TopicDelayLevels"
    await create_topic(ns, topic)
    rec = Recorder()
    async with push_consumer(ns, "cg-delay", topic, rec), Producer("pg-delay", namesrv_addr=ns) as producer:
        for level in (3, 1, 2, 9):  # 9: above the maximum, clamped to 3
            await producer.send(delayed(topic, f"L{level}".encode(), level))
        await wait_for(lambda: len(rec.seen) >= 4, timeout_s=20, what="4 delayed messages")
    for level, expected_ms in ((1, 1000), (2, 2000), (3, 3000), (9, 3000)):
        [(_, msg)] = rec.of(f"L{level}".encode())
        waited = msg.store_timestamp - msg.born_timestamp
        assert expected_ms <= waited <= expected_ms + LATENESS_MS, (level, waited)
        assert msg.topic == topic and msg.tags == "TagD" and msg.reconsume_times == 0
        assert msg.properties[C.PROPERTY_REAL_TOPIC] == topic  # Java's quirk: kept in the re-stored record
    assert [m.body for _, m in sorted(rec.seen, key=lambda s: s[1].store_timestamp)][:1] == [b"L1"]


@pytest.mark.timeout(90)
async def test_delay_progress_survives_kill_9_without_loss(cluster_factory) -> None:
    cluster = await cluster_factory(
        broker_overrides={"messageDelayLevel": "1s 2s 4s", "flushDelayOffsetInterval": 100}
    )
    ns, topic = cluster.namesrv_addr, "TopicDelayCrash"
    broker = cluster.brokers[0]
    await create_topic(ns, topic, queues=1)
    async with Producer("pg-delay-crash", namesrv_addr=ns, retry_times_when_send_failed=0) as producer:
        for i in range(5):
            await producer.send(delayed(topic, f"early-{i}".encode(), 1))
        for i in range(5):
            await producer.send(delayed(topic, f"late-{i}".encode(), 3))

        progress = Path(broker.store_dir) / "config" / "delayOffset.json"

        def early_delivered_and_persisted() -> bool:
            return progress.exists() and fastjson.loads(progress.read_bytes())["offsetTable"].get(1) == 5

        await wait_for(
            early_delivered_and_persisted, timeout_s=10, what="level 1 delivered and its progress persisted"
        )
        broker.kill()
        await broker.restart()
    assert (await delay_offsets(broker.addr)).get(1) == 5  # resumed from the persisted step
    rec = Recorder()
    async with push_consumer(ns, "cg-delay-crash", topic, rec):
        await wait_for(
            lambda: (
                {m.body for _, m in rec.seen}
                >= {f"{k}-{i}".encode() for k in ("early", "late") for i in range(5)}
            ),
            timeout_s=30,
            what="all 10 delayed messages",
        )
    for _, msg in rec.seen:
        if msg.body.startswith(b"late"):
            assert msg.store_timestamp - msg.born_timestamp >= 4000
    early = [m for _, m in rec.seen if m.body.startswith(b"early")]
    assert len(early) == 5, "a level-1 message was delivered again after the restart"
    assert (await delay_offsets(broker.addr)) == {1: 5, 3: 5}
    async with Admin(namesrv_addr=ns) as admin:
        status = await admin.broker_status(broker.addr)
    assert status["scheduleMessageOffset_1"] == "5,5" and status["scheduleMessageOffset_3"] == "5,5"
