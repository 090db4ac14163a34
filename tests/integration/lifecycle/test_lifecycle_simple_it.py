"""SimpleConsumer against real daemons: receive / ack / timeout / change_invisible_duration / DLQ / restart."""

from __future__ import annotations

import asyncio
import time

import pytest
from lifecycle_it_helpers import create_topic, dlq_messages

from rocketq.client import Admin, Message, MessageExt, Producer, SimpleConsumer
from rocketq.client.errors import ClientStateError
from rocketq.common import constants as C
from rocketq.remoting.errors import BrokerResponseError
from rocketq.testing.simple_consumer import receive_until
from rocketq.testing.waiting import wait_for

NO_MESSAGE = 208
INVALID_PARAMETER = 29


async def send(ns: str, topic: str, *bodies: bytes) -> None:
    async with Producer(f"pg-{topic}", namesrv_addr=ns) as producer:
        for body in bodies:
            await producer.send(Message(topic, body, keys=body.decode()))


@pytest.mark.timeout(60)
async def test_receive_ack_timeout_and_change_invisible_duration(cluster_factory) -> None:
    cluster = await cluster_factory()
    ns, topic = cluster.namesrv_addr, "TopicSimple"
    await create_topic(ns, topic)
    async with SimpleConsumer(
        "sg-basic", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
    ) as consumer:
        with pytest.raises(BrokerResponseError) as refused:
            await consumer.receive(16, invisible_duration_ms=500)
        assert refused.value.code == INVALID_PARAMETER
        await send(ns, topic, b"acked", b"extended", b"forgotten")
        got = {m.body: m for m in await receive_until(consumer, 3, invisible_ms=2_000)}
        received_at = time.monotonic()
        assert set(got) == {b"acked", b"extended", b"forgotten"} and all(
            m.topic == topic for m in got.values()
        )
        await consumer.ack(got[b"acked"])
        await consumer.change_invisible_duration(got[b"extended"], 6_000)
        [back] = await receive_until(consumer, 1, invisible_ms=10_000)
        assert back.body == b"forgotten" and back.reconsume_times == 1 and back.topic == topic
        assert time.monotonic() - received_at >= 1.9  # not before its invisible time ran out
        await consumer.ack(back)
        with pytest.raises(BrokerResponseError) as stale:
            await consumer.ack(got[b"acked"])
        assert stale.value.code == NO_MESSAGE
        await consumer.ack(got[b"extended"])  # its new receipt handle
        assert await consumer.receive(16, 2_000) == []  # nothing left: everything was acked


@pytest.mark.timeout(60)
async def test_long_polling_receive_returns_when_a_message_arrives(cluster_factory) -> None:
    cluster = await cluster_factory()
    ns, topic = cluster.namesrv_addr, "TopicSimplePoll"
    await create_topic(ns, topic, queues=1)
    async with SimpleConsumer(
        "sg-poll", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=10_000
    ) as consumer:
        started = time.monotonic()
        waiting = asyncio.ensure_future(consumer.receive(16, 5_000))
        await asyncio.sleep(0.5)  # the request is held by the broker by now
        assert not waiting.done()
        await send(ns, topic, b"wake")
        [msg] = await asyncio.wait_for(waiting, 10)
        assert msg.body == b"wake" and time.monotonic() - started < 5
        await consumer.ack(msg)


@pytest.mark.timeout(60)
async def test_a_message_never_acked_goes_to_the_dlq_past_the_groups_maximum(cluster_factory) -> None:
    cluster = await cluster_factory()
    ns, topic, group = cluster.namesrv_addr, "TopicSimpleDlq", "sg-dlq"
    await create_topic(ns, topic, queues=1)
    async with Admin(namesrv_addr=ns) as admin:
        await admin.update_subscription_group(group, retry_max_times=1)
    await send(ns, topic, b"never-acked")
    deliveries: list[int] = []
    async with (
        SimpleConsumer(
            group, namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
        ) as consumer,
        Admin(namesrv_addr=ns) as admin,
    ):

        async def dead() -> list[MessageExt]:
            deliveries.extend(m.reconsume_times for m in await consumer.receive(16, 1_000))
            return await dlq_messages(admin, group, "never-acked")

        [msg] = await wait_for(dead, timeout_s=20, interval_s=0, what="the message in the DLQ")
    assert deliveries == [0, 1]
    assert msg.properties[C.PROPERTY_RETRY_TOPIC] == topic and msg.reconsume_times == 2


@pytest.mark.timeout(60)
async def test_in_flight_messages_survive_a_broker_crash(cluster_factory) -> None:
    cluster = await cluster_factory()
    ns, topic = cluster.namesrv_addr, "TopicSimpleCrash"
    broker = cluster.brokers[0]
    await create_topic(ns, topic, queues=1)
    await send(ns, topic, b"acked-after", b"comes-back")
    async with SimpleConsumer(
        "sg-crash", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
    ) as consumer:
        # Invisible long enough to outlast a restart on a loaded machine (a restart took over 4 s once).
        got = {m.body: m for m in await receive_until(consumer, 2, invisible_ms=12_000)}
        received_at = time.monotonic()
        broker.kill()
        await broker.restart()
        assert time.monotonic() - received_at < 11, "the restart outlasted the invisible time"
        assert await consumer.receive(16, 4_000) == []  # still in flight: hidden
        await consumer.ack(got[b"acked-after"])  # a receipt handle from before the crash
        [back] = await receive_until(consumer, 1, invisible_ms=4_000, timeout_s=30)
        assert back.body == b"comes-back" and back.reconsume_times == 1
        assert time.monotonic() - received_at >= 11.9
        await consumer.ack(back)


@pytest.mark.timeout(60)
async def test_admin_and_simple_consumer_start_again_after_shutdown(cluster_factory) -> None:
    # The two clients that may be restarted (a producer or push consumer refuses): SHUTDOWN_ALREADY -> RUNNING.
    cluster = await cluster_factory()
    ns, topic = cluster.namesrv_addr, "TopicSimpleRestart"
    await create_topic(ns, topic)
    admin = Admin(namesrv_addr=ns)
    assert "broker-a" in (await admin.cluster_info()).broker_addr_table  # started on first use
    await admin.shutdown()
    await admin.start()
    assert (await admin.topic_route(topic)).queue_datas
    await admin.shutdown()
    assert (await admin.topic_route(topic)).queue_datas  # the first use after a shutdown starts it again
    await admin.shutdown()

    consumer = SimpleConsumer(
        "sg-restart", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
    )
    await consumer.start()
    await consumer.shutdown()
    with pytest.raises(ClientStateError):
        await consumer.receive(16, 10_000)
    await consumer.start()
    try:
        await send(ns, topic, b"after-restart")
        [msg] = await receive_until(consumer, 1, invisible_ms=10_000)
        assert msg.body == b"after-restart"
        await consumer.ack(msg)
    finally:
        await consumer.shutdown()
