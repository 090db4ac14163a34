"""Consumer lifecycle edges against real daemons: a listener stuck past consume_timeout gives its message
back; SQL92 subscriptions made after start() are checked by the brokers (push and lite pull); a lite
pull consumer shut down in the middle of its first rebalance stops that rebalance at once."""

from __future__ import annotations

import asyncio
import logging
import time
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
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
ONE_SECOND_LEVELS = " ".join(["1s"] * 18)  # delay level 3 (a timed-out message's way back) = 1 s
PARSE_FAILED = 23  # SUBSCRIPTION_PARSE_FAILED


async def create_topic(ns: str, topic: str, queues: int = 1) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=queues, write_queues=queues)


async def test_a_message_stuck_past_consume_timeout_is_sent_back_and_comes_again(
    cluster_factory: Any,
) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": ONE_SECOND_LEVELS})
    ns, topic = cluster.namesrv_addr, "TopicConsumeTimeout"
    await create_topic(ns, topic)
    async with Producer("pg_timeout", namesrv_addr=ns) as producer:
        await producer.send(Message(topic, b"stuck"))
    release = asyncio.Event()
    deliveries: list[tuple[bytes, int]] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        deliveries.extend((m.body, m.reconsume_times) for m in msgs)
        if msgs[0].reconsume_times == 0:
            await release.wait()  # the first delivery hangs (until the test ends)
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("cg_timeout", namesrv_addr=ns, consume_from_where=FIRST, consume_timeout_ms=1000)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    mq = MessageQueue(topic, cluster.brokers[0].name, 0)
    async with consumer:
        try:
            await wait_for(
                lambda: (b"stuck", 1) in deliveries, timeout_s=20, what="the timed-out message again"
            )
            assert deliveries[0] == (b"stuck", 0)
            # It left the process queue: the queue's offset no longer waits for the hung call.
            await wait_for(
                lambda: consumer.offset_table(topic).get(mq) == 1, timeout_s=5, what="offset past it"
            )
        finally:
            release.set()
    assert deliveries.count((b"stuck", 1)) == 1


async def test_sql92_subscriptions_after_start_are_checked_by_the_brokers(cluster_factory: Any) -> None:
    cluster = await cluster_factory(broker_overrides={"enablePropertyFilter": "true"})
    ns, tags_topic, sql_topic = cluster.namesrv_addr, "TopicLateTags", "TopicLateSql"
    await create_topic(ns, tags_topic)
    await create_topic(ns, sql_topic)
    received: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        received.extend(m.body for m in msgs)
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("cg_late_sub", namesrv_addr=ns, consume_from_where=FIRST)
    consumer.subscribe(tags_topic, "*")
    consumer.register_listener(listener)
    lite = LitePullConsumer("cg_late_sub_lite", namesrv_addr=ns, consume_from_where=FIRST)
    lite.subscribe(tags_topic, "*")
    async with consumer, lite:
        for client in (consumer, lite):
            bad = client.subscribe(sql_topic, MessageSelector.by_sql("price > > 100"))
            assert bad is not None
            with pytest.raises(MQClientError) as info:
                await bad
            assert info.value.code == PARSE_FAILED and "column 9" in str(info.value)
            assert sql_topic not in client.subscription_topics()  # withdrawn: never pulled with it
            good = client.subscribe(sql_topic, MessageSelector.by_sql("price > 100"))
            assert good is not None
            await good
            assert sql_topic in client.subscription_topics()
        async with Producer("pg_late_sub", namesrv_addr=ns) as producer:
            await producer.send(Message(sql_topic, b"cheap", properties={"price": "5"}))
            await producer.send(Message(sql_topic, b"dear", properties={"price": "500"}))
        polled: list[bytes] = []

        async def lite_got_it() -> bool:
            polled.extend(m.body for m in await lite.poll(timeout_ms=200))
            return b"dear" in polled

        await wait_for(lambda: b"dear" in received, timeout_s=20, what="the matching message (push)")
        await wait_for(lite_got_it, timeout_s=20, what="the matching message (lite pull)")
    assert b"cheap" not in received and b"cheap" not in polled


async def test_lite_pull_shutdown_cancels_its_rebalance_in_flight(
    cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ns, topic = cluster.namesrv_addr, "TopicLiteStop"
    await create_topic(ns, topic, queues=4)
    # A producer keeps the shared client instance (and its rebalance service) alive past the consumer.
    async with Producer("pg_lite_stop", namesrv_addr=ns) as producer:
        lite = LitePullConsumer("cg_lite_stop", namesrv_addr=ns)
        lite.subscribe(topic, "*")
        entered, never = asyncio.Event(), asyncio.Event()
        cancelled: list[MessageQueue] = []

        async def slow_start_offset(mq: MessageQueue) -> int:  # a broker slow to answer the offset query
            entered.set()
            try:
                await never.wait()
            except asyncio.CancelledError:
                cancelled.append(mq)
                raise
            return 0

        lite.compute_pull_from_where = slow_start_offset  # type: ignore[method-assign]
        await lite.start()
        await asyncio.wait_for(entered.wait(), 15)
        began = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="rocketq"):
            await asyncio.wait_for(lite.shutdown(), 10)
            assert time.monotonic() - began < 5
            assert cancelled, "the rebalance in flight was cancelled"
            never.set()
            await asyncio.sleep(0.2)
        assert not lite.assignment()
        assert not [r for r in caplog.records if "rebalance" in r.getMessage()]
        await producer.send(Message(topic, b"still fine"))
