"""Typed headers of sending: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320), replies.

Ports of org.apache.rocketmq.common.protocol.header.{SendMessageRequestHeader,
SendMessageRequestHeaderV2, SendMessageResponseHeader, ReplyMessageRequestHeader} (4.9.8; docs/protocol.md
2.4, 2.13). V2 carries the same data under one-letter keys a..n; brokers convert it with `to_v1()` and
clients build it with `from_v1()`, as Java's createSendMessageRequestHeaderV1/V2 do. Every V1 class
also inherits `bname` from Java's RpcRequestHeader (4.9.5+ clients fill it, V2 fills `n` instead).
Deviation: SendMessageResponseHeader also names the two extFields every Java broker adds to a send
response (MSG_REGION, TRACE_ON) so that the broker cannot forget them and the client can read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324): the long-named send header."""

    producer_group: str = jfield("producerGroup")
    topic: str = jfield("topic")
    default_topic: str = jfield("defaultTopic")
    default_topic_queue_nums: Int32 = jfield("defaultTopicQueueNums")
    queue_id: Int32 = jfield("queueId")  # < 0: the broker picks a random writable queue
    sys_flag: Int32 = jfield("sysFlag")
    born_timestamp: int = jfield("bornTimestamp")
    flag: Int32 = jfield("flag")
    properties: str | None = jfield("properties", None)
    reconsume_times: Int32 | None = jfield("reconsumeTimes", None)
    unit_mode: bool = jfield("unitMode", False)
    batch: bool = jfield("batch", False)
    max_reconsume_times: Int32 | None = jfield("maxReconsumeTimes", None)
    bname: str | None = jfield("bname", None)

    def to_v2(self) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2.from_v1(self)


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320): SendMessageRequestHeader with one-letter keys."""

    a: str = jfield("a")  # producerGroup
    b: str = jfield("b")  # topic
    c: str = jfield("c")  # defaultTopic
    d: Int32 = jfield("d")  # defaultTopicQueueNums
    e: Int32 = jfield("e")  # queueId
    f: Int32 = jfield("f")  # sysFlag
    g: int = jfield("g")  # bornTimestamp
    h: Int32 = jfield("h")  # flag
    i: str | None = jfield("i", None)  # properties
    j: Int32 | None = jfield("j", None)  # reconsumeTimes
    k: bool = jfield("k", False)  # unitMode
    l: Int32 | None = jfield("l", None)  # noqa: E741 - Java's name; maxReconsumeTimes ("consumeRetryTimes")
    m: bool = jfield("m", False)  # batch
    n: str | None = jfield("n", None)  # brokerName
    bname: str | None = jfield("bname", None)  # inherited from RpcRequestHeader; Java clients leave it null

    def to_v1(self) -> SendMessageRequestHeader:
        """The long-named header the broker works with (Java createSendMessageRequestHeaderV1)."""
        return SendMessageRequestHeader(
            producer_group=self.a,
            topic=self.b,
            default_topic=self.c,
            default_topic_queue_nums=self.d,
            queue_id=self.e,
            sys_flag=self.f,
            born_timestamp=self.g,
            flag=self.h,
            properties=self.i,
            reconsume_times=self.j,
            unit_mode=self.k,
            batch=self.m,
            max_reconsume_times=self.l,
            bname=self.n if self.n is not None else self.bname,
        )

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        """The short-keyed header Java clients send by default (createSendMessageRequestHeaderV2)."""
        return cls(
            a=v1.producer_group,
            b=v1.topic,
            c=v1.default_topic,
            d=v1.default_topic_queue_nums,
            e=v1.queue_id,
            f=v1.sys_flag,
            g=v1.born_timestamp,
            h=v1.flag,
            i=v1.properties,
            j=v1.reconsume_times,
            k=v1.unit_mode,
            l=v1.max_reconsume_times,
            m=v1.batch,
            n=v1.bname,
        )


@dataclass(frozen=True, slots=True)
class SendMessageResponseHeader(CommandHeader):
    """Answer to 10/310/320/324/325. `msg_id` is the offset msgId (batch: the ids joined with ',')."""

    msg_id: str = jfield("msgId")
    queue_id: Int32 = jfield("queueId")
    queue_offset: int = jfield("queueOffset")
    transaction_id: str | None = jfield("transactionId", None)
    # Not fields of the Java class, but every Java broker puts them in the response's extFields and
    # the Java client reads them without a null check on the map (docs/protocol.md 2.4).
    msg_region: str | None = jfield("MSG_REGION", None)
    trace_on: bool | None = jfield("TRACE_ON", None)


@dataclass(frozen=True, slots=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326, broker -> requesting client); body = the reply body."""

    producer_group: str = jfield("producerGroup")
    topic: str = jfield("topic")
    default_topic: str = jfield("defaultTopic")
    default_topic_queue_nums: Int32 = jfield("defaultTopicQueueNums")
    queue_id: Int32 = jfield("queueId")
    sys_flag: Int32 = jfield("sysFlag")
    born_timestamp: int = jfield("bornTimestamp")
    flag: Int32 = jfield("flag")
    born_host: str = jfield("bornHost")
    store_host: str = jfield("storeHost")
    store_timestamp: int = jfield("storeTimestamp")
    properties: str | None = jfield("properties", None)
    reconsume_times: Int32 | None = jfield("reconsumeTimes", None)
    unit_mode: bool = jfield("unitMode", False)
