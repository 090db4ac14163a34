"""Message trace records in RocketMQ 4.x's text format (TraceDataEncoder), both ways.

Port of org.apache.rocketmq.client.trace.TraceDataEncoder, TraceContext, TraceBean and TraceType
(4.9.8). A trace message's body is a run of records, each ended by FIELD_SPLITOR (\\x02), whose fields
are separated by CONTENT_SPLITOR (\\x01), in Java's order:

    Pub:            type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength,
                    costTime, msgType ordinal, offsetMsgId, success
    SubBefore:      type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
    SubAfter:       type, requestId, msgId, costTime, success, keys, contextCode, timestamp, group
    EndTransaction: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, msgType
                    ordinal, transactionId, transactionState, fromTransactionCheck

As in Java, a missing string is written as "null" (StringBuilder.append(null)), and the decoder
accepts the older and newer Pub lengths (13, 14, 15+ fields: offsetMsgId and clientHost optional).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rocketq.common import constants as C

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """org.apache.rocketmq.common.message.MessageType: written as its ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """org.apache.rocketmq.client.consumer.listener.ConsumeReturnType: SubAfter's contextCode."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(slots=True)
class TraceBean:
    topic: str | None = ""
    msg_id: str | None = ""
    offset_msg_id: str | None = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str | None = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: TraceMessageType | None = None
    transaction_state: str | None = None  # LocalTransactionState name
    transaction_id: str | None = None
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    trace_type: TraceType
    time_stamp: int = 0
    region_id: str | None = ""
    group_name: str | None = ""
    cost_time: int = 0
    success: bool = True
    request_id: str | None = ""
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


def _s(value: object) -> str:
    """Java's StringBuilder.append: null is "null", booleans are lower case."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _line(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_s(f) for f in fields)


def encode(ctx: TraceContext) -> tuple[str, list[str]]:
    """TraceDataEncoder.encoderFromContextBean: the record text and the keys the trace message is indexed by."""
    t = ctx.trace_type
    if t is TraceType.Pub:
        b = ctx.beans[0]
        text = _line(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags, b.keys,
                     b.store_host, b.body_length, ctx.cost_time, _ordinal(b.msg_type), b.offset_msg_id,
                     ctx.success) + FIELD_SPLITOR  # fmt: skip
    elif t is TraceType.SubBefore:
        text = "".join(
            _line(
                t.value,
                ctx.time_stamp,
                ctx.region_id,
                ctx.group_name,
                ctx.request_id,
                b.msg_id,
                b.retry_times,
                b.keys,
            )
            + FIELD_SPLITOR
            for b in ctx.beans
        )
    elif t is TraceType.SubAfter:
        text = "".join(
            _line(
                t.value,
                ctx.request_id,
                b.msg_id,
                ctx.cost_time,
                ctx.success,
                b.keys,
                ctx.context_code,
                ctx.time_stamp,
                ctx.group_name,
            )
            + FIELD_SPLITOR
            for b in ctx.beans
        )
    else:
        b = ctx.beans[0]
        text = _line(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags, b.keys,
                     b.store_host, _ordinal(b.msg_type), b.transaction_id, b.transaction_state,
                     b.from_transaction_check) + FIELD_SPLITOR  # fmt: skip
    keys: list[str] = []
    for b in ctx.beans:
        keys.append(_s(b.msg_id))
        if b.keys:
            keys.extend(k for k in b.keys.split(C.KEY_SEPARATOR) if k)
    return text, keys


def _ordinal(msg_type: TraceMessageType | None) -> int:
    return int(msg_type) if msg_type is not None else 0


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def decode(data: str) -> list[TraceContext]:
    """TraceDataEncoder.decoderFromTraceDataString; records of an unknown type are skipped, as in Java."""
    out: list[TraceContext] = []
    for record in data.split(FIELD_SPLITOR):
        line = record.split(CONTENT_SPLITOR)
        kind = line[0]
        try:
            if kind == "Pub":
                out.append(_decode_pub(line))
            elif kind == "SubBefore":
                out.append(TraceContext(
                    TraceType.SubBefore, int(line[1]), line[2], line[3], request_id=line[4],
                    beans=[TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7])],
                ))  # fmt: skip
            elif kind == "SubAfter":
                ctx = TraceContext(
                    TraceType.SubAfter,
                    request_id=line[1],
                    cost_time=int(line[3]),
                    success=_bool(line[4]),
                    beans=[TraceBean(msg_id=line[2], keys=line[5])],
                )
                if len(line) >= 7:
                    ctx.context_code = int(line[6])
                if len(line) >= 9:
                    ctx.time_stamp, ctx.group_name = int(line[7]), line[8]
                out.append(ctx)
            elif kind == "EndTransaction":
                out.append(TraceContext(
                    TraceType.EndTransaction, int(line[1]), line[2], line[3],
                    beans=[TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
                                     msg_type=TraceMessageType(int(line[9])), transaction_id=line[10],
                                     transaction_state=line[11], from_transaction_check=_bool(line[12]))],
                ))  # fmt: skip
        except (IndexError, ValueError):
            continue  # a damaged record: Java would throw for the whole body; we keep the others
    return out


def _decode_pub(line: list[str]) -> TraceContext:
    bean = TraceBean(
        topic=line[4],
        msg_id=line[5],
        tags=line[6],
        keys=line[7],
        store_host=line[8],
        body_length=int(line[9]),
        msg_type=TraceMessageType(int(line[11])),
    )
    ctx = TraceContext(TraceType.Pub, int(line[1]), line[2], line[3], cost_time=int(line[10]), beans=[bean])
    if len(line) == 13:
        ctx.success = _bool(line[12])
    elif len(line) >= 14:
        bean.offset_msg_id = line[12]
        ctx.success = _bool(line[13])
        if len(line) >= 15:
            bean.client_host = line[14]
    return ctx
