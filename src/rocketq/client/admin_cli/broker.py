"""`rocketq admin` verbs. Clusters and brokers: list, runtime figures, configuration, write permission, HA."""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable, fmt_ms, parse_bool
from rocketq.client.errors import MQClientError
from rocketq.common.errors import RocketQError


async def cluster_list(admin: Admin, a: argparse.Namespace) -> Rows:
    info = await admin.cluster_info()
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        if a.cluster and cluster != a.cluster:
            continue
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            for broker_id, addr in sorted((bd.broker_addrs if bd else {}).items()):
                rows.append({"cluster": cluster, "broker": name, "id": broker_id, "addr": addr})
    return rows


async def _targets(admin: Admin, a: argparse.Namespace) -> list[str]:
    """`-b ADDR`, or every master of `-c CLUSTER` (mqadmin's getBrokerConfig / brokerStatus / updateBrokerConfig)."""
    if a.broker:
        return [a.broker]
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(a.cluster)
    if names is None:
        raise MQClientError(f"cluster {a.cluster!r} is unknown to the name servers")
    return [
        addr
        for n in sorted(names)
        if (bd := info.broker_addr_table.get(n)) and (addr := bd.broker_addrs.get(0))
    ]


def _key_values(addr: str, table: dict[str, str], a: argparse.Namespace) -> Rows:
    # With -b the rows stay key/value as before; with -c each row also says which broker it is from.
    return [
        {"key": k, "value": v} if a.broker else {"broker": addr, "key": k, "value": v}
        for k, v in table.items()
    ]


async def get_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    return [
        row
        for addr in await _targets(admin, a)
        for row in _key_values(addr, await admin.broker_config(addr), a)
    ]


async def update_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    rows: Rows = []
    for addr in await _targets(admin, a):
        await admin.update_broker_config(addr, {a.key: a.value})
        rows.append({"broker": addr, "key": a.key, "value": (await admin.broker_config(addr)).get(a.key, "")})
    return rows


async def broker_status(admin: Admin, a: argparse.Namespace) -> Rows:
    return [
        row
        for addr in await _targets(admin, a)
        for row in _key_values(addr, await admin.broker_status(addr), a)
    ]


async def wipe_write_perm(admin: Admin, a: argparse.Namespace) -> Rows:
    return [
        {"namesrv": ns, "broker": a.broker_name, "wipedTopics": n}
        for ns, n in (await admin.wipe_write_perm(a.broker_name)).items()
    ]


async def add_write_perm(admin: Admin, a: argparse.Namespace) -> Rows:
    return [
        {"namesrv": ns, "broker": a.broker_name, "addedTopics": n}
        for ns, n in (await admin.add_write_perm(a.broker_name)).items()
    ]


async def ha_status(admin: Admin, a: argparse.Namespace) -> Rows:
    """Each broker of the cluster with its commit-log end, a slave with how far it is behind its master.

    mqadmin 4.9 has no haStatus (5.x asks the HA service); the 4.x way is each broker's runtime figures.
    """
    info = await admin.cluster_info()
    rows: Rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        if a.cluster and cluster != a.cluster:
            continue
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            ends: dict[int, int] = {}
            for broker_id, addr in sorted((bd.broker_addrs if bd else {}).items()):
                figures = await admin.broker_status(addr)
                ends[broker_id] = int(figures.get("commitLogMaxOffset", "-1") or -1)
                behind = ends[0] - ends[broker_id] if broker_id and 0 in ends and ends[0] >= 0 else ""
                rows.append(
                    {
                        "cluster": cluster,
                        "broker": name,
                        "id": broker_id,
                        "addr": addr,
                        "role": "MASTER" if broker_id == 0 else "SLAVE",
                        "commitLogMaxOffset": ends[broker_id],
                        "behindMasterBytes": behind,
                    }
                )
    return rows


async def stats_all(admin: Admin, a: argparse.Namespace) -> Rows:
    """Per topic and consuming group: messages stored and not yet consumed (mqadmin statsAll's accumulation).

    Deviation: no TPS columns (4.9 reads them with VIEW_BROKER_STATS_DATA, which this broker does not serve).
    """
    topics = (
        [a.topic]
        if a.topic
        else [
            t
            for t in await admin.topic_list()
            if not t.startswith(("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_"))
        ]
    )
    rows: Rows = []
    for topic in topics:
        try:
            status = await admin.topic_status(topic)
        except RocketQError:
            continue  # a topic without a live master
        stored = sum(o.max_offset - o.min_offset for o in status.values())
        groups = await admin.groups_consuming(topic)
        if not groups and not a.active_topic:
            rows.append({"topic": topic, "group": "", "stored": stored, "accumulation": ""})
        for group in groups:
            lag = sum(p.lag for p in await admin.consumer_progress(group, topic))
            rows.append({"topic": topic, "group": group, "stored": stored, "accumulation": lag})
    return rows


async def broker_consume_stats(admin: Admin, a: argparse.Namespace) -> Rows:
    """Every group with offsets on one broker, per queue: broker offset, consumer offset, lag (GET_CONSUME_STATS)."""
    rows: Rows = []
    for group in await admin.groups_with_offsets(a.broker):
        for p in await admin.consumer_progress_on(a.broker, group):
            if p.lag < a.level:
                continue
            rows.append(
                {
                    "topic": p.queue.topic,
                    "group": group,
                    "broker": p.queue.broker_name,
                    "queue": p.queue.queue_id,
                    "brokerOffset": p.broker_offset,
                    "consumerOffset": p.consumer_offset,
                    "diff": p.lag,
                    "lastTime": fmt_ms(p.last_timestamp),
                }
            )
    return rows


def register(table: VerbTable) -> None:
    p = table.verb("cluster-list", cluster_list, "list clusters and their brokers", "clusterList")
    p.add_argument("-c", "--clusterName", "--cluster", dest="cluster", help="only this cluster")
    p.add_argument(
        "-m",
        "--moreStats",
        "--more-stats",
        dest="more_stats",
        action="store_true",
        help="accepted for mqadmin compatibility",
    )
    p.add_argument(
        "-i", "--interval", type=int, help="accepted for mqadmin compatibility (one listing is printed)"
    )
    p = table.verb(
        "get-broker-config",
        get_broker_config,
        "every setting of a broker (or of each master of a cluster)",
        "getBrokerConfig",
    )
    _broker_or_cluster(p)
    p = table.verb(
        "update-broker-config",
        update_broker_config,
        "change one setting of running brokers",
        "updateBrokerConfig",
    )
    _broker_or_cluster(p)
    p.add_argument("-k", "--key", required=True, help="RocketMQ name of the setting, e.g. statsInterval")
    p.add_argument("-v", "--value", required=True, help="its new value")
    p = table.verb("broker-status", broker_status, "a broker's runtime figures", "brokerStatus")
    _broker_or_cluster(p)
    for verb, run, summary, java_name in (
        ("wipe-write-perm", wipe_write_perm, "take write permission off a broker on the name servers", "wipeWritePerm"),
        ("add-write-perm", add_write_perm, "give write permission back to a broker on the name servers", "addWritePerm"),
    ):  # fmt: skip
        p = table.verb(verb, run, summary, java_name)
        p.add_argument(
            "-b",
            "--brokerName",
            "--broker-name",
            dest="broker_name",
            required=True,
            help="broker name (not address)",
        )
    p = table.verb(
        "ha-status",
        ha_status,
        "masters and slaves with their commit-log ends and how far slaves are behind",
        "haStatus",
    )
    p.add_argument("-c", "--clusterName", "--cluster", dest="cluster", help="only this cluster")
    p = table.verb(
        "stats-all", stats_all, "per topic and group: stored and not yet consumed messages", "statsAll"
    )
    p.add_argument("-t", "--topic", help="only this topic")
    p.add_argument(
        "-a",
        "--activeTopic",
        "--active-topic",
        dest="active_topic",
        action="store_true",
        help="only topics some group consumes",
    )
    p = table.verb(
        "broker-consume-stats",
        broker_consume_stats,
        "every group's progress on one broker",
        "brokerConsumeStats",
    )
    p.add_argument(
        "-b", "--brokerAddr", "--broker", dest="broker", required=True, help="broker address host:port"
    )
    p.add_argument(
        "-l", "--level", type=int, default=0, help="only queues with at least this lag (default 0)"
    )
    p.add_argument(
        "-t",
        "--timeoutMillis",
        "--timeout-ms",
        dest="timeout_ms",
        type=int,
        default=50000,
        help="accepted for mqadmin compatibility",
    )
    p.add_argument("-o", "--order", type=parse_bool, default=False, help="accepted for mqadmin compatibility")


def _broker_or_cluster(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", "--broker", dest="broker", help="broker address host:port")
    target.add_argument(
        "-c", "--clusterName", "--cluster", dest="cluster", help="every master of this cluster"
    )
