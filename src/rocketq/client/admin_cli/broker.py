"""`rocketq admin` verbs. Clusters and brokers: list, runtime figures, configuration."""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable


async def cluster_list(admin: Admin, a: argparse.Namespace) -> Rows:
    info = await admin.cluster_info()
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            for broker_id, addr in sorted((bd.broker_addrs if bd else {}).items()):
                rows.append({"cluster": cluster, "broker": name, "id": broker_id, "addr": addr})
    return rows


async def get_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    return [{"key": k, "value": v} for k, v in (await admin.broker_config(a.broker)).items()]


async def update_broker_config(admin: Admin, a: argparse.Namespace) -> Rows:
    await admin.update_broker_config(a.broker, {a.key: a.value})
    return [{"broker": a.broker, "key": a.key, "value": (await admin.broker_config(a.broker)).get(a.key, "")}]


async def broker_status(admin: Admin, a: argparse.Namespace) -> Rows:
    return [{"key": k, "value": v} for k, v in (await admin.broker_status(a.broker)).items()]


def register(table: VerbTable) -> None:
    table.verb("cluster-list", cluster_list, "list clusters and their brokers")
    p = table.verb("get-broker-config", get_broker_config, "every setting of a broker")
    p.add_argument("-b", "--broker", required=True)
    p = table.verb("update-broker-config", update_broker_config, "change one setting of a running broker")
    p.add_argument("-b", "--broker", required=True)
    p.add_argument("-k", "--key", required=True, help="RocketMQ name, e.g. statsInterval")
    p.add_argument("-v", "--value", required=True)
    p = table.verb("broker-status", broker_status, "a broker's runtime figures")
    p.add_argument("-b", "--broker", required=True)
