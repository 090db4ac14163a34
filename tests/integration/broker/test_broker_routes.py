"""`rocketq broker` with `rocketq namesrv` as subprocesses: registration, routes, topic creation, liveness."""

from __future__ import annotations

from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.admin import DeleteTopicRequestHeader
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.waiting import wait_for


async def test_brokers_register_with_every_namesrv_and_topics_appear_at_once(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await cluster_factory(namesrv_count=2, broker_count=2, broker_overrides=SMALL_STORE)
    a, b = cluster.brokers
    for ns in cluster.namesrvs:
        async with NamesrvTestClient(ns.addr) as client:
            info = await client.cluster_info()
            assert sorted(info.cluster_addr_table["DefaultCluster"]) == ["broker-a", "broker-b"]
            route = await client.route("TBW102")  # autoCreateTopicEnable: the template is routed
            assert route is not None
            assert {bd.broker_name: bd.broker_addrs for bd in route.broker_datas} == {
                "broker-a": {0: a.addr},
                "broker-b": {0: b.addr},
            }
            assert all(q.perm == 7 and q.write_queue_nums == 8 for q in route.queue_datas)
    async with BrokerTestClient(a.addr) as broker:
        created = await broker.create_topic("Orders", queues=3)
        assert created.code == ResponseCode.SUCCESS, created.remark
        # UPDATE_AND_CREATE_TOPIC registers before it answers: the route is there at once, on both NameServers
        for ns in cluster.namesrvs:
            async with NamesrvTestClient(ns.addr) as client:
                route = await client.route("Orders")
                assert route is not None
                assert [(q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas] == [
                    ("broker-a", 3, 6)
                ]
        refused = await broker.create_topic("SCHEDULE_TOPIC_XXXX")
        assert refused.code == ResponseCode.SYSTEM_ERROR and "system topic" in (refused.remark or "")
        deleted = await broker.call(
            RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="Orders")
        )
        assert deleted.code == ResponseCode.SUCCESS


async def test_send_to_a_new_topic_creates_it_and_reregisters(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    async with (
        BrokerTestClient(cluster.brokers[0].addr) as broker,
        NamesrvTestClient(cluster.namesrv_addr) as ns,
    ):
        assert await ns.route("Fresh") is None
        sent = await broker.send("Fresh", b"x", queue_id=-1)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        route = await wait_for(lambda: ns.route("Fresh"), what="the auto-created topic's route")
        assert route.queue_datas[0].write_queue_nums == 4  # min(client's 4, TBW102's 8)


async def test_a_killed_broker_is_dropped_and_a_stopped_one_unregisters(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await cluster_factory(broker_count=2, broker_overrides=SMALL_STORE)
    a, b = cluster.brokers
    async with NamesrvTestClient(cluster.namesrv_addr) as ns:
        assert await _brokers_in_route(ns) == {"broker-a", "broker-b"}
        a.kill()  # its connection closes: the NameServer drops it at once
        await wait_for(
            lambda: _equals(_brokers_in_route(ns), {"broker-b"}), timeout_s=10, what="broker-a dropped"
        )
        assert await b.stop() == 0  # SIGTERM: a clean shutdown exits 0 and unregisters
        await wait_for(
            lambda: _equals(_brokers_in_route(ns), set()), timeout_s=10, what="broker-b unregistered"
        )
        assert "unregistered from NameServer" in b.log_text()


async def test_a_hung_broker_expires_after_the_shortened_expiry(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(
        broker_overrides=SMALL_STORE,
        namesrv_overrides={"brokerChannelExpiredTime": 1500, "scanNotActiveBrokerInterval": 200},
    )
    broker = cluster.brokers[0]
    async with NamesrvTestClient(cluster.namesrv_addr) as ns:
        assert await _brokers_in_route(ns) == {"broker-a"}
        broker.pause()  # SIGSTOP: the connection stays open, registrations stop
        try:
            await wait_for(
                lambda: _equals(_brokers_in_route(ns), set()), timeout_s=10, what="broker-a expired"
            )
        finally:
            broker.resume()
        assert "expired" in cluster.namesrvs[0].log_text()


async def _brokers_in_route(ns: NamesrvTestClient) -> set[str]:
    route = await ns.route("TBW102")
    return {bd.broker_name for bd in route.broker_datas} if route else set()


async def _equals(value: object, expected: object) -> bool:
    return (await value) == expected  # type: ignore[misc]
