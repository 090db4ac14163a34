"""`rocketq namesrv` as a subprocess: registration, routes in both JSON dialects, cluster info, removal."""

from __future__ import annotations

from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.namesrv import GetRouteInfoRequestHeader
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.waiting import wait_for

BROKER_A = "127.0.0.1:20911"
BROKER_A_SLAVE = "127.0.0.1:20921"


async def test_register_plain_then_route_in_both_dialects(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    async with (
        NamesrvTestClient(cluster.namesrv_addr) as broker,
        NamesrvTestClient(cluster.namesrv_addr) as client,
    ):
        response = await broker.register_broker("broker-a", BROKER_A, ["TopicTest"])
        assert response.code == ResponseCode.SUCCESS, response.remark

        standard = await client.call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("TopicTest"), version=409
        )
        assert standard.code == ResponseCode.SUCCESS
        assert f'"brokerAddrs":{{"0":"{BROKER_A}"}}'.encode() in standard.body

        legacy = await client.call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("TopicTest"), version=317
        )
        assert f'"brokerAddrs":{{0:"{BROKER_A}"}}'.encode() in legacy.body
        route = TopicRouteData.from_json(fastjson.loads(legacy.body))
        assert route == TopicRouteData.from_json(fastjson.loads(standard.body))
        assert [
            (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas
        ] == [("broker-a", 4, 4, 6)]
        assert route.broker_datas[0].broker_addrs == {0: BROKER_A}


async def test_register_compressed_with_slave(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    async with (
        NamesrvTestClient(cluster.namesrv_addr) as master,
        NamesrvTestClient(cluster.namesrv_addr) as slave,
    ):
        first = await master.register_broker("broker-a", BROKER_A, ["T1", "T2"], compressed=True)
        assert first.code == ResponseCode.SUCCESS, first.remark
        answer = await slave.register_broker("broker-a", BROKER_A_SLAVE, ["T1"], broker_id=1, compressed=True)
        assert answer.ext_fields == {"haServerAddr": BROKER_A, "masterAddr": BROKER_A}
        route = await master.route("T2")
        assert route is not None and route.broker_datas[0].broker_addrs == {0: BROKER_A, 1: BROKER_A_SLAVE}


async def test_topic_not_exist_cluster_info_and_unregister(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    async with NamesrvTestClient(cluster.namesrv_addr) as ns:
        missing = await ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("Nope"))
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        assert missing.remark is not None
        assert missing.remark.startswith("No topic route info in name server for the topic: Nope")

        await ns.register_broker("broker-a", BROKER_A, ["T"], cluster="C1")
        await ns.register_broker("broker-b", "127.0.0.1:20931", ["T"], cluster="C1")
        raw = await ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)
        assert f'{{0:"{BROKER_A}"}}'.encode() in raw.body  # the legacy dialect, always
        info = ClusterInfo.from_json(fastjson.loads(raw.body))
        assert info.cluster_addr_table == {"C1": ["broker-a", "broker-b"]}

        assert (await ns.unregister_broker("broker-a", BROKER_A, cluster="C1")).code == ResponseCode.SUCCESS
        route = await ns.route("T")
        assert route is not None and [b.broker_name for b in route.broker_datas] == ["broker-b"]
        await ns.unregister_broker("broker-b", "127.0.0.1:20931", cluster="C1")
        assert await ns.route("T") is None
        assert (await ns.cluster_info()).cluster_addr_table == {}


async def test_broker_removed_when_its_connection_closes(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    async with NamesrvTestClient(cluster.namesrv_addr) as client:
        broker = NamesrvTestClient(cluster.namesrv_addr)
        try:
            await broker.register_broker("broker-a", BROKER_A, ["T"])
            assert await client.route("T") is not None
        finally:
            await broker.close()
        await wait_for(lambda: _route_gone(client, "T"), timeout_s=5, what="route of T removed after close")
        assert (await client.cluster_info()).broker_addr_table == {}


async def _route_gone(client: NamesrvTestClient, topic: str) -> bool:
    return await client.route(topic) is None


async def test_silent_broker_expires_by_the_scan(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(
        broker_count=0,
        namesrv_overrides={"brokerChannelExpiredTime": 1500, "scanNotActiveBrokerInterval": 200},
    )
    async with (
        NamesrvTestClient(cluster.namesrv_addr) as broker,
        NamesrvTestClient(cluster.namesrv_addr) as client,
    ):
        await broker.register_broker("broker-a", BROKER_A, ["T"])  # then silent, connection kept open
        assert await client.route("T") is not None
        await wait_for(lambda: _route_gone(client, "T"), timeout_s=10, what="expiry of the silent broker")
        # the NameServer closes the expired broker's connection, as Java does
        await wait_for(
            lambda: not broker.remoting.is_connected(cluster.namesrv_addr), timeout_s=5, what="closed"
        )


async def test_two_nameservers_hold_the_same_routes(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(namesrv_count=2, broker_count=0)
    assert len(cluster.namesrv_addr.split(";")) == 2
    routes = []
    for namesrv in cluster.namesrvs:
        async with NamesrvTestClient(namesrv.addr) as broker:
            await broker.register_broker("broker-a", BROKER_A, ["T"])
            routes.append(await broker.route("T"))
    assert routes[0] is not None and routes[0] == routes[1]
