"""NameServer bodies and headers: Java JSON shapes, both route dialects, both register-body forms."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    KVTable,
    RegisterBodyError,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
)
from rocketq.remoting.protocol.bodies.route import BrokerData, ClusterInfo, QueueData, TopicRouteData
from rocketq.remoting.protocol.errors import MissingHeaderFieldError
from rocketq.remoting.protocol.headers.namesrv import (
    GetRouteInfoRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
)

ROUTE = TopicRouteData(
    queue_datas=[QueueData("broker-a", 4, 4, 6, 0)],
    broker_datas=[
        BrokerData("DefaultCluster", "broker-a", {0: "192.168.0.20:10911", 1: "192.168.0.21:10911"})
    ],
)


def test_route_standard_dialect_matches_protocol_md_example() -> None:
    assert fastjson.dumps(ROUTE.to_json()) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.20:10911","1":"192.168.0.21:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_legacy_dialect_writes_bare_broker_ids_and_reads_back() -> None:
    raw = fastjson.dumps(ROUTE.to_json(), unquoted_int_keys=True)
    assert b'"brokerAddrs":{0:"192.168.0.20:10911",1:"192.168.0.21:10911"}' in raw
    assert TopicRouteData.from_json(fastjson.loads(raw)) == ROUTE


def test_route_order_topic_conf_only_when_set() -> None:
    assert "orderTopicConf" not in ROUTE.to_json()
    route = TopicRouteData(order_topic_conf="broker-a:4")
    assert route.to_json()["orderTopicConf"] == "broker-a:4"
    assert TopicRouteData.from_json(route.to_json()).order_topic_conf == "broker-a:4"


def test_queue_data_reads_the_pre_4_9_spelling() -> None:
    qd = QueueData.from_json({"brokerName": "b", "perm": 6, "readQueueNums": "2", "topicSynFlag": 3})
    assert qd == QueueData("b", 2, 0, 6, 3)


def test_from_json_is_lenient() -> None:
    assert TopicRouteData.from_json({"unknown": 1}) == TopicRouteData()
    assert TopicRouteData.from_json(None) == TopicRouteData()
    data = BrokerData.from_json({"brokerAddrs": {"x": "bad", "2": "b:1", 0: "a:1"}, "brokerName": "n"})
    assert data.broker_addrs == {0: "a:1", 2: "b:1"}
    assert data.select_broker_addr() == "a:1"


def test_cluster_info_round_trip_and_addresses() -> None:
    info = ClusterInfo(
        broker_addr_table={"broker-a": BrokerData("C", "broker-a", {0: "h:1", 1: "h:2"})},
        cluster_addr_table={"C": ["broker-a"]},
    )
    raw = fastjson.dumps(info.to_json(), unquoted_int_keys=True)
    assert b'{0:"h:1",1:"h:2"}' in raw
    assert ClusterInfo.from_json(fastjson.loads(raw)) == info
    assert info.all_addrs_by_cluster("C") == ["h:1", "h:2"]
    assert info.all_addrs_by_cluster("nope") == []


def test_topic_config_json_has_java_fields_and_defaults() -> None:
    tc = TopicConfig("T")
    assert tc.to_json() == {
        "order": False,
        "perm": 6,
        "readQueueNums": 16,
        "topicFilterType": "SINGLE_TAG",
        "topicName": "T",
        "topicSysFlag": 0,
        "writeQueueNums": 16,
    }
    assert (
        TopicConfig.from_json({"topicName": "T", "topicFilterType": 1}).topic_filter_type
        is TopicFilterType.MULTI_TAG
    )
    assert (
        TopicConfig.from_json({"topicName": "T", "topicFilterType": "bogus"}).topic_filter_type
        is TopicFilterType.SINGLE_TAG
    )


def test_topic_config_text_form() -> None:
    tc = TopicConfig("T", 4, 2, 6, TopicFilterType.MULTI_TAG, topic_sys_flag=1, order=True)
    assert tc.encode_text() == "T 4 2 6 MULTI_TAG"
    back = TopicConfig.decode_text(tc.encode_text())
    assert (back.read_queue_nums, back.write_queue_nums, back.topic_sys_flag, back.order) == (4, 2, 0, False)
    for bad in ("T 4 2 6", "T 4 x 6 SINGLE_TAG", "T 4 2 6 NOPE"):
        with pytest.raises(RegisterBodyError):
            TopicConfig.decode_text(bad)


def test_data_version_json_and_equality() -> None:
    dv = DataVersion(timestamp=1_700_000_000_000, counter=3)
    assert dv.encode() == b'{"counter":3,"timestamp":1700000000000}'
    assert DataVersion.decode(dv.encode()) == dv
    other = dv.copy()
    other.next_version(1_700_000_000_001)
    assert other != dv and other.counter == 4


def _body() -> RegisterBrokerBody:
    table = {
        "TopicTest": TopicConfig("TopicTest", 4, 4, 6),
        "TBW102": TopicConfig("TBW102", 8, 8, 7),
    }
    return RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(1_700_000_000_000, 3)))


def test_register_body_plain_json_shape() -> None:
    raw = _body().encode(compress=False)
    obj = fastjson.loads(raw)
    assert obj["filterServerList"] == []
    assert obj["topicConfigSerializeWrapper"]["dataVersion"] == {"counter": 3, "timestamp": 1_700_000_000_000}
    assert RegisterBrokerBody.decode(raw) == _body()


def test_register_body_compressed_layout() -> None:
    raw = zlib.decompress(_body().encode(compress=True))
    (dv_len,) = struct.unpack_from(">i", raw, 0)
    assert raw[4 : 4 + dv_len] == b'{"counter":3,"timestamp":1700000000000}'
    (count,) = struct.unpack_from(">i", raw, 4 + dv_len)
    assert count == 2
    assert raw.endswith(struct.pack(">i", 2) + b"[]")
    assert RegisterBrokerBody.decode(_body().encode(compress=True), compressed=True) == _body()


@pytest.mark.parametrize(
    "raw",
    [b"not zlib", zlib.compress(b"\x00\x00\x00\x05{}"), zlib.compress(b"\x00\x00\x00\x02{}\xff\xff\xff\xff")],
)
def test_register_body_compressed_garbage_is_a_clear_error(raw: bytes) -> None:
    with pytest.raises(RegisterBodyError):
        RegisterBrokerBody.decode(raw, compressed=True)


def test_register_body_plain_garbage_is_a_clear_error() -> None:
    with pytest.raises(RegisterBodyError):
        RegisterBrokerBody.decode(b"{oops", compressed=False)


names = st.text(alphabet="abcXYZ%_-019", min_size=1, max_size=20)


@given(
    st.dictionaries(
        names, st.tuples(st.integers(0, 1024), st.integers(0, 1024), st.integers(0, 15)), max_size=20
    ),
    st.integers(0, 2**62),
    st.integers(0, 2**40),
)
def test_register_body_forms_agree(topics: dict[str, tuple[int, int, int]], counter: int, ts: int) -> None:
    table = {n: TopicConfig(n, r, w, p) for n, (r, w, p) in topics.items()}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(ts, counter)))
    assert RegisterBrokerBody.decode(body.encode(True), True) == body
    assert RegisterBrokerBody.decode(body.encode(False), False) == body


def test_kv_table() -> None:
    assert fastjson.dumps(KVTable({"T": "broker-a:4"}).to_json()) == b'{"table":{"T":"broker-a:4"}}'
    assert KVTable.from_json({"table": {"a": 1}}).table == {"a": "1"}


def test_register_header_defaults_and_required_fields() -> None:
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "C", "haServerAddr": "h:2", "brokerId": "0"}
    header = RegisterBrokerRequestHeader.from_ext_fields(ext)
    assert (header.compressed, header.body_crc32, header.broker_id) == (False, 0, 0)
    assert header.to_ext_fields() == {**ext, "compressed": "false", "bodyCrc32": "0"}
    with pytest.raises(MissingHeaderFieldError, match="brokerAddr"):
        RegisterBrokerRequestHeader.from_ext_fields({k: v for k, v in ext.items() if k != "brokerAddr"})


def test_small_headers() -> None:
    assert GetRouteInfoRequestHeader.from_ext_fields({"topic": "T"}).accept_standard_json_only is None
    assert GetRouteInfoRequestHeader("T", True).to_ext_fields() == {
        "topic": "T",
        "acceptStandardJsonOnly": "true",
    }
    assert RegisterBrokerResponseHeader().to_ext_fields() == {}
    assert QueryDataVersionResponseHeader(True).to_ext_fields() == {"changed": "true"}
