"""Reading traces back: the trace records of one message, as mqadmin queryMsgTraceById shows them.

Port of org.apache.rocketmq.client.trace.TraceView.decodeFromTraceTransData and
org.apache.rocketmq.tools.command.message.QueryMsgTraceByIdSubCommand (4.9.8): the trace topic is
queried by key (every trace message is indexed by the ids of the messages it describes), each body
decoded with TraceDataEncoder's format, and the records of that message id kept. Traces written by
the Java client (enableMsgTrace) and by ours read the same way.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rocketq.client.trace.encoder import decode
from rocketq.common import constants as C

if TYPE_CHECKING:
    from rocketq.client.admin import Admin
    from rocketq.common.message import MessageExt

MAX_TRACE_MESSAGES = 64  # QueryMsgTraceByIdSubCommand's maxNum


@dataclass(slots=True)
class TraceView:
    msg_type: str  # Pub, SubBefore, SubAfter, EndTransaction
    msg_id: str
    group_name: str
    time_stamp: int
    cost_time: int
    status: str  # success / failed
    topic: str
    tags: str
    keys: str
    store_host: str
    client_host: str  # the host that wrote the trace (the trace message's born host)
    offset_msg_id: str
    request_id: str
    retry_times: int
    context_code: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def decode_trace_message(msg_id: str, message: MessageExt) -> list[TraceView]:
    """TraceView.decodeFromTraceTransData: the records of `msg_id` in one trace message."""
    body = message.body.decode("utf-8", errors="replace")
    host, port = message.born_host
    views = []
    for ctx in decode(body):
        bean = ctx.beans[0]
        if bean.msg_id != msg_id:
            continue
        views.append(TraceView(
            msg_type=ctx.trace_type.value, msg_id=msg_id, group_name=ctx.group_name or "", time_stamp=ctx.time_stamp,
            cost_time=ctx.cost_time, status="success" if ctx.success else "failed", topic=bean.topic or "",
            tags=bean.tags or "", keys=bean.keys or "", store_host=bean.store_host or "", client_host=f"{host}:{port}",
            offset_msg_id=bean.offset_msg_id or "", request_id=ctx.request_id or "", retry_times=bean.retry_times,
            context_code=ctx.context_code,
        ))  # fmt: skip
    return views


async def query_msg_trace_by_id(
    admin: Admin, msg_id: str, trace_topic: str = C.RMQ_SYS_TRACE_TOPIC
) -> list[TraceView]:
    """Every trace record of `msg_id` (the client message id, UNIQ_KEY), oldest first."""
    now = int(time.time() * 1000)
    messages = await admin.query_message_by_key(trace_topic, msg_id, MAX_TRACE_MESSAGES, 0, now + 60_000)
    views = [view for message in messages for view in decode_trace_message(msg_id, message)]
    return sorted(views, key=lambda v: (v.time_stamp, v.msg_type != "Pub"))


# -- `rocketq admin query-msg-trace-by-id` (kept here so the verb table only has to register it) -------
async def _verb(admin: Admin, a: argparse.Namespace) -> list[dict[str, Any]]:
    import datetime as dt

    rows = []
    for v in await query_msg_trace_by_id(admin, a.msg_id.strip(), a.trace_topic):
        when = (
            dt.datetime.fromtimestamp(v.time_stamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
            if v.time_stamp
            else "-"
        )
        rows.append({
            "type": v.msg_type, "group": v.group_name, "clientHost": v.client_host, "time": when,
            "costTimes": f"{v.cost_time}ms", "status": v.status, "topic": v.topic, "storeHost": v.store_host,
            "retryTimes": v.retry_times, "requestId": v.request_id,
        })  # fmt: skip
    return rows


def add_trace_verb(verb: Callable[..., argparse.ArgumentParser]) -> None:
    """Registers query-msg-trace-by-id with the admin CLI's `verb(name, fn, help)`."""
    p = verb(
        "query-msg-trace-by-id",
        _verb,
        "the trace of a message: who sent, stored and consumed it, when",
        "queryMsgTraceById",
    )
    p.add_argument("-i", "--msg-id", required=True, help="the message id (UNIQ_KEY) a send returned")
    p.add_argument(
        "-t", "--trace-topic", default=C.RMQ_SYS_TRACE_TOPIC, help="the topic the traces were written to"
    )
