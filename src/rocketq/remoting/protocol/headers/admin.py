"""Typed headers of broker administration: topics, groups, stats, connections, offsets reset, ACL.

Ports of org.apache.rocketmq.common.protocol.header.{CreateTopicRequestHeader, DeleteTopicRequestHeader,
GetTopicStatsInfoRequestHeader, GetConsumeStatsRequestHeader, GetBrokerConfigResponseHeader,
ResetOffsetRequestHeader, GetConsumerStatusRequestHeader, GetConsumerRunningInfoRequestHeader,
ConsumeMessageDirectlyResultRequestHeader, QueryTopicConsumeByWhoRequestHeader,
GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
ViewBrokerStatsDataRequestHeader, DeleteSubscriptionGroupRequestHeader, QueryConsumeTimeSpanRequestHeader,
QueryCorrectionOffsetHeader, CloneGroupOffsetRequestHeader, GetConsumeStatsInBrokerHeader,
QueryConsumeQueueRequestHeader, ResumeCheckHalfMessageRequestHeader, GetAllProducerInfoRequestHeader,
GetAllTopicConfigResponseHeader} and the ACL headers (4.9.8; docs/protocol.md 2.12, 2.13). Keys such as
`isForce`/`isOrder` are literally the Java field names. Java primitives without @CFNotNull default to
false/0 here and always travel, as Java's toString of a primitive does.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


# -- topics (17, 202, 215) ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17). `default_topic` is ignored by the broker (tools send TBW102)."""

    topic: str = jfield("topic")
    default_topic: str = jfield("defaultTopic")
    read_queue_nums: Int32 = jfield("readQueueNums")
    write_queue_nums: Int32 = jfield("writeQueueNums")
    perm: Int32 = jfield("perm")
    topic_filter_type: str = jfield("topicFilterType")  # "SINGLE_TAG" | "MULTI_TAG"
    topic_sys_flag: Int32 | None = jfield("topicSysFlag", None)
    order: bool = jfield("order", False)  # @CFNotNull with initializer false in Java


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str = jfield("topic")


@dataclass(frozen=True, slots=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202); the answer body is TopicStatsTable."""

    topic: str = jfield("topic")


@dataclass(frozen=True, slots=True)
class GetAllTopicConfigResponseHeader(CommandHeader):
    """Empty (GET_ALL_TOPIC_CONFIG answers with a TopicConfigSerializeWrapper body)."""


@dataclass(frozen=True, slots=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300); the answer body is GroupList."""

    topic: str = jfield("topic")


# -- broker config and stats (26, 315, 317) -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """Answer to GET_BROKER_CONFIG (26): the config DataVersion as JSON text; the body is properties."""

    version: str = jfield("version")


@dataclass(frozen=True, slots=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315), e.g. statsName TOPIC_PUT_NUMS, statsKey a topic."""

    stats_name: str = jfield("statsName")
    stats_key: str = jfield("statsKey")


@dataclass(frozen=True, slots=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317)."""

    is_order: bool = jfield("isOrder")


# -- consumer groups (203, 207, 208, 303, 308, 314, 321) ------------------------------------------
@dataclass(frozen=True, slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208); the answer body is ConsumeStats (all topics of the group if no topic)."""

    consumer_group: str = jfield("consumerGroup")
    topic: str | None = jfield("topic", None)


@dataclass(frozen=True, slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203); the answer body is ConsumerConnection."""

    consumer_group: str = jfield("consumerGroup")


@dataclass(frozen=True, slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST (204); the answer body is ProducerConnection."""

    producer_group: str = jfield("producerGroup")


@dataclass(frozen=True, slots=True)
class GetAllProducerInfoRequestHeader(CommandHeader):
    """GET_ALL_PRODUCER_INFO (328): no fields."""


@dataclass(frozen=True, slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207); `remove_offset` also drops the group's committed offsets."""

    group_name: str = jfield("groupName")
    remove_offset: bool = jfield("removeOffset", False)


@dataclass(frozen=True, slots=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN (303); the answer body is QueryConsumeTimeSpanBody."""

    topic: str = jfield("topic")
    group: str = jfield("group")


@dataclass(frozen=True, slots=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308); `filter_groups` is a comma-separated group list."""

    compare_group: str = jfield("compareGroup")
    topic: str = jfield("topic")
    filter_groups: str | None = jfield("filterGroups", None)


@dataclass(frozen=True, slots=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET (314)."""

    src_group: str = jfield("srcGroup")
    dest_group: str = jfield("destGroup")
    topic: str | None = jfield("topic", None)
    offline: bool = jfield("offline", False)


@dataclass(frozen=True, slots=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): `count` consume-queue units of a queue from `index`."""

    topic: str | None = jfield("topic", None)
    queue_id: Int32 = jfield("queueId", 0)
    index: int = jfield("index", 0)
    count: Int32 = jfield("count", 0)
    consumer_group: str | None = jfield("consumerGroup", None)


# -- offsets reset and client introspection (220-223, 307, 309) -----------------------------------
@dataclass(frozen=True, slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220, broker -> client)."""

    topic: str = jfield("topic")
    group: str = jfield("group")
    timestamp: int = jfield("timestamp")  # ms; the offset nearest to it becomes the group's offset
    is_force: bool = jfield("isForce")


@dataclass(frozen=True, slots=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)."""

    topic: str = jfield("topic")
    group: str = jfield("group")
    client_addr: str | None = jfield("clientAddr", None)


@dataclass(frozen=True, slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307, admin -> broker -> client); the answer body is ConsumerRunningInfo."""

    consumer_group: str = jfield("consumerGroup")
    client_id: str = jfield("clientId")
    jstack_enable: bool = jfield("jstackEnable", False)


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY (309): the body is the encoded message to hand to the listener."""

    consumer_group: str = jfield("consumerGroup")
    client_id: str | None = jfield("clientId", None)
    msg_id: str | None = jfield("msgId", None)
    broker_name: str | None = jfield("brokerName", None)


@dataclass(frozen=True, slots=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323)."""

    msg_id: str | None = jfield("msgId", None)


# -- ACL (50-53) ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG (50); perms are "TOPIC=DENY|PUB|SUB|PUB|SUB" style text."""

    access_key: str = jfield("accessKey")
    secret_key: str | None = jfield("secretKey", None)
    white_remote_address: str | None = jfield("whiteRemoteAddress", None)
    admin: bool = jfield("admin", False)
    default_topic_perm: str | None = jfield("defaultTopicPerm", None)
    default_group_perm: str | None = jfield("defaultGroupPerm", None)
    topic_perms: str | None = jfield("topicPerms", None)
    group_perms: str | None = jfield("groupPerms", None)


@dataclass(frozen=True, slots=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG (51)."""

    access_key: str = jfield("accessKey")


@dataclass(frozen=True, slots=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53)."""

    global_white_addrs: str = jfield("globalWhiteAddrs")
    acl_file_full_path: str = jfield("aclFileFullPath")


@dataclass(frozen=True, slots=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """Answer to GET_BROKER_CLUSTER_ACL_INFO (52)."""

    version: str = jfield("version")
    broker_name: str = jfield("brokerName")
    broker_addr: str = jfield("brokerAddr")
    cluster_name: str = jfield("clusterName")
    all_acl_file_version: str | None = jfield("allAclFileVersion", None)
