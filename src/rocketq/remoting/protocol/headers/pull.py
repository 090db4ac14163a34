"""Typed headers of PULL_MESSAGE (11): the request and the four-field response.

Ports of org.apache.rocketmq.common.protocol.header.{PullMessageRequestHeader,
PullMessageResponseHeader} (4.9.8; docs/protocol.md 2.6). `sys_flag` holds PullSysFlag bits
(rocketq.common.constants.PullSysFlag). All four response fields are required: the Java client
unboxes them for every pull answer (0, 19, 20 and 21).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11). `subscription` travels only with FLAG_SUBSCRIPTION (pull / lite-pull)."""

    consumer_group: str = jfield("consumerGroup")
    topic: str = jfield("topic")
    queue_id: Int32 = jfield("queueId")
    queue_offset: int = jfield("queueOffset")
    max_msg_nums: Int32 = jfield("maxMsgNums")
    sys_flag: Int32 = jfield("sysFlag")
    commit_offset: int = jfield("commitOffset")
    suspend_timeout_millis: int = jfield("suspendTimeoutMillis")
    sub_version: int = jfield("subVersion")
    subscription: str | None = jfield("subscription", None)
    expression_type: str | None = jfield("expressionType", None)  # "TAG" (default) or "SQL92"
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class PullMessageResponseHeader(CommandHeader):
    """Answer to PULL_MESSAGE; offsets are logical queue offsets, `max_offset` is exclusive."""

    suggest_which_broker_id: int = jfield("suggestWhichBrokerId")
    next_begin_offset: int = jfield("nextBeginOffset")
    min_offset: int = jfield("minOffset")
    max_offset: int = jfield("maxOffset")
