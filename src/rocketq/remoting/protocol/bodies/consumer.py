"""Consumer-side bodies: group membership, orderly locks, offset resets, consumer status and running info.

Ports of org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody and
protocol.body.{LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody, ResetOffsetBody,
GetConsumerStatusBody, ConsumerRunningInfo, ProcessQueueInfo, ConsumeStatus} (4.9.8; docs/protocol.md
2.5, 2.10, 5.5). Java's Set<MessageQueue> is a list here (duplicates dropped, wire order kept).
MessageQueue-keyed maps are dict[MessageQueue, ...] and go on the wire as fastjson object keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData
from rocketq.remoting.protocol.bodies.jsonfields import (
    JsonBody,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_mapping,
    as_opt_str,
    as_str,
    as_str_list,
    as_str_map,
    mq_from_json,
    mq_json_list,
    mq_keyed,
    mq_list,
)


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """Answer to GET_CONSUMER_LIST_BY_GROUP (38): client ids of the group's live consumers."""

    consumer_id_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(consumer_id_list=as_str_list(as_mapping(obj).get("consumerIdList")))


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """LOCK_BATCH_MQ (41): lock these queues of a group for one client (orderly consumption)."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: list[MessageQueue] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": mq_json_list(self.mq_set),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            consumer_group=as_str(d.get("consumerGroup")),
            client_id=as_str(d.get("clientId")),
            mq_set=mq_list(d.get("mqSet")),
        )


@dataclass(slots=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    """UNLOCK_BATCH_MQ (42): the same shape as the lock request."""


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    """Answer to LOCK_BATCH_MQ: the queues the caller now holds."""

    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"lockOKMQSet": mq_json_list(self.lock_ok_mq_set)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(lock_ok_mq_set=mq_list(as_mapping(obj).get("lockOKMQSet")))


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET (220) / INVOKE_BROKER_TO_RESET_OFFSET (222): queue -> new offset."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": dict(self.offset_table)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        return cls(
            offset_table=mq_keyed(as_mapping(obj).get("offsetTable"), as_int, "ResetOffsetBody.offsetTable")
        )


@dataclass(slots=True)
class ResetOffsetBodyForC(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET (220) for a C++ client: the offsets as a list of MessageQueueForC."""

    offset_table: list[tuple[MessageQueue, int]] = field(default_factory=list)

    @classmethod
    def of(cls, table: dict[MessageQueue, int]) -> Self:
        return cls(offset_table=list(table.items()))

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": [{**mq.to_json(), "offset": offset} for mq, offset in self.offset_table]}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        items = [v for v in as_list(as_mapping(obj).get("offsetTable")) if isinstance(v, Mapping)]
        return cls(offset_table=[(mq_from_json(v), as_int(v.get("offset", 0))) for v in items])


@dataclass(slots=True)
class GetConsumerStatusBody(JsonBody):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)  # clientId -> offsets

    def to_json(self) -> dict[str, Any]:
        return {
            "consumerTable": {client: dict(table) for client, table in self.consumer_table.items()},
            "messageQueueTable": dict(self.message_queue_table),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        what = "GetConsumerStatusBody"
        return cls(
            message_queue_table=mq_keyed(d.get("messageQueueTable"), as_int, f"{what}.messageQueueTable"),
            consumer_table={
                as_str(client): mq_keyed(table, as_int, f"{what}.consumerTable")
                for client, table in as_mapping(d.get("consumerTable")).items()
            },
        )


@dataclass(slots=True)
class ProcessQueueInfo(JsonBody):
    """A consumer's view of one assigned queue (inside ConsumerRunningInfo.mqTable)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False  # sic: Java's spelling
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    _KEYS = (
        ("commit_offset", "commitOffset"),
        ("cached_msg_min_offset", "cachedMsgMinOffset"),
        ("cached_msg_max_offset", "cachedMsgMaxOffset"),
        ("cached_msg_count", "cachedMsgCount"),
        ("cached_msg_size_in_mib", "cachedMsgSizeInMiB"),
        ("transaction_msg_min_offset", "transactionMsgMinOffset"),
        ("transaction_msg_max_offset", "transactionMsgMaxOffset"),
        ("transaction_msg_count", "transactionMsgCount"),
        ("try_unlock_times", "tryUnlockTimes"),
        ("last_lock_timestamp", "lastLockTimestamp"),
        ("last_pull_timestamp", "lastPullTimestamp"),
        ("last_consume_timestamp", "lastConsumeTimestamp"),
    )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {java: getattr(self, attr) for attr, java in self._KEYS}
        out["locked"] = self.locked
        out["droped"] = self.droped
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        kwargs: dict[str, Any] = {attr: as_int(d.get(java)) for attr, java in cls._KEYS}
        return cls(locked=as_bool(d.get("locked")), droped=as_bool(d.get("droped")), **kwargs)


@dataclass(slots=True)
class ConsumeStatus(JsonBody):
    """Per-topic consume statistics of a client (inside ConsumerRunningInfo.statusTable)."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFailedMsgs": self.consume_failed_msgs,
            "consumeFailedTPS": self.consume_failed_tps,
            "consumeOKTPS": self.consume_ok_tps,
            "consumeRT": self.consume_rt,
            "pullRT": self.pull_rt,
            "pullTPS": self.pull_tps,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            pull_rt=as_float(d.get("pullRT")),
            pull_tps=as_float(d.get("pullTPS")),
            consume_rt=as_float(d.get("consumeRT")),
            consume_ok_tps=as_float(d.get("consumeOKTPS")),
            consume_failed_tps=as_float(d.get("consumeFailedTPS")),
            consume_failed_msgs=as_int(d.get("consumeFailedMsgs")),
        )


@dataclass(slots=True)
class ConsumerRunningInfo(JsonBody):
    """GET_CONSUMER_RUNNING_INFO (307): a client's properties, subscriptions, queues and statistics."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mqTable": {mq: self.mq_table[mq].to_json() for mq in sorted(self.mq_table)},
            "properties": dict(self.properties),
            "statusTable": {topic: status.to_json() for topic, status in self.status_table.items()},
            "subscriptionSet": [
                s.to_json() for s in sorted(self.subscription_set, key=lambda s: (s.topic, s.sub_string))
            ],
        }
        if self.jstack is not None:
            out["jstack"] = self.jstack
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            properties=as_str_map(d.get("properties")),
            subscription_set=[SubscriptionData.from_json(s) for s in as_list(d.get("subscriptionSet"))],
            mq_table=mq_keyed(d.get("mqTable"), ProcessQueueInfo.from_json, "ConsumerRunningInfo.mqTable"),
            status_table={
                as_str(k): ConsumeStatus.from_json(v) for k, v in as_mapping(d.get("statusTable")).items()
            },
            jstack=as_opt_str(d.get("jstack")),
        )
