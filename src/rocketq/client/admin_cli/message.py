"""`rocketq admin` verbs. Messages: look-ups (by id, key, unique key, queue offset), send, consume, print ranges."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import (
    TIME_HELP,
    Rows,
    VerbTable,
    fmt_ms,
    msg_rows,
    parse_bool,
    parse_time,
    security_settings,
)
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.errors import MQClientError
from rocketq.client.producer.producer import Producer
from rocketq.client.route import to_subscribe_queues
from rocketq.common.message import Message, MessageExt, MessageQueue
from rocketq.common.tags import tags_code


async def query_msg_by_id(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows([await admin.query_message_by_id(a.msg_id)])


async def query_msg_by_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows(await admin.query_message_by_key(a.topic, a.key, a.max_num))


async def query_msg_by_unique_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows(await admin.query_message_by_unique_key(a.topic, a.msg_id))


async def send_message(admin: Admin, a: argparse.Namespace) -> Rows:
    async with Producer(
        a.producer_group, namesrv_addr=admin.config.namesrv_addr, **security_settings(a)
    ) as producer:
        r = await producer.send(
            Message(a.topic, a.body.encode("utf-8"), tags=a.tags, keys=a.keys), queue=_queue(a)
        )
    return [
        {
            "status": r.status.value,
            "msgId": r.msg_id,
            "offsetMsgId": r.offset_msg_id,
            "broker": r.queue.broker_name,
            "queue": r.queue.queue_id,
            "queueOffset": r.queue_offset,
        }
    ]


async def consume_message(admin: Admin, a: argparse.Namespace) -> Rows:
    consumer = LitePullConsumer(
        a.group,
        namesrv_addr=admin.config.namesrv_addr,
        auto_commit=False,
        **security_settings(a),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    out: list[MessageExt] = []
    async with consumer:
        queues = await consumer.fetch_message_queues(a.topic)
        consumer.assign(queues)
        await asyncio.sleep(0)
        for mq in queues:
            for _ in range(50):
                if mq in consumer.assignment():
                    break
                await asyncio.sleep(0.02)
            if mq in consumer.assignment():
                await consumer.seek_to_begin(mq)
        deadline = time.monotonic() + a.timeout_ms / 1000
        while len(out) < a.count and time.monotonic() < deadline:
            out.extend(await consumer.poll(timeout_ms=max(1, int((deadline - time.monotonic()) * 1000))))
    return msg_rows(out[: a.count])


def _queue(a: argparse.Namespace) -> MessageQueue | None:
    if a.broker is None and a.qid is None:
        return None
    if a.broker is None or a.qid is None:
        raise MQClientError("sendMessage: -b (broker name) and -i (queue id) go together")
    return MessageQueue(a.topic, a.broker, a.qid)


# A bound on what one print verb reads, whatever the range asks for (the output is for a terminal).
PRINT_LIMIT = 100_000
PULL_BATCH = 32


async def _read_range(admin: Admin, mq: MessageQueue, start: int, end: int) -> list[MessageExt]:
    out: list[MessageExt] = []
    offset = start
    while offset < end and len(out) < PRINT_LIMIT:
        result = await admin.pull_messages(mq, offset, min(PULL_BATCH, end - offset))
        if not result.messages or result.next_begin_offset <= offset:
            break
        out.extend(m for m in result.messages if m.queue_offset < end)
        offset = result.next_begin_offset
    return out


async def query_msg_by_offset(admin: Admin, a: argparse.Namespace) -> Rows:
    mq = MessageQueue(a.topic, a.broker_name, a.queue_id)
    found = [m for m in (await admin.pull_messages(mq, a.offset, 1)).messages if m.queue_offset == a.offset]
    if not found:
        raise MQClientError(f"no message at offset {a.offset} of {a.broker_name}:{a.queue_id} of {a.topic}")
    return msg_rows(found)


async def print_msg(admin: Admin, a: argparse.Namespace) -> Rows:
    """Every message of the topic stored between -b and -e (mqadmin printMsg), queue by queue."""
    rows: Rows = []
    for mq in sorted(to_subscribe_queues(a.topic, await admin.topic_route(a.topic))):
        start, end = await admin.queue_offset_range(mq, a.begin, a.end)
        rows += _print_rows(await _read_range(admin, mq, start, end), a)
    return rows


async def print_msg_by_queue(admin: Admin, a: argparse.Namespace) -> Rows:
    """The messages of one queue stored between -b and -e; with -f, counts per tag instead."""
    mq = MessageQueue(a.topic, a.broker_name, a.queue_id)
    start, end = await admin.queue_offset_range(mq, a.begin, a.end)
    msgs = await _read_range(admin, mq, start, end)
    if a.calculate:
        counts = Counter(m.tags or "" for m in msgs)
        return [{"tag": tag, "count": n} for tag, n in counts.most_common()]
    return _print_rows(msgs, a)


def _print_rows(msgs: list[MessageExt], a: argparse.Namespace) -> Rows:
    rows = msg_rows(
        [m for m in msgs if a.sub_expression in ("*", None) or m.tags in a.sub_expression.split("||")]
    )
    if not a.print_body:
        for row in rows:
            row.pop("body", None)
            row.pop("bodyEncoding", None)
    return rows


async def query_consume_queue(admin: Admin, a: argparse.Namespace) -> Rows:
    """Entries of one consume queue from -i: queue offset, commit-log offset, size, tags hash (mqadmin queryCq).

    Read through pulls (QUERY_CONSUME_QUEUE is not served): the same three fields, from the messages themselves.
    """
    mq = MessageQueue(a.topic, a.broker, a.queue)
    msgs = await _read_range(admin, mq, a.index, a.index + a.count)
    return [
        {
            "queueOffset": m.queue_offset,
            "commitLogOffset": m.commit_log_offset,
            "size": m.store_size,
            "tagsCode": tags_code(m.tags),
            "tags": m.tags or "",
            "stored": fmt_ms(m.store_timestamp),
        }
        for m in msgs
    ]


def _range_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-b",
        "--beginTimestamp",
        "--begin",
        dest="begin",
        type=parse_time,
        help=f"from this time ({TIME_HELP}); default the start",
    )
    p.add_argument(
        "-e",
        "--endTimestamp",
        "--end",
        dest="end",
        type=parse_time,
        help=f"until this time ({TIME_HELP}); default now",
    )
    p.add_argument(
        "-s",
        "--subExpression",
        "--sub-expression",
        dest="sub_expression",
        default="*",
        help="tags, e.g. 'TagA || TagB' (default *)",
    )
    p.add_argument(
        "-d",
        "--printBody",
        "--print-body",
        dest="print_body",
        type=parse_bool,
        default=True,
        help="print the bodies (default true)",
    )
    p.add_argument(
        "-c",
        "--charsetName",
        "--charset",
        dest="charset",
        default="UTF-8",
        help="accepted for mqadmin compatibility: bodies are shown as UTF-8 text, else base64",
    )


def register(table: VerbTable) -> None:
    p = table.verb(
        "query-msg-by-id", query_msg_by_id, "look a message up by its offset message id", "queryMsgById"
    )
    p.add_argument(
        "-i",
        "--msg-id",
        "--msgId",
        dest="msg_id",
        required=True,
        help="offset message id (as sendMessage prints it)",
    )
    p.add_argument("-g", "--consumerGroup", dest="consumer_group", help="accepted for mqadmin compatibility")
    p.add_argument("-d", "--clientId", dest="client_id", help="accepted for mqadmin compatibility")
    p = table.verb("query-msg-by-key", query_msg_by_key, "look messages up by key", "queryMsgByKey")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-k", "--key", "--msgKey", dest="key", required=True, help="message key (KEYS property)")
    p.add_argument(
        "--max-num", "--maxNum", dest="max_num", type=int, default=32, help="at most this many (default 32)"
    )
    p = table.verb(
        "query-msg-by-unique-key",
        query_msg_by_unique_key,
        "look a message up by its client id (UNIQ_KEY)",
        "queryMsgByUniqueKey",
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument(
        "-i", "--msg-id", "--msgId", dest="msg_id", required=True, help="the client message id (msgId)"
    )
    p.add_argument("-g", "--consumerGroup", dest="consumer_group", help="accepted for mqadmin compatibility")
    p.add_argument("-d", "--clientId", dest="client_id", help="accepted for mqadmin compatibility")
    p.add_argument(
        "-a",
        "--showAll",
        dest="show_all",
        action="store_true",
        help="accepted for mqadmin compatibility (all are shown)",
    )
    p = table.verb(
        "query-msg-by-offset",
        query_msg_by_offset,
        "the message at one offset of one queue",
        "queryMsgByOffset",
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument(
        "-b", "--brokerName", "--broker-name", dest="broker_name", required=True, help="broker name"
    )
    p.add_argument("-i", "--queueId", "--queue-id", dest="queue_id", type=int, required=True, help="queue id")
    p.add_argument("-o", "--offset", type=int, required=True, help="queue offset")
    p = table.verb("send-message", send_message, "send one message", "sendMessage")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-p", "--body", required=True, help="body (sent as UTF-8)")
    p.add_argument("-c", "--tags", help="tag")
    p.add_argument("-k", "--keys", "--key", dest="keys", help="keys, space-separated")
    p.add_argument("-b", "--broker", help="to this broker name (with -i)")
    p.add_argument("-i", "--qid", type=int, help="to this queue id (with -b)")
    p.add_argument(
        "-m",
        "--msgTraceEnable",
        dest="msg_trace",
        type=parse_bool,
        default=False,
        help="accepted for mqadmin compatibility",
    )
    p.add_argument(
        "--producer-group",
        default="PID_ROCKETQ_ADMIN",
        help="producer group to send as (default PID_ROCKETQ_ADMIN)",
    )
    p = table.verb(
        "consume-message",
        consume_message,
        "print messages of a topic from its start (commits nothing)",
        "consumeMessage",
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument(
        "-g",
        "--group",
        "--consumerGroup",
        dest="group",
        default="TOOLS_CONSUMER",
        help="consumer group (default TOOLS_CONSUMER)",
    )
    p.add_argument(
        "-c",
        "--count",
        "--MessageNumber",
        dest="count",
        type=int,
        default=32,
        help="at most this many messages (default 32)",
    )
    p.add_argument(
        "--timeout-ms", type=int, default=3000, help="stop waiting after this long (ms, default 3000)"
    )
    p = table.verb("print-msg", print_msg, "every message of a topic stored in a time range", "printMsg")
    p.add_argument("-t", "--topic", required=True, help="topic")
    _range_options(p)
    p = table.verb(
        "print-msg-by-queue",
        print_msg_by_queue,
        "the messages of one queue in a time range, or counts per tag",
        "printMsgByQueue",
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument(
        "-a", "--brokerName", "--broker-name", dest="broker_name", required=True, help="broker name"
    )
    p.add_argument("-i", "--queueId", "--queue-id", dest="queue_id", type=int, required=True, help="queue id")
    p.add_argument(
        "-f",
        "--calculate",
        type=parse_bool,
        default=False,
        help="count the messages per tag instead of printing them",
    )
    p.add_argument(
        "-p",
        "--print",
        dest="print_msgs",
        type=parse_bool,
        default=True,
        help="accepted for mqadmin compatibility",
    )
    _range_options(p)
    p = table.verb("query-consume-queue", query_consume_queue, "entries of one consume queue", "queryCq")
    table.alias("queryConsumeQueue", "query-consume-queue")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-q", "--queue", type=int, required=True, help="queue id")
    p.add_argument("-i", "--index", type=int, default=0, help="first queue offset (default 0)")
    p.add_argument("-c", "--count", type=int, default=10, help="entries (default 10)")
    p.add_argument("-b", "--broker", required=True, help="broker name")
    p.add_argument("-g", "--consumer", help="accepted for mqadmin compatibility")
