"""`rocketq admin` verbs. Consumer and producer groups: settings, members, progress, offset reset."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketq.client.admin import Admin
from rocketq.client.admin_cli.core import TIME_HELP, Rows, VerbTable, fmt_ms, parse_bool, parse_time
from rocketq.client.errors import MQClientError
from rocketq.common.errors import RocketQError

# updateSubGroup's settings: SubscriptionGroupConfig fields, all optional (unset = the broker's default)
SUB_GROUP_FIELDS = (
    "consume_enable",
    "consume_from_min_enable",
    "consume_broadcast_enable",
    "retry_queue_nums",
    "retry_max_times",
    "broker_id",
    "which_broker_when_consume_slowly",
    "notify_consumer_ids_changed_enable",
)


async def update_sub_group(admin: Admin, a: argparse.Namespace) -> Rows:
    fields = {k: v for k, v in ((name, getattr(a, name)) for name in SUB_GROUP_FIELDS) if v is not None}
    addrs = await admin.update_subscription_group(
        a.group, a.cluster if not a.broker else None, broker_addr=a.broker, **fields
    )
    return [{"group": a.group, "broker": addr, **fields} for addr in addrs]


async def delete_sub_group(admin: Admin, a: argparse.Namespace) -> Rows:
    addrs = await admin.delete_subscription_group(
        a.group, a.cluster if not a.broker else None, broker_addr=a.broker, remove_offset=a.remove_offset
    )
    return [{"group": a.group, "broker": addr, "deleted": True} for addr in addrs]


def _connection_rows(connections: list[Any]) -> Rows:
    return [
        {
            "clientId": c.client_id,
            "clientAddr": c.client_addr,
            "language": c.language.name,
            "version": c.version,
        }
        for c in sorted(connections, key=lambda c: c.client_id)
    ]


async def producer_connection(admin: Admin, a: argparse.Namespace) -> Rows:
    return _connection_rows((await admin.producer_connections(a.group, a.topic)).connection_set)


async def consumer_connection(admin: Admin, a: argparse.Namespace) -> Rows:
    found = await admin.consumer_connections(a.group)
    rows = _connection_rows(found.connection_set)
    for row in rows:
        row["model"] = found.message_model.name if found.message_model else ""
        row["subscriptions"] = ", ".join(
            f"{t}:{sd.sub_string}" for t, sd in sorted(found.subscription_table.items())
        )
    return rows


async def consumer_status(admin: Admin, a: argparse.Namespace) -> Rows:
    """Per queue of each member (or of `-i` only): what the consumer itself reports (mqadmin consumerStatus)."""
    clients = (
        [a.client_id]
        if a.client_id
        else [c.client_id for c in (await admin.consumer_connections(a.group)).connection_set]
    )
    rows: Rows = []
    for client_id in sorted(clients):
        info = await admin.consumer_running_info(a.group, client_id)
        for mq, pq in sorted(
            info.mq_table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)
        ):
            rows.append(
                {
                    "clientId": client_id,
                    "topic": mq.topic,
                    "broker": mq.broker_name,
                    "queue": mq.queue_id,
                    "commitOffset": pq.commit_offset,
                    "cachedMsgs": pq.cached_msg_count,
                    "locked": pq.locked,
                }
            )
        if not info.mq_table:
            rows.append(
                {
                    "clientId": client_id,
                    "topic": "-",
                    "broker": "-",
                    "queue": "-",
                    "commitOffset": "-",
                    "cachedMsgs": 0,
                    "locked": False,
                }
            )
    return rows


async def consumer_progress(admin: Admin, a: argparse.Namespace) -> Rows:
    """Per queue of one group (-g), or per group of the cluster: its totals (mqadmin consumerProgress without -g)."""
    if a.group is None:
        rows: Rows = []
        for group in await admin.consumer_groups():
            try:
                progress = await admin.consumer_progress(group)
            except RocketQError as exc:
                rows.append({"group": group, "diffTotal": "", "lastConsumed": "", "note": str(exc)})
                continue
            last = max((p.last_timestamp for p in progress), default=0)
            rows.append(
                {
                    "group": group,
                    "diffTotal": sum(p.lag for p in progress),
                    "lastConsumed": fmt_ms(last),
                    "note": "",
                }
            )
        return rows
    return [
        {
            "topic": p.queue.topic,
            "broker": p.queue.broker_name,
            "queue": p.queue.queue_id,
            "brokerOffset": p.broker_offset,
            "consumerOffset": p.consumer_offset,
            "lag": p.lag,
            "lastConsumed": fmt_ms(p.last_timestamp),
        }
        for p in await admin.consumer_progress(a.group, a.topic)
    ]


async def get_consumer_config(admin: Admin, a: argparse.Namespace) -> Rows:
    """The group's settings on each master that holds them (mqadmin getConsumerConfig)."""
    rows: Rows = []
    for _name, addr in await admin.masters():
        cfg = (await admin.subscription_groups(addr)).get(a.group)
        if cfg is not None:
            rows.append({"broker": addr, **cfg.to_json()})
    if not rows:
        raise MQClientError(f"consumer group {a.group} has no settings on any master")
    return rows


async def skip_accumulated_message(admin: Admin, a: argparse.Namespace) -> Rows:
    """Move the group to the end of the topic's queues (a reset to -1, live when its consumers are online)."""
    a.timestamp = -1
    return await reset_offset_by_time(admin, a)


async def clone_group_offset(admin: Admin, a: argparse.Namespace) -> Rows:
    offsets = await admin.clone_group_offset(a.src_group, a.dest_group, a.topic)
    return [
        {
            "topic": mq.topic,
            "broker": mq.broker_name,
            "queue": mq.queue_id,
            "group": a.dest_group,
            "offset": off,
        }
        for mq, off in offsets.items()
    ]


async def reset_offset_by_time(admin: Admin, a: argparse.Namespace) -> Rows:
    offsets = await admin.reset_offset_by_time(a.group, a.topic, a.timestamp, force=a.force)
    for broker, why in sorted(offsets.offline.items()):
        # mqadmin's resetOffsetByTimeOld: said out loud, since a consumer that is in fact running overwrites them
        print(
            f"rocketq admin: broker {broker} could not reset online consumers ({why}); "
            f"wrote the offsets of group {a.group} directly: they apply when its consumers start",
            file=sys.stderr,
        )
    return [
        {"topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id, "offset": off}
        for mq, off in offsets.items()
    ]


def register(table: VerbTable) -> None:
    p = table.verb(
        "update-sub-group", update_sub_group, "create or update a consumer group", "updateSubGroup"
    )
    p.add_argument("-g", "--group", "--groupName", dest="group", required=True, help="consumer group")
    _group_target(p)
    p.add_argument(
        "-s",
        "--consumeEnable",
        "--consume-enable",
        dest="consume_enable",
        type=parse_bool,
        help="the group may consume",
    )
    p.add_argument(
        "-m",
        "--consumeFromMinEnable",
        "--consume-from-min-enable",
        dest="consume_from_min_enable",
        type=parse_bool,
        help="a new group starts from the queues' first offsets",
    )
    p.add_argument(
        "-d",
        "--consumeBroadcastEnable",
        "--consume-broadcast-enable",
        dest="consume_broadcast_enable",
        type=parse_bool,
        help="broadcasting consumption allowed",
    )
    p.add_argument(
        "-q",
        "--retryQueueNums",
        "--retry-queue-nums",
        dest="retry_queue_nums",
        type=int,
        help="queues of its %%RETRY%% topic",
    )
    p.add_argument(
        "-r",
        "--retryMaxTimes",
        "--retry-max-times",
        dest="retry_max_times",
        type=int,
        help="deliveries before the DLQ",
    )
    p.add_argument(
        "-i", "--brokerId", "--broker-id", dest="broker_id", type=int, help="the broker id it consumes from"
    )
    p.add_argument(
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        "--which-broker-when-consume-slowly",
        dest="which_broker_when_consume_slowly",
        type=int,
        help="the broker id it reads from when far behind",
    )
    p.add_argument(
        "-a",
        "--notifyConsumerIdsChanged",
        "--notify-consumer-ids-changed",
        dest="notify_consumer_ids_changed_enable",
        type=parse_bool,
        help="tell members to rebalance when one joins or leaves",
    )
    p = table.verb(
        "delete-sub-group", delete_sub_group, "delete a consumer group's settings", "deleteSubGroup"
    )
    p.add_argument("-g", "--group", "--groupName", dest="group", required=True, help="consumer group")
    _group_target(p)
    p.add_argument(
        "-r",
        "--remove-offset",
        "--removeOffset",
        dest="remove_offset",
        type=parse_bool,
        default=False,
        help="also drop the group's committed offsets",
    )
    p = table.verb(
        "producer-connection",
        producer_connection,
        "the producers of a group connected to a topic's brokers",
        "producerConnection",
    )
    p.add_argument("-g", "--group", "--producerGroup", dest="group", required=True, help="producer group")
    p.add_argument("-t", "--topic", required=True, help="topic they send to")
    p = table.verb(
        "consumer-connection",
        consumer_connection,
        "the members of a consumer group and their subscriptions",
        "consumerConnection",
    )
    p.add_argument("-g", "--group", "--consumerGroup", dest="group", required=True, help="consumer group")
    p.add_argument(
        "-b", "--brokerAddr", dest="broker", help="accepted for mqadmin compatibility (every broker is asked)"
    )
    p = table.verb(
        "consumer-status",
        consumer_status,
        "per member and queue: what each consumer reports of itself",
        "consumerStatus",
    )
    p.add_argument("-g", "--group", "--consumerGroup", dest="group", required=True, help="consumer group")
    p.add_argument("-i", "--client-id", "--clientId", dest="client_id", help="one member only")
    p.add_argument("-b", "--brokerAddr", dest="broker", help="accepted for mqadmin compatibility")
    p.add_argument("-s", "--jstack", action="store_true", help="accepted for mqadmin compatibility")
    p = table.verb(
        "consumer-progress",
        consumer_progress,
        "per queue: broker offset, consumer offset, lag (every group without -g)",
        "consumerProgress",
    )
    p.add_argument(
        "-g",
        "--group",
        "--groupName",
        dest="group",
        help="consumer group (default: a line per group of the cluster)",
    )
    p.add_argument("-t", "--topic", help="only this topic")
    p.add_argument(
        "-s",
        "--showClientIP",
        "--show-client-ip",
        dest="show_client_ip",
        type=parse_bool,
        default=False,
        help="accepted for mqadmin compatibility",
    )
    p = table.verb(
        "reset-offset-by-time",
        reset_offset_by_time,
        "move a group's offsets to a point in time (live when it is online)",
        "resetOffsetByTime",
    )
    p.add_argument("-g", "--group", required=True, help="consumer group")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-s", "--timestamp", type=parse_time, required=True, help=TIME_HELP)
    p.add_argument(
        "-f",
        "--force",
        type=parse_bool,
        default=True,
        help="also move forwards (default true); false only moves back",
    )
    p.add_argument(
        "-c",
        "--cplus",
        action="store_true",
        help="accepted for mqadmin compatibility (the broker answers each client in its format)",
    )
    p = table.verb(
        "skip-accumulated-message",
        skip_accumulated_message,
        "move a group to the end of a topic",
        "skipAccumulatedMessage",
    )
    p.add_argument("-g", "--group", required=True, help="consumer group")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-f", "--force", type=parse_bool, default=True, help="also move forwards (default true)")
    p.add_argument("-c", "--cluster", help="accepted for mqadmin compatibility")
    p = table.verb(
        "clone-group-offset",
        clone_group_offset,
        "give a group the offsets another has on a topic",
        "cloneGroupOffset",
    )
    p.add_argument(
        "-s", "--srcGroup", "--src-group", dest="src_group", required=True, help="group to copy from"
    )
    p.add_argument(
        "-d", "--destGroup", "--dest-group", dest="dest_group", required=True, help="group to copy to"
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument(
        "-o",
        "--offline",
        type=parse_bool,
        default=True,
        help="accepted for mqadmin compatibility (offsets are written directly)",
    )
    p = table.verb(
        "get-consumer-config",
        get_consumer_config,
        "a consumer group's settings on each master",
        "getConsumerConfig",
    )
    p.add_argument("-g", "--group", "--groupName", dest="group", required=True, help="consumer group")


def _group_target(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "-c",
        "--cluster",
        "--clusterName",
        dest="cluster",
        default="DefaultCluster",
        help="every master of this cluster (default DefaultCluster)",
    )
    target.add_argument("-b", "--broker", "--brokerAddr", dest="broker", help="one broker address host:port")
