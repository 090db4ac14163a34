"""Push consumers against real daemons: load sharing, membership changes, broadcasting, orderly, restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Admin, ConsumeFromWhere, MessageModel, Producer, PushConsumer
from rocketq.client.producer.selectors import SelectMessageQueueByHash
from rocketq.common.message import Message
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def consumer(ns: str, group: str, topic: str, collector: Any, **kw: Any) -> PushConsumer:
    c = PushConsumer(group, namesrv_addr=ns, consume_from_where=FIRST, **kw)
    c.subscribe(topic, "*")
    c.register_listener(collector)
    return c


async def test_send_and_consume_one_broker(cluster, h) -> None:
    ns = cluster.namesrv_addr
    async with Producer("pg-basic", namesrv_addr=ns) as producer:
        results = await h.send_all(producer, "TopicBasic", [f"m{i}".encode() for i in range(50)], tags="TagA")
        assert {r.queue.broker_name for r in results} == {"broker-a"}
        assert len({r.msg_id for r in results}) == 50
        col = h.Collector()
        async with consumer(ns, "cg-basic", "TopicBasic", col):
            await wait_for(lambda: len(col.events) >= 50, timeout_s=20, what="50 messages")
        assert sorted(col.bodies) == sorted(f"m{i}".encode() for i in range(50))
        assert all(e[1].broker_name == "broker-a" for e in col.events)


@pytest.mark.timeout(180)
async def test_10k_messages_two_brokers_three_consumers_exactly_once(cluster_factory, h) -> None:
    cluster = await cluster_factory(broker_count=2)
    ns, topic = cluster.namesrv_addr, "TopicLoad"
    async with Admin(namesrv_addr=ns) as admin:
        assert len(await admin.create_topic(topic, read_queues=8, write_queues=8)) == 2
    await wait_for(lambda: _route_has(ns, topic, 2), timeout_s=20, what="route on both brokers")
    cols = [h.Collector(f"c{i}") for i in range(3)]
    consumers = [consumer(ns, "cg-load", topic, col) for col in cols]
    for c in consumers:
        await c.start()
    try:
        await h.wait_group_stable(consumers, topic, 16)
        async with Producer("pg-load", namesrv_addr=ns) as producer:
            bodies = [f"load-{i}".encode() for i in range(10_000)]
            results = await h.send_all(producer, topic, bodies, inflight=256)
        assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}
        await wait_for(
            lambda: sum(len(c.events) for c in cols) >= 10_000, timeout_s=90, what="10,000 messages"
        )
        await asyncio.sleep(0.5)  # any duplicate would show up now
        seen = h.counts(*cols)
        assert set(seen) == set(bodies)
        assert max(seen.values()) == 1, "a message was consumed twice"
        assert all(col.events for col in cols), "every consumer takes a share"
    finally:
        for c in consumers:
            await c.shutdown()


async def _route_has(ns: str, topic: str, brokers: int) -> bool:
    async with Admin(namesrv_addr=ns) as admin:
        route = await admin.topic_route(topic)
        return len(route.queue_datas) == brokers


@pytest.mark.timeout(180)
async def test_consumers_join_and_leave_mid_stream_without_loss(cluster_factory, h) -> None:
    cluster = await cluster_factory(broker_count=2)
    ns, topic = cluster.namesrv_addr, "TopicChurn"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=4, write_queues=4)
    cols = [h.Collector(f"c{i}") for i in range(3)]
    first = consumer(ns, "cg-churn", topic, cols[0])
    await first.start()
    await h.wait_group_stable([first], topic, 8)
    bodies = [f"churn-{i}".encode() for i in range(3000)]
    members = [first]
    async with Producer("pg-churn", namesrv_addr=ns) as producer:
        for step, chunk in enumerate(range(0, 3000, 500)):
            await h.send_all(producer, topic, bodies[chunk : chunk + 500], inflight=32)
            if step == 1:
                second = consumer(ns, "cg-churn", topic, cols[1])
                await second.start()
                members.append(second)
            elif step == 2:
                third = consumer(ns, "cg-churn", topic, cols[2])
                await third.start()
                members.append(third)
            elif step == 3:
                await first.shutdown()
                members.remove(first)
    try:
        await wait_for(
            lambda: set(h.counts(*cols)) >= set(bodies), timeout_s=90, what="every message at least once"
        )
        assert cols[1].events and cols[2].events
    finally:
        for c in members:
            await c.shutdown()


async def test_broadcasting_delivers_every_message_to_every_consumer(cluster, h, tmp_path: Path) -> None:
    ns, topic = cluster.namesrv_addr, "TopicBroadcast"
    async with Producer("pg-bc", namesrv_addr=ns) as producer:
        await producer.send(Message(topic, b"create"))  # creates the topic (TBW102)
        cols = [h.Collector(f"b{i}") for i in range(3)]
        consumers = [
            consumer(
                ns,
                "cg-bc",
                topic,
                col,
                message_model=MessageModel.BROADCASTING,
                offset_store_dir=str(tmp_path),
            )
            for col in cols
        ]
        for c in consumers:
            await c.start()
        try:
            await wait_for(
                lambda: all(len(c.assigned_queues()) == 4 for c in consumers),
                timeout_s=20,
                what="all queues each",
            )
            bodies = [f"bc-{i}".encode() for i in range(200)]
            await h.send_all(producer, topic, bodies)
            for col in cols:
                await wait_for(
                    lambda col=col: set(bodies) <= set(col.bodies),  # type: ignore[misc, arg-type]
                    timeout_s=30,
                    what=f"all messages at {col.name}",
                )
        finally:
            for c in consumers:
                await c.shutdown()
    offset_files = await asyncio.to_thread(lambda: list(tmp_path.rglob("offsets.json")))
    assert len(offset_files) == 3, "each broadcasting member keeps its own offsets"


@pytest.mark.timeout(120)
async def test_orderly_keeps_per_queue_order_across_rebalance(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicOrderly"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=4, write_queues=4)
    events: list[tuple[str, int, int]] = []

    def make(name: str):
        def listener(msgs):
            for m in msgs:
                events.append((name, m.queue_id, m.queue_offset))

        return listener

    c1 = PushConsumer("cg-orderly", namesrv_addr=ns, consume_from_where=FIRST)
    c1.subscribe(topic, "*")
    c1.register_orderly_listener(make("c1"))
    await c1.start()
    c2 = PushConsumer("cg-orderly", namesrv_addr=ns, consume_from_where=FIRST)
    c2.subscribe(topic, "*")
    c2.register_orderly_listener(make("c2"))
    selector = SelectMessageQueueByHash()
    total = 800
    try:
        await h.wait_group_stable([c1], topic, 4)
        async with Producer("pg-orderly", namesrv_addr=ns) as producer:
            for i in range(total):
                await producer.send(Message(topic, f"{i % 8}:{i}".encode()), selector=selector, arg=i % 8)
                if i == total // 3:
                    await c2.start()
        await wait_for(
            lambda: len({(q, o) for _, q, o in events}) >= total, timeout_s=60, what="every message"
        )
    finally:
        await c1.shutdown()
        await c2.shutdown()
    assert {name for name, _, _ in events} == {"c1", "c2"}, "the queues were shared after the rebalance"
    for queue in range(4):
        firsts: list[int] = []
        seen: set[int] = set()
        for _, q, off in events:
            if q == queue and off not in seen:
                seen.add(off)
                firsts.append(off)
        assert firsts == sorted(firsts), f"queue {queue} consumed out of order"
        for name in ("c1", "c2"):
            mine = [off for n, q, off in events if n == name and q == queue]
            assert mine == sorted(mine), f"{name} saw queue {queue} out of order"


async def test_offsets_resume_after_consumer_restart(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicResume"
    async with Producer("pg-resume", namesrv_addr=ns) as producer:
        first_batch = [f"a{i}".encode() for i in range(100)]
        await h.send_all(producer, topic, first_batch)
        col1 = h.Collector()
        async with consumer(ns, "cg-resume", topic, col1):
            await wait_for(lambda: set(first_batch) <= set(col1.bodies), timeout_s=20, what="first batch")
        second_batch = [f"b{i}".encode() for i in range(50)]
        await h.send_all(producer, topic, second_batch)
        col2 = h.Collector()
        async with consumer(ns, "cg-resume", topic, col2):
            await wait_for(lambda: set(second_batch) <= set(col2.bodies), timeout_s=20, what="second batch")
            await asyncio.sleep(0.3)
        assert not set(first_batch) & set(col2.bodies), (
            "the restarted consumer went back before its committed offset"
        )


async def test_listener_failure_goes_back_and_consumer_keeps_running(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicRetry"
    attempts: dict[bytes, int] = {}
    done: list[bytes] = []

    def flaky(msgs):
        for m in msgs:
            attempts[m.body] = attempts.get(m.body, 0) + 1
            if m.body == b"bad" and attempts[m.body] == 1:
                raise RuntimeError("first attempt fails")
            done.append(m.body)

    c = PushConsumer("cg-retry", namesrv_addr=ns, consume_from_where=FIRST)
    c.subscribe(topic, "*")
    c.register_listener(flaky)
    async with Producer("pg-retry", namesrv_addr=ns) as producer:
        sent = [await producer.send(Message(topic, b"bad")), await producer.send(Message(topic, b"good"))]
        async with c:
            await wait_for(
                lambda: b"good" in done and b"bad" in attempts, timeout_s=20, what="both messages tried"
            )

            def settled() -> bool:
                offsets = c.offset_table(topic)
                return all(offsets.get(r.queue, -1) > r.queue_offset for r in sent)

            # The failed message was handed back to the broker (send-back or a re-send to the retry
            # topic), so the committed offsets move past it instead of waiting for it.
            await wait_for(settled, timeout_s=20, what="offsets past the failed message")
            assert c.consume_service.failed_count == 1


@pytest.mark.timeout(90)
async def test_failed_message_is_redelivered(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicRedeliver"
    async with Admin(namesrv_addr=ns) as admin:
        inst = await admin._inst()
        addr = (
            inst.any_broker_addr() or (await admin.cluster_info()).broker_addr_table["broker-a"].master_addr
        )
        assert addr is not None
        resp = await inst.api.transport.invoke_sync(
            addr, inst.api.command(36, {"offset": "0", "group": "g", "delayLevel": "0"}), 3000
        )
        if resp.code == 3:
            pytest.skip("this broker does not serve CONSUMER_SEND_MSG_BACK / delayed retry yet")
    attempts: dict[bytes, int] = {}

    def flaky(msgs):
        for m in msgs:
            attempts[m.body] = attempts.get(m.body, 0) + 1
            if attempts[m.body] == 1:
                raise RuntimeError("first attempt fails")

    c = PushConsumer("cg-redeliver", namesrv_addr=ns, consume_from_where=FIRST)
    c.subscribe(topic, "*")
    c.register_listener(flaky)
    async with Producer("pg-redeliver", namesrv_addr=ns) as producer:
        await producer.send(Message(topic, b"again"))
        async with c:
            await wait_for(
                lambda: attempts.get(b"again", 0) >= 2, timeout_s=40, what="the redelivery (10 s delay level)"
            )
