"""HEART_BEAT (34) and CHECK_CLIENT_CONFIG (46) bodies and the enums they carry.

Ports of org.apache.rocketmq.common.protocol.heartbeat.{HeartbeatData, ProducerData, ConsumerData,
SubscriptionData, ConsumeType, MessageModel} and common.consumer.ConsumeFromWhere,
protocol.body.CheckClientRequestBody (4.9.8; docs/protocol.md 5.4, 6.9). Enums are written by name;
they are read by name or by Java ordinal (the C++ SDK sends ordinals), so the members keep Java's
declaration order. Java's sets of strings/ints (tagsSet, codeSet) are Python sets written as sorted
arrays; sets of beans (producerDataSet, subscriptionDataSet, ...) are lists kept in wire order (so a
decoded body re-encodes byte for byte). Missing sets read as empty. `filterClassSource` is never serialized.
Deviation: a ConsumerData missing its enums reads as a clustering push consumer from the last offset
(Java would keep nulls and fail later).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Self

from rocketq.remoting.protocol.bodies.jsonfields import (
    JsonBody,
    as_bool,
    as_enum,
    as_int,
    as_int_set,
    as_list,
    as_mapping,
    as_str,
    as_str_list,
)

SUB_ALL = "*"


class ConsumeType(enum.StrEnum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull / lite pull
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push


class MessageModel(enum.StrEnum):
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.StrEnum):
    """Where a group without a committed offset starts; order = Java ordinals."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ExpressionType:
    """Subscription expression types (plain strings in Java); null or "" means TAG."""

    TAG = "TAG"
    SQL92 = "SQL92"

    @staticmethod
    def is_tag_type(value: str | None) -> bool:
        return not value or value == ExpressionType.TAG


@dataclass(slots=True)
class SubscriptionData(JsonBody):
    """One topic subscription of a consumer group: expression, its tags and their Java hash codes."""

    topic: str = ""
    sub_string: str = SUB_ALL
    tags_set: set[str] = field(default_factory=set)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = 0  # ms timestamp the client built it at; a newer one replaces an older one
    expression_type: str = ExpressionType.TAG
    class_filter_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": sorted(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            topic=as_str(d.get("topic")),
            sub_string=as_str(d.get("subString"), SUB_ALL),
            tags_set=set(as_str_list(d.get("tagsSet"))),
            code_set=as_int_set(d.get("codeSet")),
            sub_version=as_int(d.get("subVersion")),
            expression_type=as_str(d.get("expressionType")) or ExpressionType.TAG,
            class_filter_mode=as_bool(d.get("classFilterMode")),
        )


@dataclass(slots=True)
class ConsumerData(JsonBody):
    """One consumer group of a client: how it consumes and what it subscribes."""

    group_name: str = ""
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where.name,
            "consumeType": self.consume_type.name,
            "groupName": self.group_name,
            "messageModel": self.message_model.name,
            "subscriptionDataSet": [s.to_json() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            group_name=as_str(d.get("groupName")),
            consume_type=as_enum(ConsumeType, d.get("consumeType"), ConsumeType.CONSUME_PASSIVELY),
            message_model=as_enum(MessageModel, d.get("messageModel"), MessageModel.CLUSTERING),
            consume_from_where=as_enum(
                ConsumeFromWhere, d.get("consumeFromWhere"), ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
            ),
            subscription_data_set=[
                SubscriptionData.from_json(s) for s in as_list(d.get("subscriptionDataSet"))
            ],
            unit_mode=as_bool(d.get("unitMode")),
        )


@dataclass(slots=True)
class ProducerData(JsonBody):
    group_name: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"groupName": self.group_name}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(group_name=as_str(as_mapping(obj).get("groupName")))


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    """HEART_BEAT body: the client id and every producer and consumer group the client runs."""

    client_id: str = ""
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": [c.to_json() for c in self.consumer_data_set],
            "producerDataSet": [p.to_json() for p in self.producer_data_set],
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            client_id=as_str(d.get("clientID")),
            producer_data_set=[ProducerData.from_json(p) for p in as_list(d.get("producerDataSet"))],
            consumer_data_set=[ConsumerData.from_json(c) for c in as_list(d.get("consumerDataSet"))],
        )


@dataclass(slots=True)
class CheckClientRequestBody(JsonBody):
    """CHECK_CLIENT_CONFIG (46): a non-TAG subscription the broker should try to compile."""

    client_id: str = ""
    group: str = ""
    subscription_data: SubscriptionData | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clientId": self.client_id, "group": self.group}
        if self.subscription_data is not None:
            out["subscriptionData"] = self.subscription_data.to_json()
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        sub = d.get("subscriptionData")
        return cls(
            client_id=as_str(d.get("clientId")),
            group=as_str(d.get("group")),
            subscription_data=SubscriptionData.from_json(sub) if isinstance(sub, dict) else None,
        )
