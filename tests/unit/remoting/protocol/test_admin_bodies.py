"""Admin bodies and headers, POP headers and extraInfo (docs/protocol.md 2.12, 2.13, 5.5)."""

from __future__ import annotations

import pytest

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.admin import (
    BrokerStatsData,
    BrokerStatsItem,
    CMResult,
    Connection,
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    OffsetWrapper,
    ProducerConnection,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicList,
    TopicOffset,
    TopicStatsTable,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.register import DataVersion
from rocketq.remoting.protocol.codes import LanguageCode
from rocketq.remoting.protocol.errors import MissingHeaderFieldError
from rocketq.remoting.protocol.headers.admin import CreateTopicRequestHeader, ResetOffsetRequestHeader
from rocketq.remoting.protocol.headers.pop import (
    ExtraInfo,
    ExtraInfoError,
    PopMessageRequestHeader,
    build_extra_info,
    is_pop_retry_topic_v2,
    offset_info_entry,
    offset_info_key,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    real_topic,
    retry_flag,
)
from rocketq.remoting.protocol.headers.query import QueryMessageRequestHeader
from rocketq.remoting.protocol.headers.transaction import EndTransactionRequestHeader

SUB_GROUP_SAMPLE = (
    b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
    b'"groupName":"cg_demo","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,'
    b'"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}'
)


def test_subscription_group_config_sample_and_java_defaults() -> None:
    assert SubscriptionGroupConfig(group_name="cg_demo").encode() == SUB_GROUP_SAMPLE
    assert SubscriptionGroupConfig.decode(SUB_GROUP_SAMPLE) == SubscriptionGroupConfig(group_name="cg_demo")
    partial = SubscriptionGroupConfig.decode(
        b'{"groupName":"g","retryMaxTimes":"3","consumeEnable":false,"groupSysFlag":1}'
    )
    assert (partial.retry_max_times, partial.consume_enable, partial.retry_queue_nums) == (3, False, 1)
    wrapper = SubscriptionGroupWrapper({"g": partial}, DataVersion(timestamp=5, counter=2))
    assert SubscriptionGroupWrapper.decode(wrapper.encode()) == wrapper


def test_topic_stats_table_object_keys() -> None:
    table = TopicStatsTable(
        {MessageQueue("T", "b", 1): TopicOffset(0, 9, 77), MessageQueue("T", "b", 0): TopicOffset(1, 2, 3)}
    )
    raw = table.encode()
    assert raw.startswith(
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":3'
    )
    assert TopicStatsTable.decode(raw) == table
    assert TopicStatsTable.decode(b"{}") == TopicStatsTable()


def test_consume_stats_and_lag() -> None:
    stats = ConsumeStats(
        {
            MessageQueue("T", "b", 0): OffsetWrapper(10, 4, 1),
            MessageQueue("T", "b", 1): OffsetWrapper(5, 5, 2),
        },
        1.5,
    )
    assert stats.compute_total_diff() == 6
    decoded = ConsumeStats.decode(stats.encode())
    assert decoded == stats
    assert fastjson.loads(stats.encode())["consumeTps"] == 1.5


def test_lists() -> None:
    assert TopicList(["b", "a", "b"]).encode() == b'{"topicList":["b","a"]}'
    with_addr = b'{"brokerAddr":"127.0.0.1:10911","topicList":["x"]}'
    assert TopicList.decode(with_addr) == TopicList(["x"], "127.0.0.1:10911")
    assert TopicList.decode(with_addr).encode() == with_addr
    assert GroupList.decode(GroupList(["g2", "g1", "g2"]).encode()) == GroupList(["g2", "g1"])


def test_connections() -> None:
    conn = Connection("cid", "127.0.0.1:5555", LanguageCode.GO, 317)
    consumer = ConsumerConnection(
        [conn, Connection("a", "x", LanguageCode.JAVA, 409)],
        {"T": SubscriptionData("T", "*", sub_version=1)},
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    decoded = ConsumerConnection.decode(consumer.encode())
    assert decoded.connection_set[0].client_id == "a" and decoded.compute_min_version() == 317
    assert decoded.subscription_table == consumer.subscription_table
    assert (decoded.consume_type, decoded.message_model, decoded.consume_from_where) == (
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    bare = ConsumerConnection.decode(
        b'{"connectionSet":[{"clientId":"c","language":9}],"consumeType":"bogus"}'
    )
    assert bare.consume_type is None and bare.connection_set[0].language is LanguageCode.GO
    assert ConsumerConnection().compute_min_version() == 2**31 - 1
    producer = ProducerConnection([conn])
    assert ProducerConnection.decode(producer.encode()) == producer


def test_time_span_stats_and_direct_result() -> None:
    body = QueryConsumeTimeSpanBody([QueueTimeSpan(MessageQueue("T", "b", 3), 1, 2, 3, 4)])
    assert QueryConsumeTimeSpanBody.decode(body.encode()) == body
    stats = BrokerStatsData(BrokerStatsItem(1, 0.5, 2.0), BrokerStatsItem(2), BrokerStatsItem(3))
    assert BrokerStatsData.decode(stats.encode()) == stats
    result = ConsumeMessageDirectlyResult(
        order=True, consume_result=CMResult.CR_LATER, remark="r", spent_time_mills=5
    )
    assert ConsumeMessageDirectlyResult.decode(result.encode()) == result
    assert ConsumeMessageDirectlyResult.decode(b'{"consumeResult":1}').consume_result is CMResult.CR_LATER
    assert ConsumeMessageDirectlyResult.decode(b"{}").auto_commit is True


def test_admin_headers() -> None:
    ext = {
        "topic": "T",
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    create = CreateTopicRequestHeader.from_ext_fields(ext)
    assert create.order is False and create.topic_sys_flag is None
    assert create.to_ext_fields() == {**ext, "order": "false"}
    reset = ResetOffsetRequestHeader.from_ext_fields(
        {"topic": "T", "group": "g", "timestamp": "5", "isForce": "true"}
    )
    assert reset.is_force is True and reset.to_ext_fields()["isForce"] == "true"
    with pytest.raises(MissingHeaderFieldError, match="isForce"):
        ResetOffsetRequestHeader.from_ext_fields({"topic": "T", "group": "g", "timestamp": "5"})
    query = QueryMessageRequestHeader.from_ext_fields(
        {
            "topic": "T",
            "key": "k",
            "maxNum": "32",
            "beginTimestamp": "0",
            "endTimestamp": "9",
            "_UNIQUE_KEY_QUERY": "true",
        }
    )
    assert query.unique_key_query is True
    end = EndTransactionRequestHeader.from_ext_fields(
        {
            "producerGroup": "pg",
            "tranStateTableOffset": "1",
            "commitLogOffset": "2",
            "commitOrRollback": "8",
            "msgId": "m",
        }
    )
    assert end.from_transaction_check is False and end.to_ext_fields()["fromTransactionCheck"] == "false"


def test_pop_header_and_extra_info() -> None:
    pop = PopMessageRequestHeader.from_ext_fields(
        {
            "consumerGroup": "g",
            "topic": "T",
            "queueId": "-1",
            "maxMsgNums": "16",
            "invisibleTime": "30000",
            "pollTime": "20000",
            "bornTime": "1",
            "initMode": "0",
            "ns": "x",
            "lo": "true",
        }
    )
    assert pop.queue_id == -1 and pop.order is False
    text = build_extra_info(5, 1700, 30000, 3, "T", "broker-a", 2, 77)
    assert text == "5 1700 30000 3 0 broker-a 2 77"
    info = ExtraInfo.parse(text)
    assert info == ExtraInfo(5, 1700, 30000, 3, "0", "broker-a", 2, 77) and not info.is_order
    assert info.build() == text and info.real_topic("T", "g") == "T"
    short = ExtraInfo.parse(build_extra_info(1, 2, 3, 999, "%RETRY%g+T", "b", 0))
    assert short.queue_offset is None and short.is_order and short.retry == "2"
    assert short.real_topic("T", "g") == "%RETRY%g+T"
    assert real_topic("T", "g", "1") == "%RETRY%g_T"
    assert retry_flag("%RETRY%g_T") == "1" and is_pop_retry_topic_v2("%RETRY%g+T")
    for bad in ("1 2 3", "a 2 3 4 0 b 1"):
        with pytest.raises(ExtraInfoError):
            ExtraInfo.parse(bad)
    with pytest.raises(ExtraInfoError):
        real_topic("T", "g", "9")


def test_offset_infos() -> None:
    start = ";".join([offset_info_entry("T", 0, 5), offset_info_entry("%RETRY%g_T", 1, 7)])
    assert parse_start_offset_info(start) == {"0@0": 5, "1@1": 7}
    assert offset_info_key("T", 0) == "0@0"
    msgs = offset_info_entry("T", 2, [4, 5, 6])
    assert parse_msg_offset_info(msgs) == {"0@2": [4, 5, 6]}
    assert parse_order_count_info("0 1 3") == {"0@1": 3}
    assert parse_start_offset_info(None) == {} and parse_msg_offset_info("") == {}
    for bad in ("0 1", "0 1 x", "0 1 2;0 1 3"):
        with pytest.raises(ExtraInfoError):
            parse_start_offset_info(bad)
    with pytest.raises(ExtraInfoError):
        parse_msg_offset_info("0 1 a,b")
    with pytest.raises(ExtraInfoError):
        parse_order_count_info("0 1 z")
