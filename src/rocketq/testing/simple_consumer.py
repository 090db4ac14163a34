"""Test helper for SimpleConsumer (POP) scenarios: receive until enough messages came, with a deadline."""

from __future__ import annotations

from rocketq.client import MessageExt, SimpleConsumer
from rocketq.testing.waiting import wait_for


async def receive_until(
    consumer: SimpleConsumer, n: int, invisible_ms: int, timeout_s: float = 15
) -> list[MessageExt]:
    """Receive (each hidden for `invisible_ms`) until at least `n` messages came; WaitTimeoutError after `timeout_s`."""
    got: list[MessageExt] = []

    async def more() -> bool:
        got.extend(await consumer.receive(16, invisible_ms))
        return len(got) >= n

    await wait_for(more, timeout_s=timeout_s, interval_s=0, what=f"{n} received message(s)")
    return got
