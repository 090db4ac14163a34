"""Two brokers, one killed (or stopped) during sends: clients avoid it, the NameServer drops it, it returns.

docs/fault-tests.md. One NameServer, two brokers, a topic with 4 queues on each. An SDK Producer with
retries and send_latency_fault_enable (rocketq.testing.failover.AVOIDING_PRODUCER: route refresh every
500 ms, a failed broker out of rotation for 3 s) keeps a steady stream of sends going; every attempt's
broker is logged (rocketq.testing.send_stream.AttemptLog).

Kill (SIGKILL): >= 99.9 % of sends succeed; the last attempt that went to the dead broker comes
within a second of the kill (time-to-avoid); the NameServer drops it at once (its connection closed);
after a restart on the same store it is in the route again and acknowledges sends within a bounded
time (route refresh + penalty window); finally every acknowledged message is read back from both
brokers, byte-identical.

Pause (SIGSTOP) with brokerChannelExpiredTime shortened to 14 s and the brokers registering every 10 s
(registerNameServerPeriod's lower bound, as in Java; the expiry must stay above it): the connection stays open, so the NameServer drops the
broker only when the registration expires; sends to it time out instead of failing fast, and the
producer tries it again each time its penalty window (3 s) ends, until the route without it arrives.
After SIGCONT it registers again and is used again.

Figures (printed; `pytest -s` shows them): success rate, time-to-avoid, NameServer drop time, time
until the returned broker acknowledges again. Soak (ROCKETQ_SOAK=1): 5 kill/restart rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from rocketq.client import Admin, Producer
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.failover import (
    AVOIDING_PRODUCER,
    FAST_REGISTRATION,
    ROUTE_REFRESH_MS,
    SHORT_EXPIRY_MS,
    SHORT_PENALTY_MS,
    acks_from,
    wait_for_acks_from,
    wait_route,
)
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.ledger import Ledger, compare
from rocketq.testing.send_stream import AttemptLog, SendStream, read_back

TOPIC = "Failover"
BOTH = {"broker-a", "broker-b"}
VICTIM, SURVIVOR = "broker-a", "broker-b"
SCAN_MS = 500
PAUSE_EXPIRY_MS = SHORT_EXPIRY_MS
MIN_SUCCESS_RATE = 0.999
STREAM = {"concurrency": 4, "pace_s": 0.002, "body_size": 200}
RETURN_BOUND_S = ROUTE_REFRESH_MS / 1000 + max(SHORT_PENALTY_MS) / 1000 + 5.0


@dataclass
class Round:
    avoid_s: float  # fault to the last attempt at the victim
    attempts_after_fault: int  # attempts at the victim from the fault until it was back
    namesrv_drop_s: float  # fault until the NameServer's route lost it
    back_s: float  # READY (or SIGCONT) until it acknowledged sends again

    def line(self, what: str) -> str:
        return (
            f"{what}: last attempt at the victim {self.avoid_s * 1000:.1f} ms after the fault "
            f"({self.attempts_after_fault} attempts at it meanwhile); NameServer dropped it after "
            f"{self.namesrv_drop_s:.2f}s; acknowledging again {self.back_s:.2f}s after it returned"
        )


async def _cluster(cluster_factory: ClusterFactory, expiry_ms: int | None = None) -> LocalCluster:
    namesrv = {"scanNotActiveBrokerInterval": SCAN_MS}
    if expiry_ms is not None:
        namesrv["brokerChannelExpiredTime"] = expiry_ms
    cluster = await cluster_factory(
        broker_count=2, namesrv_overrides=namesrv, broker_overrides=FAST_REGISTRATION
    )
    async with Admin(namesrv_addr=cluster.namesrv_addr, instance_name="failover-admin") as admin:
        assert len(await admin.create_topic(TOPIC, read_queues=4, write_queues=4)) == 2
    await wait_route(cluster.namesrv_addr, TOPIC, BOTH, timeout_s=15)
    return cluster


async def _start_stream(ns: str, name: str) -> tuple[Producer, SendStream, AttemptLog]:
    producer = Producer(f"pg-{name}", namesrv_addr=ns, instance_name=f"{name}-producer", **AVOIDING_PRODUCER)
    await producer.start()
    stream = SendStream(producer, TOPIC, Ledger(), **STREAM)  # type: ignore[arg-type]
    attempts = AttemptLog(producer)
    stream.start()
    for broker in sorted(BOTH):
        await wait_for_acks_from(stream, broker, 50, timeout_s=20)
    return producer, stream, attempts


async def _kill_round(cluster: LocalCluster, stream: SendStream, attempts: AttemptLog) -> Round:
    ns, victim = cluster.namesrv_addr, cluster.brokers[0]
    assert victim.name == VICTIM
    killed_at = time.monotonic()
    victim.kill()
    dropped_at = await wait_route(ns, TOPIC, {SURVIVOR}, timeout_s=10)
    await wait_for_acks_from(stream, SURVIVOR, 200, timeout_s=20)  # the stream goes on without it
    assert await victim.wait_exit(10) is not None
    await victim.restart()
    ready_at = time.monotonic()
    last = attempts.last_to(VICTIM, since=killed_at)
    attempts_meanwhile = attempts.count_to(VICTIM, since=killed_at, until=ready_at)
    await wait_route(ns, TOPIC, BOTH, timeout_s=10)
    back_at = await wait_for_acks_from(stream, VICTIM, 10, timeout_s=RETURN_BOUND_S + 5)
    return Round(
        avoid_s=(last - killed_at) if last is not None and last < ready_at else 0.0,
        attempts_after_fault=attempts_meanwhile,
        namesrv_drop_s=dropped_at - killed_at,
        back_s=back_at - ready_at,
    )


def _success(ledger: Ledger) -> tuple[float, str]:
    sent = ledger.acked_count + sum(ledger.failed.values())
    rate = ledger.acked_count / sent if sent else 0.0
    return (
        rate,
        f"{ledger.acked_count}/{sent} sends acknowledged ({rate * 100:.3f} %), failures {dict(ledger.errors)}",
    )


async def kill_and_return(cluster_factory: ClusterFactory, rounds: int) -> None:
    cluster = await _cluster(cluster_factory)
    producer, stream, attempts = await _start_stream(cluster.namesrv_addr, "failover-kill")
    results: list[Round] = []
    try:
        for _ in range(rounds):
            results.append(await _kill_round(cluster, stream, attempts))
            await wait_for_acks_from(stream, SURVIVOR, 100, timeout_s=20)
    finally:
        await stream.stop()
        attempts.close()
        await producer.shutdown()
    rate, summary = _success(stream.ledger)
    print(f"\nfailover, kill -9 of {VICTIM} with {SURVIVOR} alive: {summary}")
    for index, result in enumerate(results):
        print(result.line(f"round {index}"))
    if stream.ledger.error_samples:
        print(f"first failure of each kind: {stream.ledger.error_samples}")
    assert rate >= MIN_SUCCESS_RATE, summary
    for result in results:
        assert result.avoid_s < 1.0, result.line("too slow to avoid the dead broker")
        assert result.namesrv_drop_s < 2.0, result.line(
            "the NameServer kept a broker whose connection closed"
        )
        assert result.back_s < RETURN_BOUND_S, result.line("the restarted broker was not used again in time")
    consumed = await read_back(cluster.namesrv_addr, TOPIC, "cg-failover-verify", timeout_s=90)
    comparison = compare(stream.ledger, consumed)
    print(
        f"read back {comparison.consumed} messages: lost {len(comparison.lost)}, corrupt {len(comparison.corrupt)}"
    )
    assert comparison.ok, comparison.problems()
    assert acks_from(stream.ledger, VICTIM) > 0 and acks_from(stream.ledger, SURVIVOR) > 0


@pytest.mark.timeout(120)
async def test_a_killed_broker_is_avoided_dropped_and_used_again(cluster_factory: ClusterFactory) -> None:
    await kill_and_return(cluster_factory, rounds=1)


@pytest.mark.soak
@pytest.mark.timeout(300)
async def test_kill_and_return_soak(cluster_factory: ClusterFactory) -> None:
    await kill_and_return(cluster_factory, rounds=5)


@pytest.mark.timeout(120)
async def test_a_stopped_broker_expires_at_the_namesrv_and_returns_after_sigcont(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await _cluster(cluster_factory, expiry_ms=PAUSE_EXPIRY_MS)
    ns, victim = cluster.namesrv_addr, cluster.brokers[0]
    producer, stream, attempts = await _start_stream(ns, "failover-pause")
    try:
        paused_at = time.monotonic()
        victim.pause()
        # A stopped broker keeps its connection open: only the expiry of its registration removes it.
        dropped_at = await wait_route(ns, TOPIC, {SURVIVOR}, timeout_s=PAUSE_EXPIRY_MS / 1000 + 10)
        await wait_for_acks_from(stream, SURVIVOR, 200, timeout_s=20)
        last = attempts.last_to(VICTIM, since=paused_at)
        resumed_at = time.monotonic()
        attempts_meanwhile = attempts.count_to(VICTIM, since=paused_at, until=resumed_at)
        victim.resume()
        await wait_route(ns, TOPIC, BOTH, timeout_s=20)  # its overdue registration goes out at once
        back_at = await wait_for_acks_from(stream, VICTIM, 10, timeout_s=RETURN_BOUND_S + 5)
    finally:
        if victim.paused:
            victim.resume()
        await stream.stop()
        attempts.close()
        await producer.shutdown()
    result = Round(
        avoid_s=(last - paused_at) if last is not None else 0.0,
        attempts_after_fault=attempts_meanwhile,
        namesrv_drop_s=dropped_at - paused_at,
        back_s=back_at - resumed_at,
    )
    rate, summary = _success(stream.ledger)
    print(f"\nfailover, SIGSTOP of {VICTIM} (brokerChannelExpiredTime {PAUSE_EXPIRY_MS} ms): {summary}")
    print(result.line("pause"))
    # Only a send whose attempt hung on the stopped broker fails (its timeout is the whole send's budget).
    failures = sum(stream.ledger.failed.values())
    assert failures <= result.attempts_after_fault, f"{summary}; {result.line('pause')}"
    assert rate > 0.99, summary
    # A stopped broker is tried again whenever its penalty window ends (each try times out and renews
    # it) until the route without it reaches the client: the NameServer's drop plus one route refresh.
    assert result.avoid_s < result.namesrv_drop_s + ROUTE_REFRESH_MS / 1000 + 1.0, result.line("pause")
    # Each round of tries takes every sender (each hangs on it); a round per penalty window at most.
    rounds = result.namesrv_drop_s / (max(SHORT_PENALTY_MS) / 1000) + 2
    assert result.attempts_after_fault <= STREAM["concurrency"] * rounds, result.line("pause")
    assert result.namesrv_drop_s <= (PAUSE_EXPIRY_MS + 2 * SCAN_MS) / 1000 + 1.0, result.line(
        "expiry too late"
    )
    assert result.back_s < 15.0, result.line("the resumed broker was not used again in time")
