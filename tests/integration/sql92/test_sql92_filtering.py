"""SQL92 filtering against real daemons through the SDK: the broker filters (non-matching messages never
reach the consumer, counted), for a PushConsumer (heartbeat subscription) and a LitePullConsumer (the
pull's own subscription); a bad expression fails at subscribe/start with its position; with
enablePropertyFilter off an SQL92 subscription fails with the broker's clear remark."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageQueue,
    MessageSelector,
    Producer,
    PushConsumer,
)
from rocketq.client.errors import MQClientError
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
EXPRESSION = "(price >= 100 AND price < 400 OR region = 'ap') AND TAGS IS NOT NULL AND region <> 'us'"
COUNT = 60


def properties_of(i: int) -> dict[str, str]:
    props = {"region": ("eu", "us", "ap")[i % 3]}
    if i % 7:
        props["price"] = str(i * 10)  # every 7th message has no price at all
    return props


def matches(i: int) -> bool:
    props = properties_of(i)
    price = int(props["price"]) if "price" in props else None
    priced = price is not None and 100 <= price < 400
    tagged = i % 5 != 0
    return (priced or props["region"] == "ap") and tagged and props["region"] != "us"


EXPECTED = {b"m%02d" % i for i in range(COUNT) if matches(i)} | {b"end-%d" % q for q in range(4)}


async def property_filter_cluster(cluster_factory: Any) -> LocalCluster:
    return await cluster_factory(broker_overrides={"enablePropertyFilter": "true"})  # type: ignore[no-any-return]


async def fill(ns: str, topic: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=4, write_queues=4)
    async with Producer("pg_sql", namesrv_addr=ns) as producer:
        for i in range(COUNT):
            msg = Message(
                topic, b"m%02d" % i, tags=None if i % 5 == 0 else "TagA", properties=properties_of(i)
            )
            await producer.send(msg)
        # A matching message last in every queue: once a consumer has it, the broker has judged every
        # message before it in that queue.
        for queue_id in range(4):
            end = Message(topic, b"end-%d" % queue_id, tags="TagA", properties={"region": "ap"})
            await producer.send(end, queue=MessageQueue(topic, "broker-a", queue_id))


async def test_only_matching_messages_reach_a_push_consumer(cluster_factory: Any) -> None:
    cluster = await property_filter_cluster(cluster_factory)
    ns, topic, group = cluster.namesrv_addr, "TopicSqlPush", "cg_sql_push"
    await fill(ns, topic)
    assert 10 < len(EXPECTED) < COUNT - 10
    received: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        received.extend(m.body for m in msgs)
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(group, namesrv_addr=ns, consume_from_where=FIRST)
    consumer.subscribe(topic, MessageSelector.by_sql(EXPRESSION))
    consumer.register_listener(listener)
    async with consumer:
        await wait_for(lambda: len(received) >= len(EXPECTED), timeout_s=20, what="the matching messages")
    assert Counter(received) == Counter({body: 1 for body in EXPECTED})


async def test_only_matching_messages_reach_a_lite_pull_consumer(cluster_factory: Any) -> None:
    cluster = await property_filter_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicSqlLite"
    await fill(ns, topic)
    received: list[MessageExt] = []
    async with LitePullConsumer("cg_sql_lite", namesrv_addr=ns, consume_from_where=FIRST) as lite:
        lite.subscribe(topic, MessageSelector.by_sql(EXPRESSION))
        await wait_for(lambda: len(lite.assignment()) == 4, timeout_s=15, what="the four queues assigned")
        for _ in range(100):
            received.extend(await lite.poll(timeout_ms=200))
            if len(received) >= len(EXPECTED):
                break
    assert Counter(m.body for m in received) == Counter({body: 1 for body in EXPECTED})


async def test_a_bad_expression_fails_start_with_its_position(cluster_factory: Any) -> None:
    cluster = await property_filter_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicSqlBad"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    consumer = PushConsumer("cg_sql_bad", namesrv_addr=ns)
    consumer.subscribe(topic, MessageSelector.by_sql("price > > 100"))
    consumer.register_listener(lambda _msgs: ConsumeResult.SUCCESS)
    with pytest.raises(MQClientError) as info:
        await consumer.start()
    error = info.value
    assert isinstance(error, MQClientError) and error.code == 23  # SUBSCRIPTION_PARSE_FAILED
    assert "line 1, column 9" in str(error) and "price > > 100" in str(error)


async def test_sql92_on_a_broker_without_property_filter_is_a_clear_error(cluster: LocalCluster) -> None:
    ns, topic = cluster.namesrv_addr, "TopicSqlOff"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    consumer = PushConsumer("cg_sql_off", namesrv_addr=ns)
    consumer.subscribe(topic, MessageSelector.by_sql("price > 100"))
    consumer.register_listener(lambda _msgs: ConsumeResult.SUCCESS)
    with pytest.raises(MQClientError) as info:
        await consumer.start()
    error = info.value
    assert isinstance(error, MQClientError) and error.code == 1
    assert "The broker does not support consumer to filter message by SQL92" in str(error)


async def test_lite_pull_reports_a_bad_expression_at_start(cluster_factory: Any) -> None:
    cluster = await property_filter_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicSqlLiteBad"
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=1, write_queues=1)
    lite = LitePullConsumer("cg_sql_lite_bad", namesrv_addr=ns)
    lite.subscribe(topic, MessageSelector.by_sql("price > > 100"))
    with pytest.raises(MQClientError) as info:
        await lite.start()
    error = info.value
    assert error.code == 23 and "column 9" in str(error) and "price > > 100" in str(error)
    assert not lite.assignment()
