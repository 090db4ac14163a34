"""Timer messages against real daemons: delivered at their time, across a kill -9, and the maximum delay."""

from __future__ import annotations

import time

import pytest
from lifecycle_it_helpers import Recorder, create_topic, push_consumer

from rocketq.client import Message, Producer
from rocketq.client.errors import MessageIllegalError
from rocketq.store.timer import PROPERTY_TIMER_OUT_MS
from rocketq.testing.waiting import wait_for

LATENESS_MS = 1_500


def timer_message(topic: str, body: bytes, at_ms: int) -> Message:
    msg = Message(topic, body)
    msg.deliver_time_ms = at_ms
    return msg


@pytest.mark.timeout(90)
async def test_timer_messages_are_delivered_at_their_time_across_a_crash(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"timerMaxDelaySec": 30, "timerPrecisionMs": 200})
    ns, topic = cluster.namesrv_addr, "TopicTimer"
    broker = cluster.brokers[0]
    await create_topic(ns, topic)
    now = time.time_ns() // 1_000_000
    plan = {b"past": now - 10_000, b"t2": now + 2_000, b"t5": now + 5_000, b"t7": now + 7_000}
    async with Producer("pg-timer", namesrv_addr=ns) as producer:
        for body, at in plan.items():
            await producer.send(timer_message(topic, body, at))
        with pytest.raises(MessageIllegalError, match="maximum delay"):
            await producer.send(timer_message(topic, b"too-far", now + 60_000))
    rec = Recorder()
    # A quick heartbeat: after the restart the broker knows the group again within half a second.
    async with push_consumer(ns, "cg-timer", topic, rec, heartbeat_broker_interval_ms=500):
        await wait_for(lambda: b"t2" in rec.bodies(), timeout_s=10, what="the 2 s timer")
        broker.kill()  # t5 and t7 are still pending: they must survive on disk
        await broker.restart()
        await wait_for(
            lambda: {b"past", b"t2", b"t5", b"t7"} <= set(rec.bodies()),
            timeout_s=20,
            what="every timer message",
        )
    for body, at in plan.items():
        msg = rec.of(body)[0][1]
        assert msg.store_timestamp >= at, (body, msg.store_timestamp - at)
        if body in (b"t7", b"t2"):
            assert msg.store_timestamp - at <= LATENESS_MS, (body, msg.store_timestamp - at)
    assert rec.of(b"past")[0][1].store_timestamp - now < LATENESS_MS  # a past time: delivered at once
    assert rec.of(b"t7")[0][1].properties[PROPERTY_TIMER_OUT_MS] == str(plan[b"t7"])
