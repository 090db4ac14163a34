"""`rocketq admin` verbs. Name servers: their configuration and KV config (ORDER_TOPIC_CONFIG ...)."""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable


async def get_namesrv_config(admin: Admin, a: argparse.Namespace) -> Rows:
    return [
        {"namesrv": ns, "key": k, "value": v}
        for ns, table in (await admin.namesrv_config()).items()
        for k, v in table.items()
    ]


async def update_namesrv_config(admin: Admin, a: argparse.Namespace) -> Rows:
    servers = await admin.update_namesrv_config({a.key: a.value})
    return [{"namesrv": ns, "key": a.key, "value": a.value} for ns in servers]


async def update_kv_config(admin: Admin, a: argparse.Namespace) -> Rows:
    servers = await admin.put_kv_config(a.namespace, a.key, a.value)
    return [{"namesrv": ns, "namespace": a.namespace, "key": a.key, "value": a.value} for ns in servers]


async def delete_kv_config(admin: Admin, a: argparse.Namespace) -> Rows:
    servers = await admin.delete_kv_config(a.namespace, a.key)
    return [{"namesrv": ns, "namespace": a.namespace, "key": a.key, "deleted": True} for ns in servers]


def register(table: VerbTable) -> None:
    table.verb(
        "get-namesrv-config", get_namesrv_config, "every setting of each name server", "getNamesrvConfig"
    )
    p = table.verb(
        "update-namesrv-config",
        update_namesrv_config,
        "change one setting of each name server",
        "updateNamesrvConfig",
    )
    p.add_argument("-k", "--key", required=True, help="RocketMQ name of the setting, e.g. orderMessageEnable")
    p.add_argument("-v", "--value", required=True, help="its new value")
    p = table.verb(
        "update-kv-config", update_kv_config, "set a KV config entry on each name server", "updateKvConfig"
    )
    p.add_argument("-s", "--namespace", required=True, help="namespace, e.g. ORDER_TOPIC_CONFIG")
    p.add_argument("-k", "--key", required=True, help="key, e.g. a topic name")
    p.add_argument("-v", "--value", required=True, help="value, e.g. broker-a:4")
    p = table.verb(
        "delete-kv-config", delete_kv_config, "delete a KV config entry on each name server", "deleteKvConfig"
    )
    p.add_argument("-s", "--namespace", required=True, help="namespace, e.g. ORDER_TOPIC_CONFIG")
    p.add_argument("-k", "--key", required=True, help="key to delete")
