"""The SDK's metrics (enable_client_metrics): send cost, delivery latency, process time, cached messages."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from rocketq.client import ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer
from rocketq.client.metrics import disable_client_metrics, enable_client_metrics
from rocketq.testing.waiting import wait_for

TOPIC = "TopicClientMetrics"


async def test_client_metrics_count_sends_and_listener_calls(cluster) -> None:
    registry = CollectorRegistry()
    enable_client_metrics(registry)
    try:
        got: asyncio.Queue = asyncio.Queue()
        async with Producer("pg-cm", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(3):
                await producer.send(Message(TOPIC, f"m{i}".encode()))
            consumer = PushConsumer(
                "cg-cm",
                namesrv_addr=cluster.namesrv_addr,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe(TOPIC, "*")
            consumer.register_listener(
                lambda msgs: [got.put_nowait(m) for m in msgs] and ConsumeResult.SUCCESS
            )
            await consumer.start()
            try:
                for _ in range(3):
                    await asyncio.wait_for(got.get(), 30)
                client_id = producer.client_id
                sends = registry.get_sample_value(
                    "rocketmq_send_cost_time_count",
                    {"topic": TOPIC, "client_id": client_id, "invocation_status": "success"},
                )
                assert sends == 3
                labels = {"topic": TOPIC, "consumer_group": "cg-cm", "client_id": consumer.client_id}
                # The listener counts are recorded just after it returns: wait for the last one.
                ok = labels | {"invocation_status": "success"}
                await wait_for(lambda: registry.get_sample_value("rocketmq_process_time_count", ok) == 3, timeout_s=10,
                               what="three listener calls timed")  # fmt: skip
                assert registry.get_sample_value("rocketmq_delivery_latency_count", labels) == 3
                assert registry.get_sample_value("rocketmq_consumer_cached_messages", labels) is not None
            finally:
                await consumer.shutdown()
    finally:
        disable_client_metrics()
