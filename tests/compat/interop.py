"""What the foreign-client tests (test_js_client.py, test_java_*.py) do with our own Python client on the other side."""

from __future__ import annotations

import time
from typing import Any

from rocketq.client import ConsumeFromWhere, LitePullConsumer, Message, MessageExt, Producer


async def python_receive(ns: str, group: str, topic: str, count: int, timeout_s: float = 30) -> list[MessageExt]:
    """Everything on `topic` from the first offset with our LitePullConsumer, until `count` messages."""
    got: list[MessageExt] = []
    async with LitePullConsumer(group, namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) as lite:
        lite.subscribe(topic, "*")
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            got.extend(await lite.poll(timeout_ms=200))
    assert len(got) >= count, f"our consumer received {len(got)} of {count} messages"
    return got


async def python_send(ns: str, group: str, messages: list[Message]) -> list[Any]:
    async with Producer(group, namesrv_addr=ns) as producer:
        return [await producer.send(m) for m in messages]
