"""NameServers with a real `rocketq broker`: registration with all of them, and every way out of the routes."""

from __future__ import annotations

from rocketq.common.constants import AUTO_CREATE_TOPIC_KEY_TOPIC
from rocketq.remoting.protocol.bodies.route import TopicRouteData
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.waiting import wait_for


async def _route(namesrv_addr: str, topic: str) -> TopicRouteData | None:
    async with NamesrvTestClient(namesrv_addr) as ns:
        return await ns.route(topic)


async def _wait_registered(cluster: LocalCluster, topic: str) -> list[TopicRouteData]:
    """The topic's route on every NameServer, once each has it."""
    routes = []
    for namesrv in cluster.namesrvs:

        async def registered(addr: str = namesrv.addr) -> TopicRouteData | None:
            return await _route(addr, topic)

        routes.append(await wait_for(registered, timeout_s=15, what=f"{topic} on {namesrv.addr}"))
    return routes


async def _wait_gone(cluster: LocalCluster, topic: str, timeout_s: float) -> None:
    for namesrv in cluster.namesrvs:

        async def gone(addr: str = namesrv.addr) -> bool:
            return await _route(addr, topic) is None

        await wait_for(gone, timeout_s=timeout_s, what=f"{topic} gone from {namesrv.addr}")


async def test_broker_registers_with_every_nameserver(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(namesrv_count=2, broker_count=1)
    broker = cluster.brokers[0]
    routes = await _wait_registered(cluster, broker.name)  # the broker-name topic
    assert routes[0] == routes[1]
    assert routes[0].broker_datas[0].broker_addrs == {0: broker.addr}
    tbw = await _route(cluster.namesrvs[0].addr, AUTO_CREATE_TOPIC_KEY_TOPIC)
    assert tbw is not None and tbw.queue_datas[0].perm & 0x1  # inheritable template


async def test_sigterm_unregisters_and_kill_drops_at_once(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=2)
    first, second = cluster.brokers
    await _wait_registered(cluster, first.name)
    await _wait_registered(cluster, second.name)
    assert await first.stop() == 0
    await _wait_gone(cluster, first.name, timeout_s=5)
    second.kill()  # the TCP connection closes with the process: no expiry needed
    await _wait_gone(cluster, second.name, timeout_s=5)


async def test_silent_broker_dropped_after_shortened_expiry(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(
        broker_count=1,
        namesrv_overrides={"brokerChannelExpiredTime": 2000, "scanNotActiveBrokerInterval": 250},
    )
    broker = cluster.brokers[0]
    await _wait_registered(cluster, broker.name)
    broker.pause()  # stopped, but its connection stays open: only the liveness scan can drop it
    await _wait_gone(cluster, broker.name, timeout_s=15)
    assert "The broker channel expired" in cluster.namesrvs[0].log_text()
