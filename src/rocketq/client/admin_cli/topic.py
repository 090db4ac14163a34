"""`rocketq admin` verbs. Topics: create, delete, list, route, status, permission, clusters, allocation."""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable, fmt_ms, parse_bool
from rocketq.client.consumer.allocate import AllocateMessageQueueAveragely
from rocketq.client.errors import MQClientError
from rocketq.client.route import to_subscribe_queues


async def update_topic(admin: Admin, a: argparse.Namespace) -> Rows:
    addrs = await admin.create_topic(
        a.topic,
        a.cluster if not a.broker else None,
        a.read_queues,
        a.write_queues,
        perm=a.perm,
        order=a.order,
        broker_addr=a.broker,
    )
    return [
        {
            "topic": a.topic,
            "broker": addr,
            "readQueues": a.read_queues,
            "writeQueues": a.write_queues,
            "perm": a.perm,
        }
        for addr in addrs
    ]


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
        rows.append(
            {
                "broker": qd.broker_name,
                "cluster": bd.cluster if bd else "",
                "addrs": " ".join(f"{i}:{v}" for i, v in sorted(bd.broker_addrs.items())) if bd else "",
                "readQueues": qd.read_queue_nums,
                "writeQueues": qd.write_queue_nums,
                "perm": qd.perm,
            }
        )
    return rows


async def topic_status(admin: Admin, a: argparse.Namespace) -> Rows:
    status = await admin.topic_status(a.topic)
    return [
        {
            "broker": mq.broker_name,
            "queue": mq.queue_id,
            "minOffset": o.min_offset,
            "maxOffset": o.max_offset,
            "lastUpdated": fmt_ms(o.last_update_timestamp),
        }
        for mq, o in status.items()
    ]


async def update_topic_perm(admin: Admin, a: argparse.Namespace) -> Rows:
    """mqadmin updateTopicPerm: the topic's queues kept, its permission changed on the chosen masters."""
    route = await admin.topic_route(a.topic)
    masters = {
        bd.broker_name: bd.broker_addrs.get(0)
        for bd in route.broker_datas
        if bd.cluster == a.cluster or a.cluster is None
    }
    rows: Rows = []
    for qd in route.queue_datas:
        addr = masters.get(qd.broker_name)
        if addr is None or (a.broker and a.broker != addr):
            continue
        await admin.create_topic(
            a.topic, None, qd.read_queue_nums, qd.write_queue_nums, perm=a.perm, broker_addr=addr
        )
        rows.append({"topic": a.topic, "broker": addr, "oldPerm": qd.perm, "perm": a.perm})
    if not rows:
        raise MQClientError(f"topic {a.topic} has no master at {a.broker or a.cluster}")
    return rows


async def topic_cluster_list(admin: Admin, a: argparse.Namespace) -> Rows:
    route = await admin.topic_route(a.topic)
    return [{"cluster": c} for c in sorted({bd.cluster for bd in route.broker_datas})]


async def allocate_mq(admin: Admin, a: argparse.Namespace) -> Rows:
    """mqadmin allocateMQ: how AllocateMessageQueueAveragely shares the topic's queues among `-i` clients."""

    queues = sorted(to_subscribe_queues(a.topic, await admin.topic_route(a.topic)))
    clients = sorted(ip.strip() for ip in a.ip_list.split(",") if ip.strip())
    strategy = AllocateMessageQueueAveragely()
    return [
        {
            "client": client,
            "queues": " ".join(
                f"{mq.broker_name}:{mq.queue_id}"
                for mq in strategy.allocate("allocateMQ", client, queues, clients)
            ),
        }
        for client in clients
    ]


def register(table: VerbTable) -> None:
    p = table.verb("update-topic", update_topic, "create or update a topic", "updateTopic")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "-c",
        "--cluster",
        "--clusterName",
        dest="cluster",
        default="DefaultCluster",
        help="on every master of this cluster (default DefaultCluster)",
    )
    target.add_argument(
        "-b",
        "--broker",
        "--brokerAddr",
        dest="broker",
        help="on one broker address (host:port) instead of a cluster",
    )
    p.add_argument(
        "-r",
        "--read-queues",
        "--readQueueNums",
        dest="read_queues",
        type=int,
        default=8,
        help="read queues (default 8)",
    )
    p.add_argument(
        "-w",
        "--write-queues",
        "--writeQueueNums",
        dest="write_queues",
        type=int,
        default=8,
        help="write queues (default 8)",
    )
    p.add_argument(
        "-p",
        "--perm",
        type=int,
        default=6,
        help="permission: 6 read+write, 4 read only, 2 write only (default 6)",
    )
    p.add_argument(
        "-o",
        "--order",
        type=parse_bool,
        default=False,
        help="an ordered topic (registers ORDER_TOPIC_CONFIG; default false)",
    )
    p.add_argument(
        "-u",
        "--unit",
        type=parse_bool,
        default=False,
        help="accepted for mqadmin compatibility (unit topics are not used)",
    )
    p.add_argument(
        "-s",
        "--hasUnitSub",
        "--has-unit-sub",
        dest="has_unit_sub",
        type=parse_bool,
        default=False,
        help="accepted for mqadmin compatibility",
    )
    p = table.verb(
        "delete-topic", delete_topic, "delete a topic from a cluster and the name servers", "deleteTopic"
    )
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument(
        "-c",
        "--cluster",
        "--clusterName",
        dest="cluster",
        required=True,
        help="cluster whose masters drop the topic",
    )
    p = table.verb("topic-list", topic_list, "list every topic the name servers know", "topicList")
    p.add_argument(
        "-c",
        "--clusterModel",
        "--cluster-model",
        dest="cluster_model",
        action="store_true",
        help="accepted for mqadmin compatibility",
    )
    p = table.verb("topic-route", topic_route, "show a topic's route", "topicRoute")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument(
        "-l",
        "--list",
        dest="as_list",
        action="store_true",
        help="accepted for mqadmin compatibility (rows are always listed)",
    )
    p = table.verb("topic-status", topic_status, "min/max offsets of every queue of a topic", "topicStatus")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p = table.verb(
        "update-topic-perm",
        update_topic_perm,
        "change a topic's permission, keeping its queues",
        "updateTopicPerm",
    )
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument(
        "-p",
        "--perm",
        type=int,
        required=True,
        choices=(2, 4, 6),
        help="6 read+write, 4 read only, 2 write only",
    )
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "-c",
        "--cluster",
        "--clusterName",
        dest="cluster",
        help="on the masters of this cluster (default: all)",
    )
    target.add_argument(
        "-b", "--broker", "--brokerAddr", dest="broker", help="on one master address (host:port)"
    )
    p = table.verb(
        "topic-cluster-list", topic_cluster_list, "the clusters a topic lives in", "topicClusterList"
    )
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p = table.verb(
        "allocate-mq",
        allocate_mq,
        "how the queues of a topic are shared among clients (averagely)",
        "allocateMQ",
    )
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument(
        "-i", "--ipList", "--ip-list", dest="ip_list", required=True, help="client ids, comma-separated"
    )
