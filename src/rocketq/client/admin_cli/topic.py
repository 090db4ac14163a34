"""`rocketq admin` verbs. Topics: create, delete, list, route, status."""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable, fmt_ms, parse_bool


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
        {"broker": mq.broker_name, "queue": mq.queue_id, "minOffset": o.min_offset, "maxOffset": o.max_offset, "lastUpdated": fmt_ms(o.last_update_timestamp)}
        for mq, o in status.items()
    ]


def register(table: VerbTable) -> None:
    p = table.verb("update-topic", update_topic, "create or update a topic")
    p.add_argument("-t", "--topic", required=True)
    target = p.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default="DefaultCluster")
    target.add_argument("-b", "--broker", help="one broker address instead of a whole cluster")
    p.add_argument("-r", "--read-queues", type=int, default=8)
    p.add_argument("-w", "--write-queues", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6)
    p.add_argument("-o", "--order", type=parse_bool, default=False)
    p = table.verb("delete-topic", delete_topic, "delete a topic from a cluster and the name servers")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--cluster", required=True)
    table.verb("topic-list", topic_list, "list every topic the name servers know")
    p = table.verb("topic-route", topic_route, "show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    p = table.verb("topic-status", topic_status, "min/max offsets of every queue of a topic")
    p.add_argument("-t", "--topic", required=True)
