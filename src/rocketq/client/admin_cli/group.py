"""`rocketq admin` verbs. Consumer and producer groups: settings, members, progress, offset reset."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable, fmt_ms, parse_bool, parse_time


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


async def consumer_progress(admin: Admin, a: argparse.Namespace) -> Rows:
    rows = [
        {"topic": p.queue.topic, "broker": p.queue.broker_name, "queue": p.queue.queue_id, "brokerOffset": p.broker_offset,
         "consumerOffset": p.consumer_offset, "lag": p.lag, "lastConsumed": fmt_ms(p.last_timestamp)}
        for p in await admin.consumer_progress(a.group, a.topic)
    ]
    return rows


async def reset_offset_by_time(admin: Admin, a: argparse.Namespace) -> Rows:
    offsets = await admin.reset_offset_by_time(a.group, a.topic, a.timestamp, force=a.force)
    for broker, why in sorted(offsets.offline.items()):
        # mqadmin's resetOffsetByTimeOld: said out loud, since a consumer that is in fact running overwrites them
        print(
            f"rocketq admin: broker {broker} could not reset online consumers ({why}); "
            f"wrote the offsets of group {a.group} directly: they apply when its consumers start",
            file=sys.stderr,
        )
    return [{"topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id, "offset": off} for mq, off in offsets.items()]


def register(table: VerbTable) -> None:
    p = table.verb("update-sub-group", update_sub_group, "create or update a consumer group")
    p.add_argument("-g", "--group", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker")
    p.add_argument("--retry-max-times", type=int)
    p.add_argument("--retry-queue-nums", type=int)
    p.add_argument("--consume-broadcast-enable", type=parse_bool)
    p.add_argument("--consume-enable", type=parse_bool)
    p = table.verb("delete-sub-group", delete_sub_group, "delete a consumer group's settings")
    p.add_argument("-g", "--group", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker")
    p.add_argument("-r", "--remove-offset", type=parse_bool, default=False, help="also drop the group's committed offsets")
    p = table.verb("producer-connection", producer_connection, "the producers of a group connected to a topic's brokers")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p = table.verb("consumer-connection", consumer_connection, "the members of a consumer group and their subscriptions")
    p.add_argument("-g", "--group", required=True)
    p = table.verb("consumer-status", consumer_status, "per member and queue: what each consumer reports of itself")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--client-id", help="one member only")
    p = table.verb("consumer-progress", consumer_progress, "per queue: broker offset, consumer offset, lag")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic")
    p = table.verb("reset-offset-by-time", reset_offset_by_time, "move a group's offsets to a point in time")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-s", "--timestamp", type=parse_time, required=True, help="epoch ms, now, or 'YYYY-MM-DD HH:MM:SS'")
    p.add_argument("-f", "--force", type=parse_bool, default=True)
