"""NameServer request handling without sockets: every code, dialects, remarks, bad input."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import pytest

from rocketq.common.clock import ManualClock
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.processors.base import NamesrvContext
from rocketq.namesrv.processors.registry import NamesrvRequestProcessor
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.namesrv import RegisterBrokerRequestHeader

RC = RequestCode
JAVA_NAMESRV_CODES = {
    100,
    101,
    102,
    103,
    104,
    105,
    106,
    205,
    206,
    216,
    219,
    224,
    304,
    311,
    312,
    313,
    318,
    319,
    322,
    327,
}


@dataclass
class FakePeer:
    remote_addr: str = "127.0.0.1:50000"
    attributes: dict[str, object] = field(default_factory=dict)


@pytest.fixture
def ns() -> tuple[NamesrvRequestProcessor, NamesrvContext]:
    config = NamesrvConfig()
    ctx = NamesrvContext(config, RouteInfoManager(ManualClock()), KVConfigManager(None))
    return NamesrvRequestProcessor(ctx), ctx


def call(
    proc: NamesrvRequestProcessor,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    version: int = 409,
    peer: FakePeer | None = None,
) -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body)
    request.version = version
    response = proc.handle(peer or FakePeer(), request)
    assert response is not None and response.is_response and response.opaque == request.opaque
    return response


def body_of(*topics: str, counter: int = 1) -> RegisterBrokerBody:
    table = {t: TopicConfig(t, 4, 4, 6) for t in topics}
    return RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(1000, counter)))


def reg_header(
    name: str = "broker-a", addr: str = "127.0.0.1:10911", broker_id: int = 0, **kw: object
) -> dict[str, str]:
    header = RegisterBrokerRequestHeader(
        name,
        addr,
        "DefaultCluster",
        addr.replace("10911", "10912"),
        broker_id,
        **kw,  # type: ignore[arg-type]
    )
    return header.to_ext_fields()


def register(
    proc: NamesrvRequestProcessor, *topics: str, compressed: bool = False, **kw: object
) -> RemotingCommand:
    raw = body_of(*topics or ("T",)).encode(compressed)
    ext = reg_header(compressed=compressed, body_crc32=zlib.crc32(raw) & 0x7FFFFFFF, **kw)  # type: ignore[arg-type]
    return call(proc, RC.REGISTER_BROKER, ext, raw, peer=kw.get("peer"))  # type: ignore[arg-type]


def test_every_java_code_has_one_handler(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    assert set(proc.codes) == JAVA_NAMESRV_CODES


def test_unknown_code_is_not_supported(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    response = call(proc, 99999)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 99999 not supported"


def test_oneway_is_never_answered(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, ctx = ns
    raw = body_of("T").encode()
    request = RemotingCommand.request(RC.REGISTER_BROKER, reg_header(), raw, oneway=True)
    assert proc.handle(FakePeer(), request) is None
    assert ctx.routes.all_topics() == ["T"]
    assert proc.handle(FakePeer(), RemotingCommand.request(12345, oneway=True)) is None


@pytest.mark.parametrize("compressed", [False, True])
def test_register_then_route_in_both_dialects(
    ns: tuple[NamesrvRequestProcessor, NamesrvContext], compressed: bool
) -> None:
    proc, _ = ns
    response = register(proc, "T", compressed=compressed)
    assert response.code == ResponseCode.SUCCESS and response.body == b""
    assert not response.ext_fields  # master: no masterAddr / haServerAddr
    old = call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=317)
    assert old.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old.body
    new = call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=401)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in new.body
    asked = call(
        proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T", "acceptStandardJsonOnly": "true"}, version=317
    )
    assert asked.body == new.body
    route = TopicRouteData.from_json(fastjson.loads(old.body))
    assert route == TopicRouteData.from_json(fastjson.loads(new.body))
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    assert route.queue_datas[0].write_queue_nums == 4


def test_topic_not_exist_remark(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    response = call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark == (
        "No topic route info in name server for the topic: Nope\n"
        "See http://rocketmq.apache.org/docs/faq/ for further details."
    )


def test_crc_mismatch(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, ctx = ns
    raw = body_of("T").encode()
    response = call(proc, RC.REGISTER_BROKER, reg_header(body_crc32=12345), raw)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert ctx.routes.all_topics() == []


def test_garbage_body_is_a_system_error(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    response = call(proc, RC.REGISTER_BROKER, reg_header(compressed=True), b"\x00garbage")
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None and "RegisterBrokerBody" in response.remark


def test_missing_header_field_is_named(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    ext = reg_header()
    del ext["brokerName"]
    response = call(proc, RC.REGISTER_BROKER, ext, body_of("T").encode())
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None and "brokerName" in response.remark
    bad = call(proc, RC.REGISTER_BROKER, {**reg_header(), "brokerId": "zero"}, b"")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "brokerId" in (bad.remark or "")


def test_empty_body_registers_the_broker_without_topics(
    ns: tuple[NamesrvRequestProcessor, NamesrvContext],
) -> None:
    proc, ctx = ns
    assert call(proc, RC.REGISTER_BROKER, reg_header(), b"").code == ResponseCode.SUCCESS
    assert ctx.routes.query_broker_topic_config("127.0.0.1:10911") == DataVersion(0, 0)


def test_ancient_broker_sends_a_bare_wrapper(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, ctx = ns
    raw = fastjson.dumps(body_of("Old").topic_config_serialize_wrapper.to_json())
    assert call(proc, RC.REGISTER_BROKER, reg_header(), raw, version=30).code == ResponseCode.SUCCESS
    assert ctx.routes.all_topics() == ["Old"]


def test_slave_is_told_its_master(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    register(proc, "T")
    response = register(proc, "T", addr="127.0.0.2:10911", broker_id=1)
    assert response.ext_fields == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}


def test_register_returns_order_topic_conf_namespace(
    ns: tuple[NamesrvRequestProcessor, NamesrvContext],
) -> None:
    proc, ctx = ns
    ctx.kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    response = register(proc, "T")
    assert fastjson.loads(response.body) == {"table": {"T": "broker-a:4"}}
    route = call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert b"orderTopicConf" not in route.body  # only with orderMessageEnable
    ctx.config.order_message_enable = True
    route = call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert TopicRouteData.from_json(fastjson.loads(route.body)).order_topic_conf == "broker-a:4"


def test_unregister_and_cluster_info(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    register(proc, "T")
    info = call(proc, RC.GET_BROKER_CLUSTER_INFO)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in info.body
    parsed = ClusterInfo.from_json(fastjson.loads(info.body))
    assert parsed.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    ext = {
        "brokerName": "broker-a",
        "brokerAddr": "127.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "brokerId": "0",
    }
    assert call(proc, RC.UNREGISTER_BROKER, ext).code == ResponseCode.SUCCESS
    assert call(proc, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.TOPIC_NOT_EXIST
    assert fastjson.loads(call(proc, RC.GET_BROKER_CLUSTER_INFO).body) == {
        "brokerAddrTable": {},
        "clusterAddrTable": {},
    }


def test_query_data_version(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    ext = {
        "brokerName": "broker-a",
        "brokerAddr": "127.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "brokerId": "0",
    }
    unknown = call(proc, RC.QUERY_DATA_VERSION, ext, DataVersion(1000, 1).encode())
    assert unknown.ext_fields == {"changed": "true"} and unknown.body == b""
    register(proc, "T")
    same = call(proc, RC.QUERY_DATA_VERSION, ext, DataVersion(1000, 1).encode())
    assert same.ext_fields == {"changed": "false"}
    assert DataVersion.decode(same.body) == DataVersion(1000, 1)
    newer = call(proc, RC.QUERY_DATA_VERSION, ext, DataVersion(1000, 2).encode())
    assert newer.ext_fields == {"changed": "true"}
    assert call(proc, RC.QUERY_DATA_VERSION, ext, b"{bad").code == ResponseCode.SYSTEM_ERROR


def test_kv_codes(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    key = {"namespace": "NS", "key": "k"}
    missing = call(proc, RC.GET_KV_CONFIG, key)
    assert (missing.code, missing.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "No config item, Namespace: NS Key: k",
    )
    assert call(proc, RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS"}).code == ResponseCode.QUERY_NOT_FOUND
    assert call(proc, RC.PUT_KV_CONFIG, {**key, "value": "v"}).code == ResponseCode.SUCCESS
    assert call(proc, RC.GET_KV_CONFIG, key).ext_fields == {"value": "v"}
    assert fastjson.loads(call(proc, RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS"}).body) == {
        "table": {"k": "v"}
    }
    assert call(proc, RC.DELETE_KV_CONFIG, key).code == ResponseCode.SUCCESS
    assert call(proc, RC.GET_KV_CONFIG, key).code == ResponseCode.QUERY_NOT_FOUND
    no_value = call(proc, RC.PUT_KV_CONFIG, key)
    assert no_value.code == ResponseCode.SYSTEM_ERROR and "value" in (no_value.remark or "")


def test_topic_lists_and_delete(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns
    register(proc, "T", "U")
    assert fastjson.loads(call(proc, RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body) == {"topicList": ["T", "U"]}
    by_cluster = call(proc, RC.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
    assert fastjson.loads(by_cluster.body) == {"topicList": ["T", "U"]}
    system = fastjson.loads(call(proc, RC.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert system == {"topicList": ["DefaultCluster", "broker-a"], "brokerAddr": "127.0.0.1:10911"}
    for code in (
        RC.GET_UNIT_TOPIC_LIST,
        RC.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        assert fastjson.loads(call(proc, code).body) == {"topicList": []}
    assert call(proc, RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}).code == ResponseCode.SUCCESS
    assert fastjson.loads(call(proc, RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body) == {"topicList": ["U"]}
    call(proc, RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "U", "clusterName": "Other"})
    assert fastjson.loads(call(proc, RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body) == {"topicList": ["U"]}


def test_write_perm_codes(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, ctx = ns
    register(proc, "T", "U")
    assert call(proc, RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}).ext_fields == {
        "wipeTopicCount": "2"
    }
    route = ctx.routes.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].perm == 4
    assert call(proc, RC.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}).ext_fields == {
        "addTopicCount": "2"
    }


def test_namesrv_config_codes(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, ctx = ns
    text = call(proc, RC.GET_NAMESRV_CONFIG).body.decode()
    assert "listenPort=9876\n" in text and "orderMessageEnable=false\n" in text
    ok = call(
        proc, RC.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\nbrokerChannelExpiredTime=5000\n"
    )
    assert ok.code == ResponseCode.SUCCESS
    assert ctx.config.order_message_enable and ctx.routes.broker_channel_expired_ms == 5000
    black = call(proc, RC.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/tmp/x\n")
    assert (black.code, black.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    unknown = call(proc, RC.UPDATE_NAMESRV_CONFIG, body=b"noSuchKey=1\n")
    assert unknown.code == ResponseCode.SYSTEM_ERROR and "noSuchKey" in (unknown.remark or "")
    bad = call(proc, RC.UPDATE_NAMESRV_CONFIG, body=b"brokerChannelExpiredTime=soon\n")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "brokerChannelExpiredTime" in (bad.remark or "")
    assert ctx.routes.broker_channel_expired_ms == 5000


def test_handler_crash_is_a_system_error(ns: tuple[NamesrvRequestProcessor, NamesrvContext]) -> None:
    proc, _ = ns

    def boom(peer: object, request: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("kaboom")

    proc.table[RC.GET_BROKER_CLUSTER_INFO] = boom
    response = call(proc, RC.GET_BROKER_CLUSTER_INFO)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "RuntimeError: kaboom")


def test_every_spelling_of_a_black_listed_namesrv_key_is_refused(
    ns: tuple[NamesrvRequestProcessor, NamesrvContext],
) -> None:
    proc, ctx = ns
    before = ctx.config.model_dump()
    known = NamesrvConfig.known_keys()
    black = {known.get(k, k) for k in ctx.config.black_listed_keys()}
    spellings = [s for s, field in known.items() if field in black]
    assert len(spellings) >= 3 * len(black) - 2
    for spelling in spellings:
        resp = call(proc, RC.UPDATE_NAMESRV_CONFIG, body=f"{spelling}=/tmp/elsewhere\n".encode())
        assert resp.code == ResponseCode.NO_PERMISSION, spelling
    assert ctx.config.model_dump() == before
