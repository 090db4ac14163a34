"""Consume retry against real daemons: stepped back-off, maxReconsumeTimes, the DLQ, orderly retry."""

from __future__ import annotations

import itertools

import pytest
from lifecycle_it_helpers import Recorder, create_topic, dlq_messages, push_consumer, update_broker_config

from rocketq.client import Admin, ConsumeResult, Message, MessageExt, Producer
from rocketq.common import constants as C
from rocketq.testing.waiting import wait_for

# Retry n (0-based) uses level 3 + n: 1 s, then 2 s, then 3 s.
LEVELS = "1s 1s 1s 2s 3s 1s"


async def send_one(ns: str, topic: str, body: bytes) -> None:
    async with Producer(f"pg-{topic}", namesrv_addr=ns) as producer:
        await producer.send(Message(topic, body, tags="TagR", keys=body.decode()))


@pytest.mark.timeout(90)
async def test_a_listener_that_always_fails_sees_1_plus_max_deliveries_then_the_dlq_holds_it(
    cluster_factory,
) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": LEVELS})
    ns, topic, group = cluster.namesrv_addr, "TopicAlwaysFails", "cg-always-fails"
    await create_topic(ns, topic)
    rec = Recorder(lambda m: ConsumeResult.RECONSUME_LATER)
    async with push_consumer(ns, group, topic, rec, max_reconsume_times=2):
        await send_one(ns, topic, b"poison")

        async with Admin(namesrv_addr=ns) as admin:
            [dead] = await wait_for(
                lambda: dlq_messages(admin, group, "poison"), timeout_s=30, what="the message in the DLQ"
            )
    times = [t for t, _ in rec.seen]
    assert [m.reconsume_times for _, m in rec.seen] == [0, 1, 2]
    assert all(m.topic == topic and m.body == b"poison" for _, m in rec.seen)  # the real topic, restored
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] >= 1000 and gaps[1] >= 2000 and gaps[1] > gaps[0], gaps
    assert dead.topic == f"%DLQ%{group}" and dead.reconsume_times == 3
    assert dead.properties[C.PROPERTY_RETRY_TOPIC] == topic
    assert dead.properties[C.PROPERTY_ORIGIN_MESSAGE_ID]


@pytest.mark.timeout(60)
async def test_a_listener_that_fails_twice_then_succeeds_gets_it_three_times_and_no_dlq(
    cluster_factory,
) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": LEVELS})
    ns, topic, group = cluster.namesrv_addr, "TopicFailsTwice", "cg-fails-twice"
    await create_topic(ns, topic)
    calls: list[int] = []

    def flaky(msgs: list[MessageExt]) -> ConsumeResult:
        calls.append(msgs[0].reconsume_times)
        if len(calls) <= 2:
            raise RuntimeError("the business failed")  # an exception counts as RECONSUME_LATER
        return ConsumeResult.SUCCESS

    rec = Recorder()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        rec(msgs)
        return flaky(msgs)

    async with push_consumer(ns, group, topic, listener, max_reconsume_times=2):
        await send_one(ns, topic, b"flaky")
        await wait_for(lambda: len(calls) >= 3, timeout_s=20, what="three deliveries")
    assert calls == [0, 1, 2]
    assert {m.topic for _, m in rec.seen} == {topic}
    assert rec.seen[1][1].properties[C.PROPERTY_RETRY_TOPIC] == topic
    async with Admin(namesrv_addr=ns) as admin:
        assert await dlq_messages(admin, group, "flaky") == []


@pytest.mark.timeout(90)
async def test_orderly_consumers_retry_in_place_then_move_the_message_to_the_dlq(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": LEVELS})
    ns, topic, group = cluster.namesrv_addr, "TopicOrderlyRetry", "cg-orderly-retry"
    await create_topic(ns, topic, queues=1)
    attempts: dict[bytes, list[tuple[int, int]]] = {}

    def orderly(msgs: list[MessageExt]) -> ConsumeResult:
        msg = msgs[0]
        attempts.setdefault(msg.body, []).append((msg.queue_offset, msg.reconsume_times))
        if msg.body == b"poison" or len(attempts[msg.body]) <= 2:
            return ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeResult.SUCCESS

    async with Producer("pg-orderly-retry", namesrv_addr=ns) as producer:
        for body in (b"first", b"poison", b"after"):
            await producer.send(Message(topic, body, keys=body.decode()))
    consumer = push_consumer(
        ns, group, topic, orderly, orderly=True, max_reconsume_times=2, suspend_current_queue_time_ms=200
    )
    async with consumer:
        await wait_for(
            lambda: b"after" in attempts and len(attempts[b"after"]) >= 3,
            timeout_s=40,
            what="the message after the poison one consumed",
        )
        async with Admin(namesrv_addr=ns) as admin:
            [dead] = await wait_for(
                lambda: dlq_messages(admin, group, "poison"), timeout_s=20, what="poison in the DLQ"
            )
    # In place: the same queue offset each time, one retry counted per attempt.
    assert attempts[b"first"] == [(0, 0), (0, 1), (0, 2)]
    assert [r for _, r in attempts[b"poison"]] == [0, 1, 2] and {o for o, _ in attempts[b"poison"]} == {1}
    assert attempts[b"after"][0][0] == 2
    assert dead.body == b"poison"


@pytest.mark.timeout(60)
async def test_when_the_send_back_fails_the_message_is_consumed_again_locally(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": LEVELS})
    ns, topic, group = cluster.namesrv_addr, "TopicSendBackFails", "cg-send-back-fails"
    await create_topic(ns, topic, queues=1)
    await send_one(ns, topic, b"keep-me")
    await update_broker_config(
        cluster.brokers[0].addr, brokerPermission=4
    )  # read only: every send-back fails
    rec: Recorder = Recorder(
        lambda m: ConsumeResult.RECONSUME_LATER if len(rec.seen) == 1 else ConsumeResult.SUCCESS
    )
    async with push_consumer(ns, group, topic, rec):
        await wait_for(lambda: len(rec.seen) >= 2, timeout_s=20, what="the message consumed again locally")
    assert [m.body for _, m in rec.seen] == [b"keep-me", b"keep-me"]
    assert rec.seen[1][0] - rec.seen[0][0] >= 4_900  # the client's local retry comes 5 s later
