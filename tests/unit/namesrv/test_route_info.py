"""RouteInfoManager: registration, routes, removal rules and liveness, driven by a ManualClock."""

from __future__ import annotations

from rocketq.common.clock import ManualClock
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.remoting.protocol.bodies.register import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketq.remoting.protocol.bodies.route import QueueData

A0, A1, B0 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"


def wrapper(*topics: str, counter: int = 1, perm: int = 6, sys_flag: int = 0) -> TopicConfigSerializeWrapper:
    table = {t: TopicConfig(t, 4, 4, perm, topic_sys_flag=sys_flag) for t in topics}
    return TopicConfigSerializeWrapper(table, DataVersion(1000, counter))


def manager(expiry_ms: int = 120_000) -> tuple[RouteInfoManager, ManualClock]:
    clock = ManualClock()
    return RouteInfoManager(clock, broker_channel_expired_ms=expiry_ms), clock


def register(
    rim: RouteInfoManager, name: str, addr: str, broker_id: int = 0, conn: object = None, **kw: object
):  # type: ignore[no-untyped-def]
    w = kw.pop("w", None) or wrapper("T")
    return rim.register_broker("C", addr, name, broker_id, addr.replace("10911", "10912"), w, [], conn)  # type: ignore[arg-type]


def test_register_master_then_route() -> None:
    rim, _ = manager()
    assert register(rim, "broker-a", A0) == (None, None)
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("C", "broker-a", {0: A0})
    ]
    assert rim.pickup_topic_route_data("nope") is None


def test_route_is_a_copy() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0)
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    route.queue_datas[0].perm = 0
    route.broker_datas[0].broker_addrs.clear()
    again = rim.pickup_topic_route_data("T")
    assert again is not None and again.queue_datas[0].perm == 6 and again.broker_datas[0].broker_addrs


def test_slave_gets_master_and_ha_address_only_when_master_is_live() -> None:
    rim, _ = manager()
    assert register(rim, "broker-a", A1, broker_id=1) == (None, None)
    register(rim, "broker-a", A0)
    assert register(rim, "broker-a", A1, broker_id=1) == ("10.0.0.1:10912", A0)


def test_slave_topics_are_ignored() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A1, broker_id=1, w=wrapper("S"))
    assert rim.all_topics() == []


def test_topics_are_reread_only_on_a_new_data_version() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, w=wrapper("T", counter=1))
    register(rim, "broker-a", A0, w=wrapper("T", "U", counter=1))
    assert rim.all_topics() == ["T"]
    register(rim, "broker-a", A0, w=wrapper("U", counter=2))
    assert sorted(rim.all_topics()) == ["T", "U"]  # never deleted because absent


def test_slave_switching_to_master_keeps_one_id_per_address() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0)
    register(rim, "broker-a", A1, broker_id=1)
    rim.unregister_broker("C", A0, "broker-a", 0)
    register(rim, "broker-a", A1, broker_id=0)
    data = rim.brokers.get("broker-a")
    assert data is not None and data.broker_addrs == {0: A1}


def test_unregister_last_address_removes_name_cluster_and_topics() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, w=wrapper("T", "OnlyA"))
    register(rim, "broker-b", B0, w=wrapper("T"))
    rim.unregister_broker("C", A0, "broker-a", 0)
    assert sorted(rim.all_topics()) == ["T"]
    assert rim.cluster_info().cluster_addr_table == {"C": ["broker-b"]}
    route = rim.pickup_topic_route_data("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    rim.unregister_broker("C", B0, "broker-b", 0)
    assert rim.all_topics() == [] and rim.cluster_info().to_json() == {
        "brokerAddrTable": {},
        "clusterAddrTable": {},
    }


def test_dead_master_with_live_slave_stays_routable() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0)
    register(rim, "broker-a", A1, broker_id=1)
    rim.unregister_broker("C", A0, "broker-a", 0)
    route = rim.pickup_topic_route_data("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: A1}


def test_scan_expires_silent_brokers_only() -> None:
    rim, clock = manager(expiry_ms=30_000)
    conn_a, conn_b = object(), object()
    register(rim, "broker-a", A0, conn=conn_a)
    clock.advance(20_000)
    register(rim, "broker-b", B0, conn=conn_b)
    clock.advance(10_000)
    assert rim.scan_inactive_brokers() == []  # exactly at the expiry: still alive (Java uses <)
    clock.advance(1)
    expired = rim.scan_inactive_brokers()
    assert [(e.broker_addr, e.connection) for e in expired] == [(A0, conn_a)]
    assert rim.cluster_info().cluster_addr_table == {"C": ["broker-b"]}
    assert rim.scan_inactive_brokers(clock.monotonic_ms() + 60_000)[0].broker_addr == B0
    assert rim.pickup_topic_route_data("T") is None


def test_registration_refreshes_liveness() -> None:
    rim, clock = manager(expiry_ms=30_000)
    register(rim, "broker-a", A0)
    clock.advance(25_000)
    register(rim, "broker-a", A0)
    clock.advance(25_000)
    assert rim.scan_inactive_brokers() == []


def test_closed_connection_removes_its_broker_at_once() -> None:
    rim, _ = manager()
    conn = object()
    register(rim, "broker-a", A0, conn=conn)
    register(rim, "broker-b", B0, conn=object())
    assert rim.on_connection_closed("127.0.0.1:50000", object()) is None  # a client's connection
    assert rim.on_connection_closed("127.0.0.1:50001", conn) == A0
    assert rim.pickup_topic_route_data("T") is not None
    assert list(rim.cluster_info().broker_addr_table) == ["broker-b"]


def test_closed_connection_falls_back_to_remote_address() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, conn=None)
    assert rim.on_connection_closed(A0, object()) == A0
    assert rim.all_topics() == []


def test_query_data_version() -> None:
    rim, clock = manager(expiry_ms=30_000)
    register(rim, "broker-a", A0, w=wrapper("T", counter=5))
    assert rim.query_broker_topic_config(A0) == DataVersion(1000, 5)
    assert not rim.is_broker_topic_config_changed(A0, DataVersion(1000, 5))
    assert rim.is_broker_topic_config_changed(A0, DataVersion(1000, 6))
    assert rim.is_broker_topic_config_changed(B0, DataVersion(1000, 5))
    clock.advance(25_000)
    rim.update_broker_info_update_timestamp(A0)
    clock.advance(25_000)
    assert rim.scan_inactive_brokers() == []


def test_topic_lists() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, w=wrapper("T", "U1", sys_flag=0))
    rim.register_broker("D", B0, "broker-b", 0, "", wrapper("X", counter=1), None, None)
    rim.register_broker("D", B0, "broker-b", 0, "", wrapper("Unit", counter=2, sys_flag=1), None, None)
    rim.register_broker("D", B0, "broker-b", 0, "", wrapper("Sub", counter=3, sys_flag=2), None, None)
    rim.register_broker("D", B0, "broker-b", 0, "", wrapper("Both", counter=4, sys_flag=3), None, None)
    assert sorted(rim.topics_by_cluster("C")) == ["T", "U1"]
    assert sorted(rim.topics_by_cluster("D")) == ["Both", "Sub", "Unit", "X"]
    assert rim.topics_by_cluster("nope") == []
    assert sorted(rim.unit_topics()) == ["Both", "Unit"]
    assert sorted(rim.has_unit_sub_topics()) == ["Both", "Sub"]
    assert rim.has_unit_sub_ununit_topics() == ["Sub"]
    topics, addr = rim.system_topics()
    assert sorted(topics) == ["C", "D", "broker-a", "broker-b"] and addr in (A0, B0)


def test_delete_topic_everywhere_or_in_one_cluster() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, w=wrapper("T", "V"))
    rim.register_broker("D", B0, "broker-b", 0, "", wrapper("T"), None, None)
    rim.delete_topic("T", "D")
    route = rim.pickup_topic_route_data("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    rim.delete_topic("T", "C")
    assert rim.pickup_topic_route_data("T") is None
    rim.delete_topic("V")
    assert rim.all_topics() == []


def test_wipe_and_add_write_perm() -> None:
    rim, _ = manager()
    register(rim, "broker-a", A0, w=wrapper("T", "U", perm=7))
    assert rim.wipe_write_perm_of_broker("broker-a") == 2
    route = rim.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].perm == 5
    assert rim.add_write_perm_of_broker("broker-a") == 2
    route = rim.pickup_topic_route_data("U")
    assert route is not None and route.queue_datas[0].perm == 6
    assert rim.wipe_write_perm_of_broker("nope") == 0


def test_filter_servers_reach_the_route() -> None:
    rim, _ = manager()
    rim.register_broker("C", A0, "broker-a", 0, "", wrapper("T"), ["f:1"], None)
    route = rim.pickup_topic_route_data("T")
    assert route is not None and route.filter_server_table == {A0: ["f:1"]}
    rim.register_broker("C", A0, "broker-a", 0, "", wrapper("T"), [], None)
    route = rim.pickup_topic_route_data("T")
    assert route is not None and route.filter_server_table == {}
