"""Producers against real daemons: bad input, retries when a broker dies, batches, selectors, compression."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, Message, Producer, SendStatus
from rocketq.client.errors import ClientStateError, MessageIllegalError, NoRouteError
from rocketq.client.producer.selectors import SelectMessageQueueByHash
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def read_all(ns: str, topic: str, expected: int, group: str = "cg-read") -> list:
    """Every message of `topic` from its first offset, with a lite pull consumer."""
    out: list = []
    async with LitePullConsumer(group, namesrv_addr=ns, consume_from_where=FIRST) as lite:
        lite.subscribe(topic, "*")
        await wait_for(lambda: lite.assignment(), timeout_s=15, what="queues assigned")
        for _ in range(200):
            out.extend(await lite.poll(timeout_ms=200))
            if len(out) >= expected:
                break
    return out


async def test_bad_input_fails_before_the_network(cluster) -> None:
    ns = cluster.namesrv_addr
    producer = Producer("pg-bad", namesrv_addr=ns)
    with pytest.raises(ClientStateError, match="not started"):
        await producer.send(Message("T", b"x"))
    async with producer:
        with pytest.raises(MessageIllegalError, match="empty"):
            await producer.send(Message("", b"x"))
        with pytest.raises(MessageIllegalError, match="over the maximum"):
            await producer.send(Message("T", b"x" * (4 * 1024 * 1024 + 1)))
        with pytest.raises(MessageIllegalError, match="zero"):
            await producer.send(Message("T", b""))
        with pytest.raises(MessageIllegalError, match="characters"):
            await producer.send(Message("bad topic!", b"x"))
        with pytest.raises(MessageIllegalError, match="tag"):
            await producer.send(Message("T", b"x", tags="a || b"))
    with pytest.raises(ClientStateError, match="shut down"):
        await producer.send(Message("T", b"x"))


async def test_no_route_names_the_topic(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"autoCreateTopicEnable": "false"})
    async with Producer("pg-noroute", namesrv_addr=cluster.namesrv_addr) as producer:
        with pytest.raises(NoRouteError, match="NoSuchTopic") as info:
            await producer.send(Message("NoSuchTopic", b"x"))
        assert info.value.topic == "NoSuchTopic"


@pytest.mark.timeout(120)
async def test_sends_keep_succeeding_when_a_broker_dies(cluster_factory) -> None:
    cluster = await cluster_factory(broker_count=2)
    ns, topic = cluster.namesrv_addr, "TopicHA"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=4, write_queues=4)
    async with Producer("pg-ha", namesrv_addr=ns, send_msg_timeout_ms=5000) as producer:
        before = [await producer.send(Message(topic, f"b{i}".encode())) for i in range(100)]
        assert {r.queue.broker_name for r in before} == {"broker-a", "broker-b"}
        cluster.brokers[1].kill()
        after = [await producer.send(Message(topic, f"a{i}".encode())) for i in range(200)]
    assert all(r.status is SendStatus.SEND_OK for r in after)
    assert {r.queue.broker_name for r in after[-50:]} == {"broker-a"}


async def test_fault_strategy_moves_sends_off_a_dead_broker(cluster_factory) -> None:
    cluster = await cluster_factory(broker_count=2)
    ns, topic = cluster.namesrv_addr, "TopicFault"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    async with Producer("pg-fault", namesrv_addr=ns, send_latency_fault_enable=True) as producer:
        await producer.send(Message(topic, b"warm"))
        cluster.brokers[0].kill()
        results = [await producer.send(Message(topic, f"f{i}".encode())) for i in range(40)]
        assert {r.queue.broker_name for r in results} == {"broker-b"}
        # Either a send tried broker-a, failed and put it in its fault window, or the producer's route had
        # already dropped it (the NameServer forgets a broker whose connection closed) before one did.
        info = producer._publish[topic]
        tried_and_penalised = not producer.fault_strategy.tolerance.is_available("broker-a")
        assert tried_and_penalised or "broker-a" not in {q.broker_name for q in info.message_queues}


async def test_batch_selector_async_oneway_and_compression(cluster) -> None:
    ns, topic = cluster.namesrv_addr, "TopicKinds"
    big = bytes(range(256)) * 64  # 16 KiB, compressible
    async with Producer("pg-kinds", namesrv_addr=ns) as producer:
        batch = await producer.send_batch(
            [Message(topic, f"batch-{i}".encode(), keys=[f"k{i}"]) for i in range(10)]
        )
        assert batch.status is SendStatus.SEND_OK and len(batch.msg_id.split(",")) == 10
        selector = SelectMessageQueueByHash()
        picked = {
            (await producer.send(Message(topic, b"sel"), selector=selector, arg="order-1")).queue
            for _ in range(5)
        }
        assert len(picked) == 1
        futures = [producer.send_async(Message(topic, f"async-{i}".encode())) for i in range(20)]
        assert all(r.status is SendStatus.SEND_OK for r in await asyncio.gather(*futures))
        await producer.send_oneway(Message(topic, b"oneway"))
        compressed = await producer.send(Message(topic, big, tags="Big"))
    msgs = await read_all(ns, topic, 10 + 5 + 20 + 1 + 1)
    bodies = [m.body for m in msgs]
    assert big in bodies, "a compressed body comes back inflated"
    stored = next(m for m in msgs if m.body == big)
    assert stored.sys_flag & 0x1 and stored.msg_id == compressed.msg_id
    assert zlib.compress(big)  # sanity
    assert {f"batch-{i}".encode() for i in range(10)} <= set(bodies)
    assert b"oneway" in bodies and bodies.count(b"sel") == 5
