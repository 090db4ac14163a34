"""RocketMQ constants: system topics, property names, sys flags, permissions (docs/protocol.md section 6).

Names keep RocketMQ's spelling so a reader can grep the Java source for them.
"""

from __future__ import annotations

import re
from typing import Final

# --- MixAll -----------------------------------------------------------------------------------
MASTER_ID: Final = 0
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
UNIQUE_MSG_QUERY_FLAG: Final = "_UNIQUE_KEY_QUERY"
DEFAULT_CLUSTER: Final = "DefaultCluster"
DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP: Final = "DEFAULT_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
SCHEDULE_CONSUMER_GROUP: Final = "SCHEDULE_CONSUMER"
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
CID_SYS_RMQ_TRANS: Final = "CID_RMQ_SYS_TRANS"
NAMESRV_ADDR_ENV: Final = "NAMESRV_ADDR"
ORDER_TOPIC_CONFIG_NAMESPACE: Final = "ORDER_TOPIC_CONFIG"

DEFAULT_NAMESRV_PORT: Final = 9876
DEFAULT_BROKER_PORT: Final = 10911
DEFAULT_HA_PORT: Final = 10912

# The version ordinal our daemons and SDK put in every command (MQVersion V4_9_8).
CURRENT_VERSION: Final = 409


def version_ordinal(major: int, minor: int, patch: int) -> int:
    """MQVersion ordinal of 4.x.y (docs/protocol.md 6.11): 213 + 20x + 2y."""
    if major != 4:
        raise ValueError("only 4.x versions have a closed formula")
    return 213 + 20 * minor + 2 * patch


# --- System topics (TopicValidator) -------------------------------------------------------------
AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC: Final = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
# RocketMQ 5 timer topic (our timer messages use it as the holding topic).
RMQ_SYS_WHEEL_TIMER: Final = "rmq_sys_wheel_timer"
# Broker statistics, published by every broker on itself every statsInterval (docs/stats-topics.md).
RMQ_SYS_BROKER_STATS_TOPIC_TOPIC: Final = "rmq_sys_broker_stats_topic"
RMQ_SYS_BROKER_STATS_GROUP_TOPIC: Final = "rmq_sys_broker_stats_group"
RMQ_SYS_BROKER_STATS_BROKER_TOPIC: Final = "rmq_sys_broker_stats_broker"
BROKER_STATS_TOPICS: Final = frozenset(
    {RMQ_SYS_BROKER_STATS_TOPIC_TOPIC, RMQ_SYS_BROKER_STATS_GROUP_TOPIC, RMQ_SYS_BROKER_STATS_BROKER_TOPIC}
)

# Topics a producer may not send to (send answers NO_PERMISSION).
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
SYSTEM_TOPICS: Final = NOT_ALLOWED_SEND_TOPICS | {
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
}

TOPIC_MAX_LENGTH: Final = 127
_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def topic_name_problem(topic: str) -> str | None:
    """Why `topic` is not a legal topic name, or None when it is (TopicValidator.validateTopic)."""
    if not topic:
        return "the topic name is empty"
    if len(topic.encode("utf-8")) > TOPIC_MAX_LENGTH:
        return f"the topic name is longer than {TOPIC_MAX_LENGTH} bytes"
    if not _VALID_NAME.match(topic):
        return f"the topic name {topic!r} has characters other than %|a-zA-Z0-9_-"
    return None


def group_name_problem(group: str) -> str | None:
    if not group:
        return "the group name is empty"
    if len(group) > 255:
        return "the group name is longer than 255 characters"
    if not _VALID_NAME.match(group):
        return f"the group name {group!r} has characters other than %|a-zA-Z0-9_-"
    return None


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


# --- Message properties (MessageConst) -----------------------------------------------------------
PROPERTY_KEYS: Final = "KEYS"
PROPERTY_TAGS: Final = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
PROPERTY_BUYER_ID: Final = "BUYER_ID"
PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"
PROPERTY_CORRECTION_FLAG: Final = "CORRECTION_FLAG"
PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
PROPERTY_MSG_REGION: Final = "MSG_REGION"
PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_INSTANCE_ID: Final = "INSTANCE_ID"
PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL: Final = "TTL"
PROPERTY_CLUSTER: Final = "CLUSTER"
PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
REPLY_MESSAGE_FLAG: Final = "reply"  # MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG)
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
PROPERTY_TRANSACTION_ID: Final = "__transactionId__"
# Timer messages: RocketMQ 4.x commercial name and the RocketMQ 5 names.
PROPERTY_START_DELIVER_TIME: Final = "__STARTDELIVERTIME"
PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
PROPERTY_POP_CK: Final = "POP_CK"
PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"

KEY_SEPARATOR: Final = " "
NAME_VALUE_SEPARATOR: Final = "\u0001"
PROPERTY_SEPARATOR: Final = "\u0002"


# --- MessageSysFlag ------------------------------------------------------------------------------
class MessageSysFlag:
    COMPRESSED_FLAG: Final = 0x1
    MULTI_TAGS_FLAG: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    BORNHOST_V6_FLAG: Final = 0x10
    STOREHOSTADDRESS_V6_FLAG: Final = 0x20
    NEED_UNWRAP_FLAG: Final = 0x40
    INNER_BATCH_FLAG: Final = 0x80
    COMPRESSION_TYPE_MASK: Final = 0x700
    COMPRESSION_ZLIB_TYPE: Final = 0x300

    @staticmethod
    def transaction_value(flag: int) -> int:
        return flag & 0xC

    @staticmethod
    def reset_transaction_value(flag: int, value: int) -> int:
        return (flag & ~0xC) | value


# --- PullSysFlag ----------------------------------------------------------------------------------
class PullSysFlag:
    FLAG_COMMIT_OFFSET: Final = 0x1
    FLAG_SUSPEND: Final = 0x2
    FLAG_SUBSCRIPTION: Final = 0x4
    FLAG_CLASS_FILTER: Final = 0x8
    FLAG_LITE_PULL_MESSAGE: Final = 0x10

    @staticmethod
    def build(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False) -> int:
        flag = 0
        if commit_offset:
            flag |= PullSysFlag.FLAG_COMMIT_OFFSET
        if suspend:
            flag |= PullSysFlag.FLAG_SUSPEND
        if subscription:
            flag |= PullSysFlag.FLAG_SUBSCRIPTION
        if class_filter:
            flag |= PullSysFlag.FLAG_CLASS_FILTER
        return flag


# --- PermName ------------------------------------------------------------------------------------
class PermName:
    PERM_PRIORITY: Final = 0x8
    PERM_READ: Final = 0x4
    PERM_WRITE: Final = 0x2
    PERM_INHERIT: Final = 0x1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return perm & PermName.PERM_READ == PermName.PERM_READ

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return perm & PermName.PERM_WRITE == PermName.PERM_WRITE

    @staticmethod
    def is_inherited(perm: int) -> bool:
        return perm & PermName.PERM_INHERIT == PermName.PERM_INHERIT

    @staticmethod
    def to_string(perm: int) -> str:
        return (
            ("R" if PermName.is_readable(perm) else "-")
            + ("W" if PermName.is_writeable(perm) else "-")
            + ("X" if PermName.is_inherited(perm) else "-")
        )


DEFAULT_DELAY_LEVELS: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
