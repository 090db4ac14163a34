"""`rocketq admin` verbs. Messages: look-ups, send, consume."""

from __future__ import annotations

import argparse
import asyncio
import time

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable, msg_rows
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.producer.producer import Producer
from rocketq.common.message import Message, MessageExt


async def query_msg_by_id(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows([await admin.query_message_by_id(a.msg_id)])


async def query_msg_by_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows(await admin.query_message_by_key(a.topic, a.key, a.max_num))


async def query_msg_by_unique_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return msg_rows(await admin.query_message_by_unique_key(a.topic, a.msg_id))


async def send_message(admin: Admin, a: argparse.Namespace) -> Rows:
    async with Producer(a.producer_group, namesrv_addr=admin.config.namesrv_addr) as producer:
        r = await producer.send(Message(a.topic, a.body.encode("utf-8"), tags=a.tags, keys=a.keys))
    return [{"status": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id, "broker": r.queue.broker_name,
             "queue": r.queue.queue_id, "queueOffset": r.queue_offset}]


async def consume_message(admin: Admin, a: argparse.Namespace) -> Rows:
    consumer = LitePullConsumer(
        a.group, namesrv_addr=admin.config.namesrv_addr, auto_commit=False,
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


def register(table: VerbTable) -> None:
    p = table.verb("query-msg-by-id", query_msg_by_id, "look a message up by its offset message id")
    p.add_argument("-i", "--msg-id", required=True)
    p = table.verb("query-msg-by-key", query_msg_by_key, "look messages up by key")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("--max-num", type=int, default=32)
    p = table.verb("query-msg-by-unique-key", query_msg_by_unique_key, "look a message up by its client id (UNIQ_KEY)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-i", "--msg-id", required=True)
    p = table.verb("send-message", send_message, "send one message")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-p", "--body", required=True)
    p.add_argument("--tags")
    p.add_argument("--keys")
    p.add_argument("--producer-group", default="PID_ROCKETQ_ADMIN")
    p = table.verb("consume-message", consume_message, "print messages of a topic from its start (commits nothing)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="TOOLS_CONSUMER")
    p.add_argument("-n", "--count", type=int, default=32)
    p.add_argument("--timeout-ms", type=int, default=3000)
