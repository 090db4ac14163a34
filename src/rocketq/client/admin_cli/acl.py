"""`rocketq admin` ACL verbs, with mqadmin's names and option letters: updateAclConfig,
deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion, getAccessConfigSubCommand
(org.apache.rocketmq.tools.command.acl).
"""

from __future__ import annotations

import argparse

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import Rows, VerbTable


def _perms(value: str | None) -> list[str] | None:
    return None if value is None else [p.strip() for p in value.split(",") if p.strip()]


async def update_acl_config(admin: Admin, a: argparse.Namespace) -> Rows:
    changed = await admin.update_acl_config(
        a.account_access_key,
        a.account_secret_key,
        white_remote_address=a.white_remote_address,
        admin=None if a.admin is None else a.admin.lower() == "true",
        default_topic_perm=a.default_topic_perm,
        default_group_perm=a.default_group_perm,
        topic_perms=_perms(a.topic_perms),
        group_perms=_perms(a.group_perms),
        cluster=a.cluster,
        broker_addr=a.broker,
    )
    return [{"broker": addr, "result": "updated"} for addr in changed]


async def delete_acl_config(admin: Admin, a: argparse.Namespace) -> Rows:
    changed = await admin.delete_acl_config(a.account_access_key, cluster=a.cluster, broker_addr=a.broker)
    return [{"broker": addr, "result": "deleted"} for addr in changed]


async def update_global_white_addr(admin: Admin, a: argparse.Namespace) -> Rows:
    patterns = [p.strip() for p in a.global_white_addrs.split(",") if p.strip()]
    changed = await admin.update_global_white_addr(patterns, cluster=a.cluster, broker_addr=a.broker)
    return [{"broker": addr, "result": "updated"} for addr in changed]


async def cluster_acl_config_version(admin: Admin, a: argparse.Namespace) -> Rows:
    return await admin.cluster_acl_config_version(cluster=a.cluster, broker_addr=a.broker)


async def get_access_config(admin: Admin, a: argparse.Namespace) -> Rows:
    rows: Rows = []
    for broker in await admin.get_acl_config(cluster=a.cluster, broker_addr=a.broker):
        for account in broker["plainAccessConfigs"]:
            rows.append({"broker": broker["brokerAddr"], **account})
        rows.append(
            {"broker": broker["brokerAddr"], "globalWhiteAddrs": ",".join(broker["globalWhiteAddrs"])}
        )
    return rows


def _target(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-c", "--clusterName", dest="cluster", help="every master of this cluster")
    target.add_argument("-b", "--brokerAddr", dest="broker", help="one broker address")


def register(table: VerbTable) -> None:
    p = table.verb(
        "update-acl-config",
        update_acl_config,
        "create or update an ACL account on the brokers",
        "updateAclConfig",
    )
    p.add_argument(
        "-a", "--accessKey", dest="account_access_key", required=True, help="the account's access key"
    )
    p.add_argument("-s", "--secretKey", dest="account_secret_key", help="the account's secret key")
    p.add_argument(
        "-w",
        "--whiteRemoteAddress",
        dest="white_remote_address",
        help="address pattern the account may come from",
    )
    p.add_argument("-i", "--defaultTopicPerm", dest="default_topic_perm", help="DENY, PUB, SUB or PUB|SUB")
    p.add_argument("-u", "--defaultGroupPerm", dest="default_group_perm", help="DENY, PUB, SUB or PUB|SUB")
    p.add_argument("-t", "--topicPerms", dest="topic_perms", help="topicA=PUB,topicB=SUB")
    p.add_argument("-g", "--groupPerms", dest="group_perms", help="groupA=SUB,groupB=DENY")
    p.add_argument("-m", "--admin", dest="admin", help="true or false")
    _target(p)
    p = table.verb(
        "delete-acl-config", delete_acl_config, "delete an ACL account on the brokers", "deleteAclConfig"
    )
    p.add_argument(
        "-a", "--accessKey", dest="account_access_key", required=True, help="the account's access key"
    )
    _target(p)
    p = table.verb(
        "update-global-white-addr",
        update_global_white_addr,
        "replace the brokers' global address whitelist",
        "updateGlobalWhiteAddr",
    )
    p.add_argument(
        "-g",
        "--globalWhiteRemoteAddresses",
        dest="global_white_addrs",
        required=True,
        help="patterns, comma-separated",
    )
    _target(p)
    p = table.verb(
        "cluster-acl-config-version",
        cluster_acl_config_version,
        "the brokers' ACL file versions",
        "clusterAclConfigVersion",
    )
    _target(p)
    p = table.verb(
        "get-access-config",
        get_access_config,
        "the brokers' ACL accounts (no secret keys)",
        "getAccessConfigSubCommand",
    )
    _target(p)
