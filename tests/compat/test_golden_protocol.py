"""Golden bytes of docs/protocol.md: frames (1.2, 1.5, 1.6) and JSON bodies (5.x) decode and re-encode exactly.

The frames live in data/frames/*.hex (hex dump, `#` comment lines), the bodies in data/bodies/: `.json`
files are standard JSON, `.fastjson` files use fastjson's non-standard map keys.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.admin import SubscriptionGroupConfig, TopicList
from rocketq.remoting.protocol.bodies.consumer import (
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ResetOffsetBody,
)
from rocketq.remoting.protocol.bodies.heartbeat import HeartbeatData
from rocketq.remoting.protocol.bodies.jsonfields import JsonBody
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.frame import FrameDecoder, encode_frame
from rocketq.remoting.protocol.headers.namesrv import GetRouteInfoRequestHeader
from rocketq.remoting.protocol.headers.offset import GetMaxOffsetResponseHeader

DATA = Path(__file__).parent / "data"


def _hex(name: str) -> bytes:
    lines = (DATA / "frames" / name).read_text().splitlines()
    return bytes.fromhex(" ".join(line for line in lines if not line.startswith("#")))


def _body(name: str) -> bytes:
    return (DATA / "bodies" / name).read_bytes()


def _decode_one(frame: bytes) -> list:
    whole = FrameDecoder().feed(frame)
    decoder = FrameDecoder()
    split = [cmd for i in range(len(frame)) for cmd in decoder.feed(frame[i : i + 1])]
    assert split == whole and decoder.buffered == 0
    return whole


def test_json_route_request_frame() -> None:
    frame = _hex("get_routeinfo_request_json.hex")
    assert frame[:8] == bytes.fromhex("00000087 00000083")
    (cmd,) = _decode_one(frame)
    assert cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and cmd.serialize_type == SerializeType.JSON
    assert (cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark) == (
        LanguageCode.JAVA,
        409,
        1,
        0,
        None,
    )
    assert cmd.header_length == 131 and cmd.body == b""
    assert GetRouteInfoRequestHeader.from_ext_fields(cmd.ext_fields).topic == "TopicTest"
    assert encode_frame(cmd) == frame


def test_binary_get_max_offset_response_frame() -> None:
    frame = _hex("get_max_offset_response_binary.hex")
    assert len(frame) == 43
    (cmd,) = _decode_one(frame)
    assert cmd.code == ResponseCode.SUCCESS and cmd.serialize_type == SerializeType.ROCKETMQ
    assert (cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark) == (
        LanguageCode.JAVA,
        409,
        1,
        1,
        None,
    )
    assert cmd.is_response and cmd.header_length == 35
    assert GetMaxOffsetResponseHeader.from_ext_fields(cmd.ext_fields).offset == 42
    assert encode_frame(cmd) == frame


def test_binary_response_built_from_typed_header_matches_golden() -> None:
    request = FrameDecoder().feed(_hex("get_routeinfo_request_json.hex"))[0]
    request.serialize_type = SerializeType.ROCKETMQ
    response = request.make_response(ext_fields=GetMaxOffsetResponseHeader(offset=42).to_ext_fields())
    response.language = LanguageCode.JAVA
    assert encode_frame(response) == _hex("get_max_offset_response_binary.hex")


BODY_CLASSES: dict[str, type[JsonBody]] = {
    "heartbeat_data.json": HeartbeatData,
    "lock_batch_request.json": LockBatchRequestBody,
    "lock_batch_response.json": LockBatchResponseBody,
    "consumer_list.json": GetConsumerListByGroupResponseBody,
    "subscription_group_config.json": SubscriptionGroupConfig,
    "reset_offset_body.fastjson": ResetOffsetBody,
    "topic_list.json": TopicList,
}


@pytest.mark.parametrize("name", sorted(BODY_CLASSES))
def test_typed_bodies_re_encode_byte_for_byte(name: str) -> None:
    raw = _body(name)
    body = BODY_CLASSES[name].decode(raw)
    assert body.encode() == raw


def test_reset_offset_body_keys_are_message_queues() -> None:
    body = ResetOffsetBody.decode(_body("reset_offset_body.fastjson"))
    assert body.offset_table == {MessageQueue("T", "broker-a", 0): 42}


@pytest.mark.parametrize(
    ("name", "unquoted"),
    [
        ("topic_route_standard.json", False),
        ("topic_route_legacy.fastjson", True),
        ("cluster_info.fastjson", True),
        ("consumer_offset_wrapper.fastjson", True),
    ],
)
def test_fastjson_dialects_re_encode_byte_for_byte(name: str, unquoted: bool) -> None:
    raw = _body(name)
    assert fastjson.dumps(fastjson.loads(raw), unquoted_int_keys=unquoted) == raw


def test_legacy_and_standard_routes_agree() -> None:
    legacy = fastjson.loads(_body("topic_route_legacy.fastjson"))
    standard = fastjson.loads(_body("topic_route_standard.json"))
    assert legacy["brokerDatas"][0]["brokerAddrs"] == {0: "192.168.0.20:10911", 1: "192.168.0.21:10911"}
    assert {str(k): v for k, v in legacy["brokerDatas"][0]["brokerAddrs"].items()} == standard["brokerDatas"][
        0
    ]["brokerAddrs"]


def test_register_body_sample_parses_and_round_trips() -> None:
    parsed = fastjson.loads(_body("register_broker_body.json"))
    table = parsed["topicConfigSerializeWrapper"]["topicConfigTable"]
    assert set(table) == {"TopicTest", "TBW102"} and table["TBW102"]["perm"] == 7
    assert fastjson.loads(fastjson.dumps(parsed)) == parsed


def test_offset_wrapper_inner_int_keys() -> None:
    parsed = fastjson.loads(_body("consumer_offset_wrapper.fastjson"))
    assert parsed == {"offsetTable": {"TopicTest@cg_demo": {0: 10, 1: 12}}}
