"""Helpers of the client integration tests, handed out by the `h` fixture.

(A fixture rather than an importable module: pytest runs in importlib mode, where test folders are
not on sys.path.)
"""

from __future__ import annotations

import asyncio
import types
from collections import Counter
from collections.abc import Sequence

import pytest

from rocketq.client import ConsumeResult, Message, MessageExt, MessageQueue, Producer, PushConsumer
from rocketq.testing.waiting import wait_for


class Collector:
    """A listener recording every message it sees (body, queue, offset), in arrival order."""

    def __init__(self, name: str = "c") -> None:
        self.name = name
        self.events: list[tuple[str, MessageQueue, int, bytes]] = []

    def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        for m in msgs:
            self.events.append(
                (self.name, MessageQueue(m.topic, m.broker_name, m.queue_id), m.queue_offset, m.body)
            )
        return ConsumeResult.SUCCESS

    @property
    def bodies(self) -> list[bytes]:
        return [e[3] for e in self.events]


def counts(*collectors: Collector) -> Counter[bytes]:
    c: Counter[bytes] = Counter()
    for col in collectors:
        c.update(col.bodies)
    return c


async def send_all(
    producer: Producer, topic: str, bodies: Sequence[bytes], inflight: int = 64, **kw: object
) -> list:
    """Send every body with at most `inflight` sends outstanding; the SendResults in order."""
    sem = asyncio.Semaphore(inflight)

    async def one(body: bytes):
        async with sem:
            return await producer.send(Message(topic, body, **kw))  # type: ignore[arg-type]

    return await asyncio.gather(*(one(b) for b in bodies))


async def wait_group_stable(
    consumers: Sequence[PushConsumer], topic: str, n_queues: int, timeout_s: float = 30
) -> None:
    """Until the members own disjoint queue sets of `topic` that together cover all its queues."""

    def stable() -> bool:
        owned = [{mq for mq in c.assigned_queues() if mq.topic == topic} for c in consumers]
        union = set().union(*owned)
        return len(union) == n_queues and sum(len(o) for o in owned) == n_queues and all(owned)

    await wait_for(stable, timeout_s=timeout_s, interval_s=0.1, what=f"a stable allocation of {topic}")


@pytest.fixture
def h() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        Collector=Collector, counts=counts, send_all=send_all, wait_group_stable=wait_group_stable
    )
