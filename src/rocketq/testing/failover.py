"""Helpers for tests where a broker of several dies, stops or is cut off: routes, acks per broker, timings.

`route_brokers` asks a NameServer directly which brokers a topic's route names (no client cache in
between). `AVOIDING_PRODUCER` holds the Producer settings of those tests: retries on another broker,
send_latency_fault_enable, a short route refresh, and a penalty window of a few seconds after a
failure (Java's default is 600 s, which would keep a restarted broker unused for ten minutes).
`FAST_REGISTRATION` (broker settings) and `SHORT_EXPIRY_MS` (NameServer) let a NameServer notice a silent
broker in seconds. `acks_from` and `wait_for_acks_from` tell whether sends reach a given broker.
"""

from __future__ import annotations

import time
from typing import Any

from rocketq.testing.ledger import Ledger
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.send_stream import SendStream
from rocketq.testing.waiting import wait_for

# notAvailableDuration steps (by latency step 50,100,550,1000,2000,3000,15000 ms); a failed send counts
# as 30 s of latency, so the last step is the penalty of a broker that failed: 3 s here.
SHORT_PENALTY_MS = (0, 0, 1_000, 1_000, 2_000, 2_000, 3_000)
ROUTE_REFRESH_MS = 500

# Brokers register every 30 s by default (at least 10 s, as in Java); a NameServer expiry shortened for a
# test must stay above the registration period, or live brokers expire too.
FAST_REGISTRATION: dict[str, Any] = {"registerNameServerPeriod": 10_000}
SHORT_EXPIRY_MS = 14_000

AVOIDING_PRODUCER: dict[str, Any] = {
    "send_latency_fault_enable": True,
    "retry_times_when_send_failed": 2,
    "poll_name_server_interval_ms": ROUTE_REFRESH_MS,
    "not_available_duration_ms": SHORT_PENALTY_MS,
}


async def route_brokers(namesrv_addr: str, topic: str) -> set[str]:
    """Broker names in `topic`'s route at the (first) NameServer now; empty when it has no route."""
    async with NamesrvTestClient(namesrv_addr, timeout_ms=2000) as client:
        route = await client.route(topic)
    return {q.broker_name for q in route.queue_datas} if route is not None else set()


async def wait_route(namesrv_addr: str, topic: str, brokers: set[str], timeout_s: float) -> float:
    """Until the route names exactly `brokers`; returns when (monotonic)."""

    async def matches() -> bool:
        return await route_brokers(namesrv_addr, topic) == brokers

    await wait_for(
        matches, timeout_s=timeout_s, interval_s=0.05, what=f"route of {topic} = {sorted(brokers)}"
    )
    return time.monotonic()


def acks_from(ledger: Ledger, broker: str) -> int:
    return sum(1 for ack in ledger.acks.values() if ack.position[0] == broker)


async def wait_for_acks_from(stream: SendStream, broker: str, count: int, timeout_s: float) -> float:
    """Until `count` more sends were acknowledged by `broker`; returns when (monotonic)."""
    target = acks_from(stream.ledger, broker) + count
    await wait_for(
        lambda: acks_from(stream.ledger, broker) >= target,
        timeout_s=timeout_s,
        interval_s=0.02,
        what=f"{count} acknowledgements from {broker}",
    )
    return time.monotonic()
