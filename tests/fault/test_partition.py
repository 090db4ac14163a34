"""A broker cut off from the NameServer and the clients by a partition: clients route around it; healed, it is used again.

docs/fault-tests.md, in two variants of the same scenario:

- netns: broker-a runs inside a network namespace made by the test (rocketq.testing.netns: `ip netns`
  and a veth pair with a private /30 that exists only on this machine; the namespace holds nothing
  but its end of the pair and loopback). The NameServer listens on this side's address of the pair;
  broker-b and the clients are on this side. The partition takes the namespace's end of the pair
  down: nothing passes either way and every connection stays open. Skipped, with the reason, where
  the machine forbids namespaces (not root, no `ip`, EPERM in a container).
- proxy: where namespaces are not available (and always under ROCKETQ_SOAK=1) this variant gives the
  same coverage: broker-a binds
  127.0.0.1:P but advertises 127.0.0.2:P, where a FaultProxy relays to it, and it reaches the NameServer
  through a second FaultProxy; the partition blackholes both proxies (bytes vanish both ways,
  connections stay open).

The NameServer expires a silent broker after 14 s (brokerChannelExpiredTime), the brokers register every
10 s (registerNameServerPeriod's lower bound; the expiry must stay above it). The scenario: a steady stream of sends through an SDK Producer with retries and
send_latency_fault_enable (3 s penalty window, 500 ms route refresh), a PushConsumer of the topic; the
partition starts; sends keep succeeding on broker-b (only sends whose attempt hung on broker-a fail) and
the consumer keeps consuming broker-b's messages; the NameServer drops broker-a; the partition heals;
broker-a registers again, is in the route, acknowledges sends again, and every acknowledged message,
broker-a's included, is consumed. Figures are printed (`pytest -s`).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.client import Admin, ConsumeResult, MessageExt, Producer, PushConsumer
from rocketq.client.config import ConsumeFromWhere
from rocketq.testing.cluster import BrokerProcess, LocalCluster
from rocketq.testing.failover import (
    AVOIDING_PRODUCER,
    FAST_REGISTRATION,
    SHORT_EXPIRY_MS,
    acks_from,
    wait_for_acks_from,
    wait_route,
)
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.ledger import Ledger, check_body
from rocketq.testing.netns import VethNamespace, netns_problem
from rocketq.testing.ports import free_port
from rocketq.testing.proxy import FaultProxy
from rocketq.testing.send_stream import AttemptLog, SendStream
from rocketq.testing.waiting import wait_for

TOPIC = "Partition"
VICTIM, SURVIVOR = "broker-a", "broker-b"
EXPIRY_MS = SHORT_EXPIRY_MS
SCAN_MS = 500
NAMESRV_SETTINGS = {"brokerChannelExpiredTime": EXPIRY_MS, "scanNotActiveBrokerInterval": SCAN_MS}
STREAM = {"concurrency": 4, "pace_s": 0.002, "body_size": 200}
# The brokers register every 10 s (FAST_REGISTRATION); the first attempt after the heal may still go over
# the connection the NameServer closed during the partition (reset, or a 6 s timeout): two periods and more.
HEAL_BOUND_S = 30.0
SOAK = os.environ.get("ROCKETQ_SOAK", "") not in ("", "0")
NETNS_PROBLEM = netns_problem()


@dataclass
class Partition:
    """How the scenario cuts and heals broker-a off, and where clients find the NameServer."""

    namesrv_addr: str
    cut: Callable[[], None]
    heal: Callable[[], None]
    label: str


class Seqs:
    """A push listener collecting the sequence numbers of whole bodies, with when they came."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.corrupt = 0

    async def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        now = time.monotonic()
        for msg in msgs:
            checked = check_body(msg.body)
            if checked is None:
                self.corrupt += 1
            else:
                self.seen.setdefault(checked[0], now)
        return ConsumeResult.SUCCESS


async def scenario(partition: Partition) -> None:
    ns = partition.namesrv_addr
    async with Admin(namesrv_addr=ns, instance_name="partition-admin") as admin:
        assert len(await admin.create_topic(TOPIC, read_queues=4, write_queues=4)) == 2
    await wait_route(ns, TOPIC, {VICTIM, SURVIVOR}, timeout_s=15)
    seqs = Seqs()
    consumer = PushConsumer(
        "cg-partition", namesrv_addr=ns, instance_name="partition-consumer",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, poll_name_server_interval_ms=500,
        rebalance_interval_ms=1000, consumer_timeout_ms_when_suspend=5000, broker_suspend_max_time_ms=2000,
    )  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(seqs)
    await consumer.start()
    producer = Producer(
        "pg-partition", namesrv_addr=ns, instance_name="partition-producer", **AVOIDING_PRODUCER
    )
    await producer.start()
    ledger = Ledger()
    stream = SendStream(producer, TOPIC, ledger, **STREAM)  # type: ignore[arg-type]
    attempts = AttemptLog(producer)
    stream.start()
    try:
        for broker in (VICTIM, SURVIVOR):
            await wait_for_acks_from(stream, broker, 50, timeout_s=20)
        cut_at = time.monotonic()
        partition.cut()
        dropped_at = await wait_route(ns, TOPIC, {SURVIVOR}, timeout_s=EXPIRY_MS / 1000 + 12)
        await wait_for_acks_from(stream, SURVIVOR, 200, timeout_s=20)
        during = {a.seq for a in ledger.acks.values() if a.position[0] == SURVIVOR}
        await wait_for(
            lambda: during <= seqs.seen.keys(),
            timeout_s=20,
            what="broker-b's messages consumed during the partition",
        )
        healed_at = time.monotonic()
        attempts_during = attempts.count_to(VICTIM, since=cut_at, until=healed_at)
        last_attempt = attempts.last_to(VICTIM, since=cut_at)
        failures_during = sum(ledger.failed.values())
        partition.heal()
        back_in_route = await wait_route(ns, TOPIC, {VICTIM, SURVIVOR}, timeout_s=HEAL_BOUND_S)
        used_again = await wait_for_acks_from(stream, VICTIM, 10, timeout_s=15)
    finally:
        await stream.stop()
        attempts.close()
        await producer.shutdown()
    try:
        await wait_for(
            lambda: ledger.acks.keys() <= seqs.seen.keys(),
            timeout_s=30,
            what="every acknowledged message consumed",
        )
    finally:
        await consumer.shutdown()
    sent = ledger.acked_count + sum(ledger.failed.values())
    rate = ledger.acked_count / sent
    print(
        f"\npartition ({partition.label}) of {VICTIM}: {ledger.acked_count}/{sent} sends acknowledged ({rate * 100:.3f} %), "
        f"failures {dict(ledger.errors)}; {attempts_during} attempts at {VICTIM} during the partition, the last "
        f"{(last_attempt or cut_at) - cut_at:.2f}s after the cut; NameServer dropped it after {dropped_at - cut_at:.2f}s; "
        f"back in the route {back_in_route - healed_at:.2f}s after the heal, acknowledging "
        f"{used_again - healed_at:.2f}s after it; {acks_from(ledger, VICTIM)} acks from {VICTIM}, "
        f"{acks_from(ledger, SURVIVOR)} from {SURVIVOR}; consumed {len(seqs.seen)} distinct messages"
    )
    assert seqs.corrupt == 0
    assert failures_during <= attempts_during, "a send failed that was not stuck on the partitioned broker"
    assert sum(ledger.failed.values()) == failures_during, "sends failed after the partition healed"
    assert rate > 0.99
    assert dropped_at - cut_at <= (EXPIRY_MS + 2 * SCAN_MS) / 1000 + 1.0


@asynccontextmanager
async def _netns_broker(
    cluster: LocalCluster, veth: VethNamespace, work_dir: Path
) -> AsyncIterator[BrokerProcess]:
    """broker-a inside the namespace, registered with the cluster's NameServer over the veth pair."""
    broker = BrokerProcess(
        VICTIM,
        work_dir,
        cluster.namesrv_addr,
        {**FAST_REGISTRATION, "brokerIP1": veth.ns_ip},
        python=veth.python_wrapper(work_dir.parent),
    )
    cluster.brokers.insert(0, broker)  # stopped with the cluster, and before it leaves the namespace
    try:
        yield await broker.start()
    finally:
        await broker.stop()


@pytest.mark.timeout(150)
async def test_a_broker_partitioned_by_a_network_namespace_is_routed_around_and_used_again(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    if NETNS_PROBLEM is not None:
        pytest.skip(f"netns partition: {NETNS_PROBLEM} (the FaultProxy variant covers the same scenario)")
    veth = VethNamespace()
    try:
        veth.create()
        cluster = await cluster_factory(
            broker_count=0, namesrv_overrides={**NAMESRV_SETTINGS, "bindAddress": veth.host_ip}
        )
        assert cluster.namesrvs[0].host == veth.host_ip
        async with _netns_broker(cluster, veth, tmp_path / "netns-broker-a"):
            await cluster.add_broker(SURVIVOR, FAST_REGISTRATION)
            await scenario(
                Partition(cluster.namesrv_addr, veth.cut, veth.heal, f"netns {veth.name}, {veth.network}")
            )
    finally:
        leftovers = veth.close()
        assert leftovers == [], f"the namespace or the veth pair could not be removed: {leftovers}"


@pytest.mark.timeout(150)
async def test_a_broker_partitioned_by_fault_proxies_is_routed_around_and_used_again(
    cluster_factory: ClusterFactory,
) -> None:
    if NETNS_PROBLEM is None and not SOAK:
        pytest.skip(
            "the netns variant runs here; this FaultProxy variant runs where namespaces are forbidden, and in soak"
        )
    cluster = await cluster_factory(broker_count=0, namesrv_overrides=NAMESRV_SETTINGS)
    async with FaultProxy(cluster.namesrv_addr) as to_namesrv:
        port = free_port("127.0.0.1")
        # Clients learn 127.0.0.2:port from the route; the proxy there relays to the broker on 127.0.0.1:port.
        victim = BrokerProcess(
            VICTIM, cluster.tmp_dir / "proxied-broker-a", to_namesrv.addr,
            {**FAST_REGISTRATION, "brokerIP1": "127.0.0.2", "bindAddress": "127.0.0.1", "listenPort": port},
        )  # fmt: skip
        cluster.brokers.append(victim)
        await victim.start()
        async with FaultProxy(f"127.0.0.1:{port}", host="127.0.0.2", port=port) as to_broker:
            await cluster.add_broker(SURVIVOR, FAST_REGISTRATION)

            def cut() -> None:
                to_broker.set_blackhole(True)
                to_namesrv.set_blackhole(True)

            def heal() -> None:
                to_broker.heal()
                to_namesrv.heal()

            await scenario(Partition(cluster.namesrv_addr, cut, heal, "FaultProxy blackholes"))
            await victim.stop()
