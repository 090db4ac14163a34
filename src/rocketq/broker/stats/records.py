"""The JSON records a broker publishes to its stats topics (schema: docs/stats-topics.md).

No Java counterpart: RocketMQ 4.x writes these figures to its stats log files and 5.x exports them as
OpenTelemetry metrics (rocketmq_messages_in_total, rocketmq_consumer_lag_messages, ...); here they
become messages, one JSON object per message, on three system topics of the broker itself. Lag per
queue is what GET_CONSUME_STATS computes (max offset - committed offset) and lag latency is 5.x's
rocketmq_consumer_lag_latency (now - store time of the first message not consumed yet).
Pure functions of a closed StatsWindow and read-only views of the broker's state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from rocketq.broker.stats.counters import GET_BYTES, GET_MSGS, PUT_BYTES, PUT_MSGS, SEND_BACKS, StatsWindow
from rocketq.common import constants as C

SCHEMA_VERSION = 1

KIND_TOPIC, KIND_GROUP, KIND_BROKER = "topic", "group", "broker"
TOPIC_OF_KIND = {
    KIND_TOPIC: C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC,
    KIND_GROUP: C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC,
    KIND_BROKER: C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC,
}


class OffsetView(Protocol):
    """What the records need of the store (MessageStoreAPI has all of it)."""

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int: ...


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    cluster: str
    broker_name: str
    broker_addr: str


@dataclass(frozen=True, slots=True)
class StoreFigures:
    """Gauges of the store at publishing time (5.x rocketmq_storage_*)."""

    dispatch_behind_bytes: int
    flush_behind_bytes: int
    disk_used_ratio: float
    commit_log_min_offset: int
    commit_log_max_offset: int

    def to_json(self) -> dict[str, Any]:
        return {
            "dispatchBehindBytes": self.dispatch_behind_bytes,
            "flushBehindBytes": self.flush_behind_bytes,
            "diskUsedRatio": round(self.disk_used_ratio, 4),
            "commitLogMinOffset": self.commit_log_min_offset,
            "commitLogMaxOffset": self.commit_log_max_offset,
            "commitLogBytes": max(self.commit_log_max_offset - self.commit_log_min_offset, 0),
        }


@dataclass(frozen=True, slots=True)
class StatsRecord:
    """One message to publish: its stats topic, its KEYS (the subject) and its JSON body."""

    kind: str
    key: str
    body: dict[str, Any]

    @property
    def topic(self) -> str:
        return TOPIC_OF_KIND[self.kind]

    def encode(self) -> bytes:
        return json.dumps(self.body, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _envelope(kind: str, who: BrokerIdentity, window: StatsWindow) -> dict[str, Any]:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "kind": kind,
        "cluster": who.cluster,
        "brokerName": who.broker_name,
        "brokerAddr": who.broker_addr,
        "windowStartMs": window.start_ms,
        "windowEndMs": window.end_ms,
        "timestampMs": window.end_ms,
    }


def _per_second(count: int, window: StatsWindow) -> float:
    return round(count * 1000 / max(window.end_ms - window.start_ms, 1), 3)


def topic_records(who: BrokerIdentity, window: StatsWindow, totals: dict[str, int]) -> list[StatsRecord]:
    """One record per topic that had puts or gets in the window (sorted by topic)."""
    gets: dict[str, list[int]] = {}
    for (_group, topic), counters in window.groups.items():
        acc = gets.setdefault(topic, [0, 0])
        acc[0] += counters[GET_MSGS]
        acc[1] += counters[GET_BYTES]
    records = []
    for topic in sorted(set(window.topics) | set(gets)):
        put = window.topics.get(topic, [0, 0])
        got = gets.get(topic, [0, 0])
        body = _envelope(KIND_TOPIC, who, window)
        body.update(
            topic=topic,
            putMessages=put[PUT_MSGS],
            putBytes=put[PUT_BYTES],
            putTps=_per_second(put[PUT_MSGS], window),
            getMessages=got[0],
            getBytes=got[1],
            putMessagesTotal=totals.get(topic, 0),
        )
        records.append(StatsRecord(KIND_TOPIC, topic, body))
    return records


def queue_lags(store: OffsetView, topic: str, committed: dict[int, int], now_ms: int) -> list[dict[str, int]]:
    """Per committed queue: broker (max) offset, consumer offset, lag in messages and in ms."""
    out = []
    for queue_id in sorted(committed):
        consumer_offset = max(committed[queue_id], 0)
        broker_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
        lag = max(broker_offset - consumer_offset, 0)
        latency = 0
        if lag > 0:
            stored_at = store.get_message_store_timestamp(topic, queue_id, consumer_offset)
            latency = max(now_ms - stored_at, 0) if stored_at > 0 else 0
        out.append(
            {
                "queueId": queue_id,
                "brokerOffset": broker_offset,
                "consumerOffset": consumer_offset,
                "lagMessages": lag,
                "lagLatencyMs": latency,
            }
        )
    return out


def counted_group(group: str, topic: str, excluded_topics: frozenset[str] = C.BROKER_STATS_TOPICS) -> bool:
    """Groups of the broker's own machinery (CID_RMQ_SYS_*) and reads of the stats topics are left out."""
    return topic not in excluded_topics and not group.startswith(C.CID_RMQ_SYS_PREFIX)


def group_records(
    who: BrokerIdentity,
    window: StatsWindow,
    store: OffsetView,
    offset_table: dict[tuple[str, str], dict[int, int]],
    excluded_topics: frozenset[str] = C.BROKER_STATS_TOPICS,
) -> list[StatsRecord]:
    """One record per (group, topic) with traffic in the window or a committed offset (sorted).

    The broker's internal groups (CID_RMQ_SYS_*: POP revive, transaction checks) are not reported.
    """
    keys = {k for k in (*window.groups, *offset_table) if counted_group(k[0], k[1], excluded_topics)}
    records = []
    for group, topic in sorted(keys):
        counters = window.groups.get((group, topic), [0, 0, 0])
        queues = queue_lags(store, topic, offset_table.get((group, topic), {}), window.end_ms)
        body = _envelope(KIND_GROUP, who, window)
        body.update(
            group=group,
            topic=topic,
            getMessages=counters[GET_MSGS],
            getBytes=counters[GET_BYTES],
            getTps=_per_second(counters[GET_MSGS], window),
            sendBackMessages=counters[SEND_BACKS],
            lagMessages=sum(q["lagMessages"] for q in queues),
            lagLatencyMs=max((q["lagLatencyMs"] for q in queues), default=0),
            queues=queues,
        )
        records.append(StatsRecord(KIND_GROUP, f"{group}@{topic}", body))
    return records


def broker_record(
    who: BrokerIdentity,
    window: StatsWindow,
    store_figures: StoreFigures,
    totals: dict[str, int],
    topic_count: int,
    group_count: int,
) -> StatsRecord:
    """The broker's record: put/get sums, rates, the put latency histogram and the store gauges."""
    put_msgs, put_bytes = window.put_totals()
    get_msgs, get_bytes, send_backs = window.get_totals()
    latency = window.put_latency
    body = _envelope(KIND_BROKER, who, window)
    body.update(
        putMessages=put_msgs,
        putBytes=put_bytes,
        putTps=_per_second(put_msgs, window),
        getMessages=get_msgs,
        getBytes=get_bytes,
        getTps=_per_second(get_msgs, window),
        sendBackMessages=send_backs,
        putMessagesTotal=totals["put_msgs"],
        getMessagesTotal=totals["get_msgs"],
        putBytesTotal=totals["put_bytes"],
        getBytesTotal=totals["get_bytes"],
        putLatency=latency.to_json()
        | {
            "p50Us": round(latency.percentile_us(0.5), 1),
            "p90Us": round(latency.percentile_us(0.9), 1),
            "p99Us": round(latency.percentile_us(0.99), 1),
        },
        store=store_figures.to_json(),
        topicCount=topic_count,
        groupCount=group_count,
    )
    return StatsRecord(KIND_BROKER, who.broker_name, body)
