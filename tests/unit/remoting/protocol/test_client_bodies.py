"""Heartbeat and consumer bodies: Java's samples (docs/protocol.md 5), lenient reading, fastjson object keys."""

from __future__ import annotations

import json

import pytest

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.consumer import (
    ConsumerRunningInfo,
    ConsumeStatus,
    GetConsumerListByGroupResponseBody,
    GetConsumerStatusBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ProcessQueueInfo,
    ResetOffsetBody,
    UnlockBatchRequestBody,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    ExpressionType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.jsonfields import (
    as_bool,
    as_enum,
    as_float,
    as_int,
    as_str,
    mq_from_json,
)
from rocketq.remoting.protocol.errors import BodyDecodeError

HEARTBEAT = (
    b'{"clientID":"192.168.0.10@12345#86723716312",'
    b'"consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
    b'"consumeType":"CONSUME_PASSIVELY","groupName":"cg_demo","messageModel":"CLUSTERING",'
    b'"subscriptionDataSet":['
    b'{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
    b'"subVersion":1700000000001,"tagsSet":[],"topic":"%RETRY%cg_demo"},'
    b'{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG",'
    b'"subString":"TagA || TagB","subVersion":1700000000000,"tagsSet":["TagA","TagB"],'
    b'"topic":"TopicTest"}],'
    b'"unitMode":false}],'
    b'"producerDataSet":[{"groupName":"pg_demo"},{"groupName":"CLIENT_INNER_PRODUCER"}]}'
)


def test_heartbeat_sample_decodes_and_re_encodes_byte_for_byte() -> None:
    hb = HeartbeatData.decode(HEARTBEAT)
    assert hb.client_id == "192.168.0.10@12345#86723716312"
    assert [p.group_name for p in hb.producer_data_set] == ["pg_demo", "CLIENT_INNER_PRODUCER"]
    (consumer,) = hb.consumer_data_set
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model is MessageModel.CLUSTERING
    assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    sub = next(s for s in consumer.subscription_data_set if s.topic == "TopicTest")
    assert sub.tags_set == {"TagA", "TagB"} and sub.code_set == {2598919, 2598920}
    assert sub.sub_version == 1700000000000
    assert hb.encode() == HEARTBEAT


def test_heartbeat_lenient_cpp_style_enums_as_ordinals_and_missing_sets() -> None:
    body = json.dumps(
        {
            "clientID": "c",
            "consumerDataSet": [
                {
                    "groupName": "g",
                    "consumeType": 0,
                    "messageModel": 0,
                    "consumeFromWhere": 4,
                    "subscriptionDataSet": [{"topic": "T"}],
                    "unitMode": "true",
                }
            ],
            "extra": {"ignored": 1},
        }
    ).encode()
    hb = HeartbeatData.decode(body)
    assert hb.producer_data_set == []
    (consumer,) = hb.consumer_data_set
    assert consumer.consume_type is ConsumeType.CONSUME_ACTIVELY
    assert consumer.message_model is MessageModel.BROADCASTING
    assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert consumer.unit_mode is True
    (sub,) = consumer.subscription_data_set
    assert (sub.sub_string, sub.tags_set, sub.code_set, sub.expression_type) == ("*", set(), set(), "TAG")


def test_consumer_data_defaults_when_enums_are_garbage_or_missing() -> None:
    data = ConsumerData.from_json({"groupName": "g", "consumeType": 9, "messageModel": "nope"})
    assert data.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert data.message_model is MessageModel.CLUSTERING
    assert data.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    assert (
        ConsumerData.from_json({"consumeType": "consume_actively"}).consume_type
        is ConsumeType.CONSUME_ACTIVELY
    )


def test_heartbeat_body_must_be_an_object() -> None:
    for bad in (b"[]", b"42", b"{", b"\xff"):
        with pytest.raises(BodyDecodeError):
            HeartbeatData.decode(bad)


def test_heartbeat_round_trip() -> None:
    hb = HeartbeatData(
        client_id="127.0.0.1@1#2",
        producer_data_set=[ProducerData("pg")],
        consumer_data_set=[
            ConsumerData(
                group_name="cg",
                consume_type=ConsumeType.CONSUME_ACTIVELY,
                message_model=MessageModel.BROADCASTING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
                subscription_data_set=[
                    SubscriptionData("T", "a > 1", expression_type=ExpressionType.SQL92, sub_version=5)
                ],
                unit_mode=True,
            )
        ],
    )
    assert HeartbeatData.decode(hb.encode()) == hb


def test_expression_type_helper() -> None:
    assert (
        ExpressionType.is_tag_type(None)
        and ExpressionType.is_tag_type("")
        and ExpressionType.is_tag_type("TAG")
    )
    assert not ExpressionType.is_tag_type("SQL92")


def test_check_client_body() -> None:
    body = CheckClientRequestBody("c", "g", SubscriptionData("T", "a > 1", expression_type="SQL92"))
    assert CheckClientRequestBody.decode(body.encode()) == body
    assert CheckClientRequestBody.decode(b'{"clientId":"c","group":"g"}').subscription_data is None


def test_lock_bodies_match_protocol_samples() -> None:
    request = b'{"clientId":"192.168.0.10@12345#1700000000000","consumerGroup":"cg_demo","mqSet":[{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}]}'
    body = LockBatchRequestBody.decode(request)
    assert body.mq_set == [MessageQueue("TopicTest", "broker-a", 0)]
    assert body.encode() == request
    unlock = UnlockBatchRequestBody.decode(request)
    assert isinstance(unlock, UnlockBatchRequestBody) and unlock.encode() == request
    response = b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}]}'
    assert LockBatchResponseBody.decode(response).encode() == response
    dup = LockBatchResponseBody.decode(
        b'{"lockOKMQSet":[{"brokerName":"b","queueId":1,"topic":"T"},{"topic":"T","queueId":"1","brokerName":"b"},5]}'
    )
    assert dup.lock_ok_mq_set == [MessageQueue("T", "b", 1)]


def test_consumer_list_body() -> None:
    raw = b'{"consumerIdList":["192.168.0.10@12345#86723716312"]}'
    assert GetConsumerListByGroupResponseBody.decode(raw).consumer_id_list == [
        "192.168.0.10@12345#86723716312"
    ]
    assert GetConsumerListByGroupResponseBody.decode(raw).encode() == raw
    assert GetConsumerListByGroupResponseBody.decode(b"{}").consumer_id_list == []


def test_reset_offset_body_object_keys() -> None:
    raw = b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:42}}'
    body = ResetOffsetBody.decode(raw)
    assert body.offset_table == {MessageQueue("T", "broker-a", 0): 42}
    assert body.encode() == raw
    # writers that stringify keys (JSON text, or Java's MessageQueue.toString) are read too
    as_text = json.dumps(
        {"offsetTable": {json.dumps({"brokerName": "broker-a", "queueId": 0, "topic": "T"}): 42}}
    )
    assert ResetOffsetBody.decode(as_text.encode()).offset_table == body.offset_table
    to_string = b'{"offsetTable":{"MessageQueue [topic=T, brokerName=broker-a, queueId=0]":42}}'
    assert ResetOffsetBody.decode(to_string).offset_table == body.offset_table
    with pytest.raises(BodyDecodeError, match="offsetTable"):
        ResetOffsetBody.decode(b'{"offsetTable":{"plain":1}}')


def test_consumer_status_and_running_info_round_trip() -> None:
    mq = MessageQueue("T", "b", 2)
    status = GetConsumerStatusBody({mq: 5}, {"client-1": {mq: 6}})
    assert GetConsumerStatusBody.decode(status.encode()) == status
    info = ConsumerRunningInfo(
        properties={"consumeType": "CONSUME_PASSIVELY"},
        subscription_set=[SubscriptionData("T", "*", sub_version=1)],
        mq_table={mq: ProcessQueueInfo(commit_offset=3, locked=True, cached_msg_size_in_mib=2)},
        status_table={"T": ConsumeStatus(pull_rt=1.5, consume_ok_tps=2.0, consume_failed_msgs=4)},
        jstack="trace",
    )
    encoded = info.encode()
    assert (
        b'"cachedMsgSizeInMiB":2' in encoded
        and b'"droped":false' in encoded
        and b'"consumeOKTPS":2.0' in encoded
    )
    assert ConsumerRunningInfo.decode(encoded) == info
    assert fastjson.loads(encoded)["mqTable"]


def test_lenient_field_readers() -> None:
    assert [as_int(v) for v in ("12", " 7 ", "1.9", True, 3.7, None, "x", [1], float("nan"))] == [
        12,
        7,
        1,
        1,
        3,
        0,
        0,
        0,
        0,
    ]
    assert as_float("2.5") == 2.5 and as_float("x", 1.0) == 1.0 and as_float(None) == 0.0
    assert [as_bool(v) for v in ("true", "1", "TRUE", "false", 0, 2, None, "maybe")] == [
        True,
        True,
        True,
        False,
        False,
        True,
        False,
        False,
    ]
    assert as_str(True) == "true" and as_str(5) == "5" and as_str(None, "d") == "d"
    assert as_enum(MessageModel, "1", MessageModel.BROADCASTING) is MessageModel.CLUSTERING
    assert as_enum(MessageModel, -1, MessageModel.BROADCASTING) is MessageModel.BROADCASTING
    assert as_enum(MessageModel, True, MessageModel.BROADCASTING) is MessageModel.BROADCASTING
    assert (
        as_enum(ConsumeType, MessageModel.CLUSTERING, ConsumeType.CONSUME_ACTIVELY)
        is ConsumeType.CONSUME_ACTIVELY
    )
    assert mq_from_json({"topic": "T", "brokerName": "b", "queueId": "3"}) == MessageQueue("T", "b", 3)
    assert mq_from_json("MessageQueue [topic=T, brokerName=b, queueId=-1]") == MessageQueue("T", "b", -1)
