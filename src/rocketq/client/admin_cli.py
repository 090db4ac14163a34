"""`rocketq admin --namesrv-addr ADDR <verb> ...`: the cluster administration commands of API.md.

The verbs and their one-letter options follow RocketMQ's mqadmin (updateTopic -t -c -b -r -w -o, ...)
in kebab-case. Output is a table by default and JSON with --json (for scripts). Exit status: 0 on
success, 1 when the cluster refused or could not be reached (one line on stderr says why), 2 on bad
usage.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rocketq.client.admin import Admin
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.producer.producer import Producer
from rocketq.client.trace.view import add_trace_verb
from rocketq.common.errors import RocketQError
from rocketq.common.message import Message, MessageExt

Rows = list[dict[str, Any]]


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def parse_time(text: str) -> int:
    """Epoch ms from `now`, a number of ms, or 'YYYY-MM-DD HH:MM:SS' (local time)."""
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        return int(text)
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d#%H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return int(dt.datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a time: {text!r} (use epoch ms, now, or 'YYYY-MM-DD HH:MM:SS')")


def _fmt_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ms > 0 else "-"


def table(rows: Rows) -> str:
    if not rows:
        return "(none)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _msg_rows(msgs: Sequence[MessageExt]) -> Rows:
    return [
        {
            "msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "topic": m.topic, "broker": m.broker_name or f"{m.store_host[0]}:{m.store_host[1]}",
            "queue": m.queue_id, "offset": m.queue_offset, "tags": m.tags or "", "keys": " ".join(m.keys),
            "stored": _fmt_ms(m.store_timestamp), "body": _body(m.body),
        }
        for m in msgs
    ]


def _body(body: bytes, limit: int = 64) -> str:
    text = body.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- verbs -------------------------------------------------------------------------------------------------
async def update_topic(admin: Admin, a: argparse.Namespace) -> Rows:
    addrs = await admin.create_topic(
        a.topic, a.cluster if not a.broker else None, a.read_queues, a.write_queues, perm=a.perm, order=a.order, broker_addr=a.broker
    )
    return [{"topic": a.topic, "broker": addr, "readQueues": a.read_queues, "writeQueues": a.write_queues, "perm": a.perm} for addr in addrs]


async def delete_topic(admin: Admin, a: argparse.Namespace) -> Rows:
    await admin.delete_topic(a.topic, a.cluster)
    return [{"topic": a.topic, "cluster": a.cluster, "deleted": True}]


async def topic_list(admin: Admin, a: argparse.Namespace) -> Rows:
    return [{"topic": t} for t in await admin.topic_list()]


async def topic_route(admin: Admin, a: argparse.Namespace) -> Rows:
    route = await admin.topic_route(a.topic)
    addrs = {bd.broker_name: bd for bd in route.broker_datas}
    rows = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = addrs.get(qd.broker_name)
        rows.append({
            "broker": qd.broker_name, "cluster": bd.cluster if bd else "", "addrs": " ".join(f"{i}:{v}" for i, v in sorted(bd.broker_addrs.items())) if bd else "",
            "readQueues": qd.read_queue_nums, "writeQueues": qd.write_queue_nums, "perm": qd.perm,
        })
    return rows


async def topic_status(admin: Admin, a: argparse.Namespace) -> Rows:
    status = await admin.topic_status(a.topic)
    return [
        {"broker": mq.broker_name, "queue": mq.queue_id, "minOffset": o.min_offset, "maxOffset": o.max_offset, "lastUpdated": _fmt_ms(o.last_update_timestamp)}
        for mq, o in status.items()
    ]


async def cluster_list(admin: Admin, a: argparse.Namespace) -> Rows:
    info = await admin.cluster_info()
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            for broker_id, addr in sorted((bd.broker_addrs if bd else {}).items()):
                rows.append({"cluster": cluster, "broker": name, "id": broker_id, "addr": addr})
    return rows


async def update_sub_group(admin: Admin, a: argparse.Namespace) -> Rows:
    fields = {k: v for k, v in {
        "retry_max_times": a.retry_max_times, "consume_broadcast_enable": a.consume_broadcast_enable,
        "consume_enable": a.consume_enable, "retry_queue_nums": a.retry_queue_nums,
    }.items() if v is not None}
    addrs = await admin.update_subscription_group(a.group, a.cluster if not a.broker else None, broker_addr=a.broker, **fields)
    return [{"group": a.group, "broker": addr, **fields} for addr in addrs]


async def delete_sub_group(admin: Admin, a: argparse.Namespace) -> Rows:
    addrs = await admin.delete_subscription_group(
        a.group, a.cluster if not a.broker else None, broker_addr=a.broker, remove_offset=a.remove_offset
    )
    return [{"group": a.group, "broker": addr, "deleted": True} for addr in addrs]


def _connection_rows(connections: list[Any]) -> Rows:
    return [
        {"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language.name, "version": c.version}
        for c in sorted(connections, key=lambda c: c.client_id)
    ]


async def producer_connection(admin: Admin, a: argparse.Namespace) -> Rows:
    return _connection_rows((await admin.producer_connections(a.group, a.topic)).connection_set)


async def consumer_connection(admin: Admin, a: argparse.Namespace) -> Rows:
    found = await admin.consumer_connections(a.group)
    rows = _connection_rows(found.connection_set)
    for row in rows:
        row["model"] = found.message_model.name if found.message_model else ""
        row["subscriptions"] = ", ".join(f"{t}:{sd.sub_string}" for t, sd in sorted(found.subscription_table.items()))
    return rows


async def consumer_status(admin: Admin, a: argparse.Namespace) -> Rows:
    """Per queue of each member (or of `-i` only): what the consumer itself reports (mqadmin consumerStatus)."""
    clients = [a.client_id] if a.client_id else [c.client_id for c in (await admin.consumer_connections(a.group)).connection_set]
    rows: Rows = []
    for client_id in sorted(clients):
        info = await admin.consumer_running_info(a.group, client_id)
        for mq, pq in sorted(info.mq_table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
            rows.append({
                "clientId": client_id, "topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id,
                "commitOffset": pq.commit_offset, "cachedMsgs": pq.cached_msg_count, "locked": pq.locked,
            })
        if not info.mq_table:
            rows.append({"clientId": client_id, "topic": "-", "broker": "-", "queue": "-", "commitOffset": "-", "cachedMsgs": 0, "locked": False})
    return rows


async def get_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    return [{"key": k, "value": v} for k, v in (await admin.broker_config(a.broker)).items()]


async def update_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    await admin.update_broker_config(a.broker, {a.key: a.value})
    return [{"broker": a.broker, "key": a.key, "value": (await admin.broker_config(a.broker)).get(a.key, "")}]


async def consumer_progress(admin: Admin, a: argparse.Namespace) -> Rows:
    rows = [
        {"topic": p.queue.topic, "broker": p.queue.broker_name, "queue": p.queue.queue_id, "brokerOffset": p.broker_offset,
         "consumerOffset": p.consumer_offset, "lag": p.lag, "lastConsumed": _fmt_ms(p.last_timestamp)}
        for p in await admin.consumer_progress(a.group, a.topic)
    ]
    return rows


async def query_msg_by_id(admin: Admin, a: argparse.Namespace) -> Rows:
    return _msg_rows([await admin.query_message_by_id(a.msg_id)])


async def query_msg_by_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return _msg_rows(await admin.query_message_by_key(a.topic, a.key, a.max_num))


async def query_msg_by_unique_key(admin: Admin, a: argparse.Namespace) -> Rows:
    return _msg_rows(await admin.query_message_by_unique_key(a.topic, a.msg_id))


async def reset_offset_by_time(admin: Admin, a: argparse.Namespace) -> Rows:
    offsets = await admin.reset_offset_by_time(a.group, a.topic, a.timestamp, force=a.force)
    return [{"topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id, "offset": off} for mq, off in offsets.items()]


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
    return _msg_rows(out[: a.count])


async def broker_status(admin: Admin, a: argparse.Namespace) -> Rows:
    return [{"key": k, "value": v} for k, v in (await admin.broker_status(a.broker)).items()]


Verb = Callable[[Admin, argparse.Namespace], Awaitable[Rows]]


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Verb]]:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--namesrv-addr", "--namesrvAddr", dest="namesrv_addr", default=argparse.SUPPRESS, help="name servers host:port;host:port")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON instead of a table")
    parser = argparse.ArgumentParser(prog="rocketq admin", description="Administer a rocketq / RocketMQ cluster.", parents=[common])
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    verbs: dict[str, Verb] = {}

    def verb(name: str, fn: Verb, help_text: str) -> argparse.ArgumentParser:
        verbs[name] = fn
        return sub.add_parser(name, help=help_text, parents=[common])

    p = verb("update-topic", update_topic, "create or update a topic")
    p.add_argument("-t", "--topic", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker", help="one broker address instead of a whole cluster")
    p.add_argument("-r", "--read-queues", type=int, default=8)
    p.add_argument("-w", "--write-queues", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6)
    p.add_argument("-o", "--order", type=_bool, default=False)
    p = verb("delete-topic", delete_topic, "delete a topic from a cluster and the name servers")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--cluster", required=True)
    verb("topic-list", topic_list, "list every topic the name servers know")
    p = verb("topic-route", topic_route, "show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    p = verb("topic-status", topic_status, "min/max offsets of every queue of a topic")
    p.add_argument("-t", "--topic", required=True)
    verb("cluster-list", cluster_list, "list clusters and their brokers")
    p = verb("update-sub-group", update_sub_group, "create or update a consumer group")
    p.add_argument("-g", "--group", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker")
    p.add_argument("--retry-max-times", type=int)
    p.add_argument("--retry-queue-nums", type=int)
    p.add_argument("--consume-broadcast-enable", type=_bool)
    p.add_argument("--consume-enable", type=_bool)
    p = verb("delete-sub-group", delete_sub_group, "delete a consumer group's settings")
    p.add_argument("-g", "--group", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker")
    p.add_argument("-r", "--remove-offset", type=_bool, default=False, help="also drop the group's committed offsets")
    p = verb("producer-connection", producer_connection, "the producers of a group connected to a topic's brokers")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p = verb("consumer-connection", consumer_connection, "the members of a consumer group and their subscriptions")
    p.add_argument("-g", "--group", required=True)
    p = verb("consumer-status", consumer_status, "per member and queue: what each consumer reports of itself")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--client-id", help="one member only")
    p = verb("get-broker-config", get_broker_config, "every setting of a broker")
    p.add_argument("-b", "--broker", required=True)
    p = verb("update-broker-config", update_broker_config, "change one setting of a running broker")
    p.add_argument("-b", "--broker", required=True)
    p.add_argument("-k", "--key", required=True, help="RocketMQ name, e.g. statsInterval")
    p.add_argument("-v", "--value", required=True)
    p = verb("consumer-progress", consumer_progress, "per queue: broker offset, consumer offset, lag")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic")
    p = verb("query-msg-by-id", query_msg_by_id, "look a message up by its offset message id")
    p.add_argument("-i", "--msg-id", required=True)
    p = verb("query-msg-by-key", query_msg_by_key, "look messages up by key")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("--max-num", type=int, default=32)
    p = verb("query-msg-by-unique-key", query_msg_by_unique_key, "look a message up by its client id (UNIQ_KEY)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-i", "--msg-id", required=True)
    p = verb("reset-offset-by-time", reset_offset_by_time, "move a group's offsets to a point in time")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-s", "--timestamp", type=parse_time, required=True, help="epoch ms, now, or 'YYYY-MM-DD HH:MM:SS'")
    p.add_argument("-f", "--force", type=_bool, default=True)
    p = verb("send-message", send_message, "send one message")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-p", "--body", required=True)
    p.add_argument("--tags")
    p.add_argument("--keys")
    p.add_argument("--producer-group", default="PID_ROCKETQ_ADMIN")
    p = verb("consume-message", consume_message, "print messages of a topic from its start (commits nothing)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="TOOLS_CONSUMER")
    p.add_argument("-n", "--count", type=int, default=32)
    p.add_argument("--timeout-ms", type=int, default=3000)
    p = verb("broker-status", broker_status, "a broker's runtime figures")
    p.add_argument("-b", "--broker", required=True)
    add_trace_verb(verb)
    return parser, verbs


async def _run(fn: Verb, args: argparse.Namespace) -> Rows:
    async with Admin(namesrv_addr=args.namesrv_addr) as admin:
        return await fn(admin, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser, verbs = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "namesrv_addr", None):
        import os

        args.namesrv_addr = os.environ.get("NAMESRV_ADDR", "")
        if not args.namesrv_addr:
            print("rocketq admin: --namesrv-addr is required (or set NAMESRV_ADDR)", file=sys.stderr)
            return 2
    try:
        rows = asyncio.run(_run(verbs[args.verb], args))
    except RocketQError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
