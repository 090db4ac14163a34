"""Typed headers of queue and consumer offsets: query/update consumer offset, max/min, search, earliest.

Ports of org.apache.rocketmq.common.protocol.header.{QueryConsumerOffset*, UpdateConsumerOffset*,
GetMaxOffset*, GetMinOffset*, SearchOffset*, GetEarliestMsgStoretime*} (4.9.8; docs/protocol.md 2.7).
Offsets are logical queue offsets ("next message to consume" for committed offsets); `bname` is
inherited from Java's RpcRequestHeader.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14); "none stored" is answered with code 22, not offset 0."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int = jfield("offset")


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15), normally oneway, every 5 s per queue."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    commit_offset: int = jfield("commitOffset")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetResponseHeader(CommandHeader):
    """Empty."""


@dataclass(frozen=True, slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30): the offset the next message of the queue will get."""

    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int = jfield("offset")


@dataclass(frozen=True, slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31): the smallest logical offset still available."""

    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int = jfield("offset")


@dataclass(frozen=True, slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29): the offset whose store time is nearest `timestamp` (ms)."""

    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    timestamp: int = jfield("timestamp")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int = jfield("offset")


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)."""

    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """Store time (ms) of the message at the queue's min offset; -1 if unavailable."""

    timestamp: int = jfield("timestamp")
