"""fastjson dialect: unquoted int keys, object keys, lenient input, errors (docs/protocol.md 5, 8.7)."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.fastjson import ObjectKey, dumps, loads, object_key_items
from rocketq.remoting.protocol.errors import BodyDecodeError

ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.20:10911","1":"192.168.0.21:10911"},'
    b'"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_LEGACY = ROUTE_STANDARD.replace(b'"0":', b"0:").replace(b'"1":', b"1:")
CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.20:10911"},'
    b'"brokerName":"broker-a","cluster":"DefaultCluster"}},'
    b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)


def _route_obj(int_keys: bool) -> dict[str, object]:
    addrs: dict[object, str] = {0: "192.168.0.20:10911", 1: "192.168.0.21:10911"}
    if not int_keys:
        addrs = {str(k): v for k, v in addrs.items()}
    return {
        "brokerDatas": [{"brokerAddrs": addrs, "brokerName": "broker-a", "cluster": "DefaultCluster"}],
        "filterServerTable": {},
        "queueDatas": [
            {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
        ],
    }


def test_route_standard_dialect_round_trips_byte_for_byte() -> None:
    assert loads(ROUTE_STANDARD) == _route_obj(int_keys=False)
    assert dumps(_route_obj(int_keys=True)) == ROUTE_STANDARD
    assert dumps(loads(ROUTE_STANDARD)) == ROUTE_STANDARD


def test_route_legacy_dialect_unquoted_int_keys() -> None:
    parsed = loads(ROUTE_LEGACY)
    assert parsed == _route_obj(int_keys=True)
    assert list(parsed["brokerDatas"][0]["brokerAddrs"]) == [0, 1]
    assert dumps(parsed, unquoted_int_keys=True) == ROUTE_LEGACY
    assert dumps(_route_obj(int_keys=True), unquoted_int_keys=True) == ROUTE_LEGACY


def test_cluster_info_sample() -> None:
    parsed = loads(CLUSTER_INFO)
    assert parsed["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: "192.168.0.20:10911"}
    assert dumps(parsed, unquoted_int_keys=True) == CLUSTER_INFO


def test_keys_sorted_and_compact() -> None:
    assert (
        dumps({"b": 1, "a": [1, 2], "c": {"z": None, "y": True}})
        == b'{"a":[1,2],"b":1,"c":{"y":true,"z":null}}'
    )
    assert dumps({"a": 1}, unquoted_int_keys=True) == b'{"a":1}'


def test_non_ascii_raw_by_default_escaped_when_asked() -> None:
    assert dumps({"t": "é"}) == '{"t":"é"}'.encode()
    assert dumps({"t": "é"}, ensure_ascii=True) == b'{"t":"\\u00e9"}'
    assert dumps({0: "é"}, unquoted_int_keys=True, ensure_ascii=True) == b'{0:"\\u00e9"}'


def test_object_keys_round_trip() -> None:
    table = {MessageQueue("T", "broker-a", 1): 43, MessageQueue("T", "broker-a", 0): 42}
    text = dumps({"offsetTable": table})
    assert text == (
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:42,'
        b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:43}}'
    )
    parsed = loads(text)
    keys = list(parsed["offsetTable"])
    assert all(isinstance(k, ObjectKey) for k in keys)
    assert {MessageQueue.from_json(k): v for k, v in object_key_items(parsed["offsetTable"])} == table
    assert dumps(parsed) == text  # ObjectKey keys are written back as objects


def test_object_key_is_frozen_hashable_and_order_insensitive() -> None:
    a = loads(b'{{"topic":"T","queueId":0,"x":[1,{"y":2}]}:1}')
    b = loads(b'{{"x":[1,{"y":2}],"queueId":0,"topic":"T"}:1}')
    assert a == b
    (key,) = a
    assert hash(key) == hash(next(iter(b)))
    assert key["x"] == (1, ObjectKey({"y": 2}))
    assert key.to_dict() == {"topic": "T", "queueId": 0, "x": [1, {"y": 2}]}
    assert key == {"topic": "T", "queueId": 0, "x": [1, {"y": 2}]}
    assert "ObjectKey" in repr(key)


def test_object_key_items_accepts_every_writer_form() -> None:
    mq = {"brokerName": "b", "queueId": 3, "topic": "T"}
    as_text = {json.dumps(mq): 7}
    as_pairs = [[mq, 7]]
    for form in (loads(b'{{"brokerName":"b","queueId":3,"topic":"T"}:7}'), as_text, as_pairs):
        ((key, value),) = object_key_items(form)
        assert MessageQueue.from_json(key) == MessageQueue("T", "b", 3)
        assert value == 7
    assert object_key_items(None) == []
    for bad in ({"nope": 1}, {"[1]": 1}, {5: 1}, [[1, 2]], "x"):
        with pytest.raises(BodyDecodeError):
            object_key_items(bad, "offsetTable")


def test_lenient_input_forms() -> None:
    text = b"""{0:"a", -2: 3, 1.5: 4, abc: [1,,2,], 'q\\'"x': null, , "t": true, "f": false,}"""
    assert loads(text) == {0: "a", -2: 3, 1.5: 4, "abc": [1, 2], "q'\"x": None, "t": True, "f": False}
    assert loads(b" [ {1:2} , [ ] , {} , -0.5e2 , 'x' ] ") == [{1: 2}, [], {}, -50.0, "x"]
    assert loads(b'{[1,2]:"arr"}') == {(1, 2): "arr"}
    assert loads('{"k":"v"}') == {"k": "v"}
    assert loads(memoryview(b"[1]")) == [1]
    assert loads(b'{"s":"a\\u0001b\\u0002c"}') == {"s": "a\x01b\x02c"}


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"  ",
        b"{",
        b"[1 2]",
        b"{a 1}",
        b"{{:1}",
        b"nul",
        b"-",
        b'{"a":1} x',
        b"{0:1} x",
        b"'abc",
        b"\xff\xfe",
        b'{"a":"\xc3"}',
        b"[" * 50000,
        b"{0:" * 50000,
        b"{0:1 2}",
        b"{:1}",
        b'{0:"x',
        b"[1,",
    ],
)
def test_bad_input_raises_only_body_decode_error(bad: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        loads(bad)


def test_body_decode_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        loads(b"{x")


class _Color(enum.Enum):
    RED = 1


class _Kind(enum.StrEnum):
    CLUSTERING = "CLUSTERING"


class _Bean:
    def to_json(self) -> dict[str, object]:
        return {"z": 1, "a": _Color.RED}


def test_values_enums_sets_bytes_and_beans() -> None:
    obj = {"bean": _Bean(), "kind": _Kind.CLUSTERING, "set": {3, 1, 2}, "raw": b"\x00\x01", "f": 1.5}
    expected = b'{"bean":{"a":"RED","z":1},"f":1.5,"kind":"CLUSTERING","raw":"AAE=","set":[1,2,3]}'
    assert dumps(obj) == expected
    assert dumps(obj, unquoted_int_keys=True) == expected
    assert dumps({_Color.RED: 1, _Kind.CLUSTERING: 2, True: 3, None: 4}, unquoted_int_keys=True) == (
        b'{"RED":1,"CLUSTERING":2,"true":3,"null":4}'
    )
    assert dumps([float("nan"), (1, 2), frozenset({"a"})], unquoted_int_keys=True) == b'[null,[1,2],["a"]]'
    assert dumps({1.5: "x", 2: "y"}, unquoted_int_keys=True) == b'{1.5:"x",2:"y"}'
    assert dumps({1.5: "x"}, unquoted_int_keys=False) == b'{"1.5":"x"}'


def test_mixed_key_types_fall_back_without_sorting() -> None:
    assert dumps({"b": 1, 0: 2}) == b'{"b":1,"0":2}'
    assert loads(dumps({"b": 1, 0: 2}, unquoted_int_keys=True)) == {"b": 1, 0: 2}


def test_unserializable_raises_type_error() -> None:
    with pytest.raises(TypeError):
        dumps({"x": object()})
    with pytest.raises(TypeError):
        dumps({object(): 1})


_keys = st.one_of(st.text(max_size=8), st.integers(-(2**63), 2**63 - 1))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=10))
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=20,
)


def _normalise_quoted(obj: object) -> object:
    if isinstance(obj, dict):
        return {str(k): _normalise_quoted(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_normalise_quoted(v) for v in obj]
    return obj


@settings(max_examples=150, deadline=None)
@given(_json)
def test_round_trip_both_dialects(obj: object) -> None:
    # unquoted dialect keeps int keys as ints; the standard dialect turns them into strings, like JSON.
    assert loads(dumps(obj, unquoted_int_keys=True)) == obj
    assert loads(dumps(obj)) == _normalise_quoted(obj)
