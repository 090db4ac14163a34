"""What the foreign-client tests (test_js_client.py, test_java_*.py) do with our own Python client on the other side."""

from __future__ import annotations

import time
from typing import Any

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, Message, MessageExt, Producer
from rocketq.testing.waiting import wait_for


async def python_receive(
    ns: str, group: str, topic: str, count: int, timeout_s: float = 30
) -> list[MessageExt]:
    """Everything on `topic` from the first offset with our LitePullConsumer, until `count` messages."""
    got: list[MessageExt] = []
    async with LitePullConsumer(
        group, namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    ) as lite:
        lite.subscribe(topic, "*")
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            got.extend(await lite.poll(timeout_ms=200))
    assert len(got) >= count, f"our consumer received {len(got)} of {count} messages"
    return got


async def python_send(ns: str, group: str, messages: list[Message]) -> list[Any]:
    async with Producer(group, namesrv_addr=ns) as producer:
        return [await producer.send(m) for m in messages]


async def create_topic(ns: str, topic: str, queues: int = 4) -> None:
    """`topic` on the DefaultCluster's brokers (ours or Apache's), once the NameServer routes it."""
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, cluster="DefaultCluster", read_queues=queues, write_queues=queues)
        await wait_for(lambda: admin.topic_route(topic), timeout_s=15, what=f"route of {topic}")
