"""Message trace against real daemons: Pub, SubBefore, SubAfter records written by the SDK, read back."""

from __future__ import annotations

import asyncio
import json

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    Message,
    Producer,
    PushConsumer,
)
from rocketq.client.admin_cli import main as admin_main
from rocketq.client.trace.view import query_msg_trace_by_id
from rocketq.common import constants as C
from rocketq.testing.waiting import wait_for

TOPIC = "TopicTraced"


async def test_send_and_consume_with_trace_on_write_pub_sub_before_and_sub_after(
    cluster_factory, capsys
) -> None:
    cluster = await cluster_factory(broker_overrides={"traceTopicEnable": "true"})
    ns, broker_addr = cluster.namesrv_addr, cluster.brokers[0].addr
    async with Admin(namesrv_addr=ns) as admin:
        route = await admin.topic_route(C.RMQ_SYS_TRACE_TOPIC)  # traceTopicEnable created it at start
        assert route.broker_datas
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
    got: asyncio.Queue = asyncio.Queue()
    async with Producer("pg-traced", namesrv_addr=ns, enable_msg_trace=True) as producer:
        sent = await producer.send(Message(TOPIC, b"traced body", tags="TagA", keys="order-1"))
        consumer = PushConsumer(
            "cg-traced", namesrv_addr=ns, enable_msg_trace=True,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )  # fmt: skip
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(lambda msgs: [got.put_nowait(m) for m in msgs] and ConsumeResult.SUCCESS)
        await consumer.start()
        try:
            msg = await asyncio.wait_for(got.get(), 30)
            assert msg.msg_id == sent.msg_id
        finally:
            await consumer.shutdown()  # flushes the consumer's traces

    async with Admin(namesrv_addr=ns) as admin:

        async def all_three() -> list | None:
            views = await query_msg_trace_by_id(admin, sent.msg_id)
            return views if {v.msg_type for v in views} >= {"Pub", "SubBefore", "SubAfter"} else None

        views = await wait_for(all_three, timeout_s=20, what="Pub, SubBefore and SubAfter records")
    by_type = {v.msg_type: v for v in views}
    pub, before, after = by_type["Pub"], by_type["SubBefore"], by_type["SubAfter"]
    assert (pub.group_name, pub.topic, pub.tags, pub.keys, pub.status) == (
        "pg-traced",
        TOPIC,
        "TagA",
        "order-1",
        "success",
    )
    assert pub.store_host == broker_addr and pub.offset_msg_id == sent.offset_msg_id
    assert 0 <= pub.cost_time < 30_000 and pub.time_stamp > 0
    assert (before.group_name, before.retry_times, before.keys) == ("cg-traced", 0, "order-1")
    assert after.group_name == "cg-traced" and after.status == "success" and after.context_code == 0
    assert after.request_id == before.request_id and after.cost_time >= 0

    code = await asyncio.to_thread(
        admin_main, ["--namesrv-addr", ns, "query-msg-trace-by-id", "-i", sent.msg_id, "--json"]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["type"] for r in rows} >= {"Pub", "SubBefore", "SubAfter"}
    assert {r["group"] for r in rows} == {"pg-traced", "cg-traced"}


async def test_a_failing_trace_send_does_not_fail_the_business_send(cluster) -> None:
    ns = cluster.namesrv_addr
    # A trace topic no broker accepts: every trace write fails, every business send succeeds.
    async with Producer(
        "pg-trace-fails", namesrv_addr=ns, enable_msg_trace=True, customized_trace_topic="bad trace topic"
    ) as producer:
        results = [await producer.send(Message("TopicTraceFails", f"b{i}".encode())) for i in range(5)]
        assert all(r.status.name == "SEND_OK" for r in results)
        dispatcher = producer._trace
        assert dispatcher is not None
        await dispatcher.flush()
        assert dispatcher.failed >= 1 and dispatcher.sent == 0


async def test_a_lite_pull_consumer_with_trace_on_records_its_pulls(cluster_factory) -> None:
    cluster = await cluster_factory(broker_overrides={"traceTopicEnable": "true"})
    ns = cluster.namesrv_addr
    async with Producer("pg-lite-traced", namesrv_addr=ns) as producer:
        sent = await producer.send(Message("TopicLiteTraced", b"x", keys="lite-1"))
    async with LitePullConsumer(
        "cg-lite-traced",
        namesrv_addr=ns,
        enable_msg_trace=True,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ) as lite:
        lite.subscribe("TopicLiteTraced", "*")
        got: list = []

        async def polled() -> bool:
            got.extend(await lite.poll(timeout_ms=200))
            return bool(got)

        await wait_for(polled, timeout_s=30, what="the message polled")
    async with Admin(namesrv_addr=ns) as admin:

        async def sub_records() -> list | None:
            views = [
                v for v in await query_msg_trace_by_id(admin, sent.msg_id) if v.group_name == "cg-lite-traced"
            ]
            return views if {v.msg_type for v in views} == {"SubBefore", "SubAfter"} else None

        views = await wait_for(
            sub_records, timeout_s=20, what="SubBefore and SubAfter of the lite pull consumer"
        )
    assert all(v.status == "success" and v.keys == "lite-1" for v in views)
