"""Typed header of CONSUMER_SEND_MSG_BACK (36): a consumer hands a failed message back for retry.

Port of org.apache.rocketmq.common.protocol.header.ConsumerSendMsgBackRequestHeader (4.9.8;
docs/protocol.md 2.8). `offset` is the message's commit-log (physical) offset; `delay_level` 0 lets the
broker pick 3 + reconsumeTimes, < 0 sends it straight to the DLQ.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    offset: int = jfield("offset")
    group: str = jfield("group")
    delay_level: Int32 = jfield("delayLevel")
    origin_msg_id: str | None = jfield("originMsgId", None)
    origin_topic: str | None = jfield("originTopic", None)
    unit_mode: bool = jfield("unitMode", False)
    max_reconsume_times: Int32 | None = jfield("maxReconsumeTimes", None)
    bname: str | None = jfield("bname", None)
