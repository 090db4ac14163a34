"""Admin bodies: topic lists and stats, consume stats, subscription groups, connections, time spans.

Ports of org.apache.rocketmq.common.protocol.body.{TopicList, GroupList, ConsumerConnection,
ProducerConnection, Connection, QueryConsumeTimeSpanBody, QueueTimeSpan, SubscriptionGroupWrapper,
BrokerStatsData, BrokerStatsItem, ConsumeMessageDirectlyResult, CMResult}, common.admin.{TopicStatsTable,
TopicOffset, ConsumeStats, OffsetWrapper} and common.subscription.SubscriptionGroupConfig (4.9.8;
docs/protocol.md 2.12, 5.5). MessageQueue-keyed tables are dict[MessageQueue, ...] written with fastjson
object keys. Deviation: QueueTimeSpan's derived `*TimeStampStr` getters are not written (no reader
needs them; they are ignored when read).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Self

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.jsonfields import (
    JsonBody,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_mapping,
    as_opt_enum,
    as_opt_str,
    as_str,
    as_str_list,
    enum_name,
    mq_from_json,
    mq_keyed,
    unique_strs,
)
from rocketq.remoting.protocol.bodies.register import DataVersion
from rocketq.remoting.protocol.codes import LanguageCode


# -- lists ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class TopicList(JsonBody):
    """Topic names (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER, system topic lists)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topicList": unique_strs(self.topic_list)}
        if self.broker_addr is not None:
            out["brokerAddr"] = self.broker_addr
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(topic_list=as_str_list(d.get("topicList")), broker_addr=as_opt_str(d.get("brokerAddr")))


@dataclass(slots=True)
class GroupList(JsonBody):
    """QUERY_TOPIC_CONSUME_BY_WHO (300): the consumer groups of a topic."""

    group_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"groupList": unique_strs(self.group_list)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(group_list=as_str_list(as_mapping(obj).get("groupList")))


# -- topic stats (202) ----------------------------------------------------------------------------
@dataclass(slots=True)
class TopicOffset(JsonBody):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0  # store time of the last message, 0 when the queue is empty

    def to_json(self) -> dict[str, Any]:
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            as_int(d.get("minOffset")), as_int(d.get("maxOffset")), as_int(d.get("lastUpdateTimestamp"))
        )


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    """GET_TOPIC_STATS_INFO (202): min/max offset of every queue of a topic on one broker."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {mq: self.offset_table[mq].to_json() for mq in sorted(self.offset_table)}}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        table = as_mapping(obj).get("offsetTable")
        return cls(offset_table=mq_keyed(table, TopicOffset.from_json, "TopicStatsTable.offsetTable"))


# -- consume stats (208) --------------------------------------------------------------------------
@dataclass(slots=True)
class OffsetWrapper(JsonBody):
    broker_offset: int = 0  # the queue's max offset
    consumer_offset: int = 0  # the group's committed offset
    last_timestamp: int = 0  # store time of the last consumed message

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            as_int(d.get("brokerOffset")), as_int(d.get("consumerOffset")), as_int(d.get("lastTimestamp"))
        )


@dataclass(slots=True)
class ConsumeStats(JsonBody):
    """GET_CONSUME_STATS (208): per queue, broker offset vs the group's offset; and the group's TPS."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """The group's lag over all queues (Java computeTotalDiff)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeTps": self.consume_tps,
            "offsetTable": {mq: self.offset_table[mq].to_json() for mq in sorted(self.offset_table)},
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            offset_table=mq_keyed(d.get("offsetTable"), OffsetWrapper.from_json, "ConsumeStats.offsetTable"),
            consume_tps=as_float(d.get("consumeTps")),
        )


@dataclass(slots=True)
class ConsumeStatsList(JsonBody):
    """GET_BROKER_CONSUME_STATS (317): every subscription group's ConsumeStats per topic, on one broker."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str = ""
    total_diff: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddr": self.broker_addr,
            "consumeStatsList": [
                {group: [stats.to_json() for stats in per_topic] for group, per_topic in entry.items()}
                for entry in self.consume_stats_list
            ],
            "totalDiff": self.total_diff,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        entries = d.get("consumeStatsList")
        return cls(
            consume_stats_list=[
                {
                    str(group): [ConsumeStats.from_json(s) for s in per_topic or ()]
                    for group, per_topic in as_mapping(entry).items()
                }
                for entry in (entries if isinstance(entries, list) else ())
            ],
            broker_addr=as_str(d.get("brokerAddr")),
            total_diff=as_int(d.get("totalDiff")),
        )


# -- subscription groups (200, 201) ---------------------------------------------------------------
@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    """A consumer group's broker-side settings; the defaults are Java's (docs/protocol.md 2.12, 6.12)."""

    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    _KEYS = (
        ("group_name", "groupName", as_str),
        ("consume_enable", "consumeEnable", as_bool),
        ("consume_from_min_enable", "consumeFromMinEnable", as_bool),
        ("consume_broadcast_enable", "consumeBroadcastEnable", as_bool),
        ("retry_queue_nums", "retryQueueNums", as_int),
        ("retry_max_times", "retryMaxTimes", as_int),
        ("broker_id", "brokerId", as_int),
        ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly", as_int),
        ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable", as_bool),
    )

    def to_json(self) -> dict[str, Any]:
        return {java: getattr(self, attr) for attr, java, _ in self._KEYS}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        config = cls()
        for attr, java, read in cls._KEYS:
            value = d.get(java)
            if value is not None:
                setattr(config, attr, read(value))
        return config


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) body, also the broker's subscriptionGroup.json."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {
                name: cfg.to_json() for name, cfg in self.subscription_group_table.items()
            },
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            subscription_group_table={
                as_str(name): SubscriptionGroupConfig.from_json(cfg)
                for name, cfg in as_mapping(d.get("subscriptionGroupTable")).items()
            },
            data_version=DataVersion.from_json(d.get("dataVersion")),
        )


# -- connections (203, 204) -----------------------------------------------------------------------
@dataclass(slots=True)
class Connection(JsonBody):
    """One client channel of a group: id, address, SDK language and version ordinal."""

    client_id: str = ""
    client_addr: str = ""
    language: LanguageCode = LanguageCode.JAVA
    version: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language.name,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        language = d.get("language")
        return cls(
            client_id=as_str(d.get("clientId")),
            client_addr=as_str(d.get("clientAddr")),
            language=LanguageCode.JAVA if language is None else LanguageCode.parse(language),
            version=as_int(d.get("version")),
        )


def _connections_json(connections: list[Connection]) -> list[dict[str, Any]]:
    return [c.to_json() for c in sorted(connections, key=lambda c: (c.client_id, c.client_addr))]


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST (203): a group's channels, subscriptions and consume settings."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)  # topic -> subscription
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None

    def compute_min_version(self) -> int:
        return min((c.version for c in self.connection_set), default=2**31 - 1)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "connectionSet": _connections_json(self.connection_set),
            "subscriptionTable": {topic: sub.to_json() for topic, sub in self.subscription_table.items()},
        }
        for key, value in (
            ("consumeFromWhere", self.consume_from_where),
            ("consumeType", self.consume_type),
            ("messageModel", self.message_model),
        ):
            if value is not None:
                out[key] = enum_name(value)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            connection_set=[Connection.from_json(c) for c in as_list(d.get("connectionSet"))],
            subscription_table={
                as_str(topic): SubscriptionData.from_json(sub)
                for topic, sub in as_mapping(d.get("subscriptionTable")).items()
            },
            consume_type=as_opt_enum(ConsumeType, d.get("consumeType")),
            message_model=as_opt_enum(MessageModel, d.get("messageModel")),
            consume_from_where=as_opt_enum(ConsumeFromWhere, d.get("consumeFromWhere")),
        )


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    connection_set: list[Connection] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"connectionSet": _connections_json(self.connection_set)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(
            connection_set=[Connection.from_json(c) for c in as_list(as_mapping(obj).get("connectionSet"))]
        )


# -- consume time span (303) ----------------------------------------------------------------------
@dataclass(slots=True)
class QueueTimeSpan(JsonBody):
    message_queue: MessageQueue = field(default_factory=lambda: MessageQueue("", "", 0))
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeTimeStamp": self.consume_time_stamp,
            "delayTime": self.delay_time,
            "maxTimeStamp": self.max_time_stamp,
            "messageQueue": self.message_queue.to_json(),
            "minTimeStamp": self.min_time_stamp,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            message_queue=mq_from_json(d.get("messageQueue")),
            min_time_stamp=as_int(d.get("minTimeStamp")),
            max_time_stamp=as_int(d.get("maxTimeStamp")),
            consume_time_stamp=as_int(d.get("consumeTimeStamp")),
            delay_time=as_int(d.get("delayTime")),
        )


@dataclass(slots=True)
class QueryConsumeTimeSpanBody(JsonBody):
    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"consumeTimeSpanSet": [span.to_json() for span in self.consume_time_span_set]}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls([QueueTimeSpan.from_json(s) for s in as_list(as_mapping(obj).get("consumeTimeSpanSet"))])


# -- broker stats (315) and direct consumption (309) ----------------------------------------------
@dataclass(slots=True)
class BrokerStatsItem(JsonBody):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(as_int(d.get("sum")), as_float(d.get("tps")), as_float(d.get("avgpt")))


@dataclass(slots=True)
class BrokerStatsData(JsonBody):
    """VIEW_BROKER_STATS_DATA (315): one statistic over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)

    def to_json(self) -> dict[str, Any]:
        return {
            "statsDay": self.stats_day.to_json(),
            "statsHour": self.stats_hour.to_json(),
            "statsMinute": self.stats_minute.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            BrokerStatsItem.from_json(d.get("statsMinute")),
            BrokerStatsItem.from_json(d.get("statsHour")),
            BrokerStatsItem.from_json(d.get("statsDay")),
        )


class CMResult(enum.StrEnum):
    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


@dataclass(slots=True)
class ConsumeMessageDirectlyResult(JsonBody):
    """Answer to CONSUME_MESSAGE_DIRECTLY (309): what the client's listener did with the message."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0  # sic: Java's spelling

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "autoCommit": self.auto_commit,
            "order": self.order,
            "spentTimeMills": self.spent_time_mills,
        }
        if self.consume_result is not None:
            out["consumeResult"] = self.consume_result.name
        if self.remark is not None:
            out["remark"] = self.remark
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            order=as_bool(d.get("order")),
            auto_commit=as_bool(d.get("autoCommit"), True),
            consume_result=as_opt_enum(CMResult, d.get("consumeResult")),
            remark=as_opt_str(d.get("remark")),
            spent_time_mills=as_int(d.get("spentTimeMills")),
        )
