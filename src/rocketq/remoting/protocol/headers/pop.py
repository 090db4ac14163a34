"""Typed headers of RocketMQ 5 POP consumption (SimpleConsumer) and the extraInfo receipt-handle text.

Ports of org.apache.rocketmq.remoting.protocol.header.{PopMessageRequestHeader,
PopMessageResponseHeader, AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader,
ChangeInvisibleTimeResponseHeader, ExtraInfoUtil} (RocketMQ 5 mainline; codes 200050-200053).
Deviation: of the RPC base-class fields (ns, nsd, bname, oway, lo) only `bname` is kept; the others
are ignored like any unknown key.

extraInfo (the message property POP_CK, echoed by ACK / CHANGE_INVISIBLE) is space separated:
`ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId [queueOffset]`, where
`retry` is "0" for a normal topic, "1" for a `%RETRY%group_topic` and "2" for a
`%RETRY%group+topic` (v2) pop retry topic. The *OffsetInfo response fields are `;`-joined
`retry queueId value` triples (values `,`-joined for msgOffsetInfo), keyed `retry@queueId` once parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

from rocketq.common.constants import RETRY_GROUP_TOPIC_PREFIX
from rocketq.common.errors import RocketQError
from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield

POP_ORDER_REVIVE_QUEUE: Final = 999  # reviveQid of orderly pops (KeyBuilder.POP_ORDER_REVIVE_QUEUE)
NORMAL_TOPIC: Final = "0"
RETRY_TOPIC: Final = "1"
RETRY_TOPIC_V2: Final = "2"
INIT_MODE_LAST: Final = 0  # ConsumeInitMode.MAX
INIT_MODE_FIRST: Final = 1  # ConsumeInitMode.MIN


@dataclass(frozen=True, slots=True)
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050): take up to `max_msg_nums` messages invisible for `invisible_time` ms."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")  # -1: any queue of this broker
    max_msg_nums: Int32 = jfield("maxMsgNums")
    invisible_time: int = jfield("invisibleTime")
    poll_time: int = jfield("pollTime")  # ms the broker may hold the request when nothing is there
    born_time: int = jfield("bornTime")
    init_mode: Int32 = jfield("initMode")
    exp_type: str | None = jfield("expType", None)
    exp: str | None = jfield("exp", None)
    order: bool = jfield("order", False)
    attempt_id: str | None = jfield("attemptId", None)
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class PopMessageResponseHeader(CommandHeader):
    pop_time: int = jfield("popTime")
    invisible_time: int = jfield("invisibleTime")
    revive_qid: Int32 = jfield("reviveQid")
    rest_num: int = jfield("restNum")
    start_offset_info: str | None = jfield("startOffsetInfo", None)
    msg_offset_info: str | None = jfield("msgOffsetInfo", None)
    order_count_info: str | None = jfield("orderCountInfo", None)


@dataclass(frozen=True, slots=True)
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051): the message at `offset` is consumed; `extra_info` is its receipt handle."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    extra_info: str = jfield("extraInfo")
    offset: int = jfield("offset")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053): make the message invisible for `invisible_time` ms more."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    extra_info: str = jfield("extraInfo")
    offset: int = jfield("offset")
    invisible_time: int = jfield("invisibleTime")
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    pop_time: int = jfield("popTime")
    invisible_time: int = jfield("invisibleTime")
    revive_qid: Int32 = jfield("reviveQid")


# -- extraInfo (ExtraInfoUtil) --------------------------------------------------------------------
class ExtraInfoError(RocketQError, ValueError):
    """An extraInfo / offset-info text that does not parse."""


def pop_retry_topic_v1(topic: str, group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def pop_retry_topic_v2(topic: str, group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and "+" in topic


def retry_flag(topic: str) -> str:
    """ "0" normal topic, "1" (v1) or "2" (v2) pop retry topic, as ExtraInfoUtil.getRetry."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, retry: str) -> str:
    """The topic a popped message was read from, given the subscribed topic and its retry flag."""
    if retry == NORMAL_TOPIC:
        return topic
    if retry == RETRY_TOPIC:
        return pop_retry_topic_v1(topic, group)
    if retry == RETRY_TOPIC_V2:
        return pop_retry_topic_v2(topic, group)
    raise ExtraInfoError(f"unknown retry flag {retry!r} in extraInfo")


class ExtraInfo(NamedTuple):
    """A parsed extraInfo (receipt handle core)."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.retry)

    def build(self) -> str:
        parts = [
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry,
            self.broker_name,
            self.queue_id,
        ]
        if self.queue_offset is not None:
            parts.append(self.queue_offset)
        return " ".join(str(p) for p in parts)

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        fields = text.split(" ")
        if len(fields) < 7:
            raise ExtraInfoError(f"extraInfo {text!r} has {len(fields)} fields, needs 7 or 8")
        try:
            return cls(
                int(fields[0]),
                int(fields[1]),
                int(fields[2]),
                int(fields[3]),
                fields[4],
                fields[5],
                int(fields[6]),
                int(fields[7]) if len(fields) > 7 else None,
            )
        except ValueError:
            raise ExtraInfoError(f"extraInfo {text!r} has a non-numeric field") from None


def build_extra_info(
    ck_queue_offset: int,
    pop_time: int,
    invisible_time: int,
    revive_qid: int,
    topic: str,
    broker_name: str,
    queue_id: int,
    queue_offset: int | None = None,
) -> str:
    """ExtraInfoUtil.buildExtraInfo: the retry flag is derived from `topic`."""
    return ExtraInfo(
        ck_queue_offset,
        pop_time,
        invisible_time,
        revive_qid,
        retry_flag(topic),
        broker_name,
        queue_id,
        queue_offset,
    ).build()


def offset_info_entry(topic: str, queue_id: int, value: int | list[int]) -> str:
    """One `retry queueId value` triple of startOffsetInfo / orderCountInfo / msgOffsetInfo (join with ";")."""
    text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return f"{retry_flag(topic)} {queue_id} {text}"


def offset_info_key(topic: str, queue_id: int) -> str:
    """The key a parsed offset info is looked up by (ExtraInfoUtil.getStartOffsetInfoMapKey)."""
    return f"{retry_flag(topic)}@{queue_id}"


def _parse_triples(text: str | None, what: str) -> dict[str, str]:
    if not text:
        return {}
    out: dict[str, str] = {}
    for one in text.split(";"):
        fields = one.split(" ")
        if len(fields) != 3:
            raise ExtraInfoError(f"{what} entry {one!r} is not 'retry queueId value'")
        key = f"{fields[0]}@{fields[1]}"
        if key in out:
            raise ExtraInfoError(f"{what} has {key} twice")
        out[key] = fields[2]
    return out


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in _parse_triples(text, "startOffsetInfo").items()}
    except ExtraInfoError:
        raise
    except ValueError:
        raise ExtraInfoError(f"startOffsetInfo {text!r} has a non-numeric value") from None


def parse_order_count_info(text: str | None) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in _parse_triples(text, "orderCountInfo").items()}
    except ExtraInfoError:
        raise
    except ValueError:
        raise ExtraInfoError(f"orderCountInfo {text!r} has a non-numeric value") from None


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    try:
        return {k: [int(o) for o in v.split(",")] for k, v in _parse_triples(text, "msgOffsetInfo").items()}
    except ExtraInfoError:
        raise
    except ValueError:
        raise ExtraInfoError(f"msgOffsetInfo {text!r} has a non-numeric value") from None
