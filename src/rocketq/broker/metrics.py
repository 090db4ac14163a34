"""BrokerMetrics: the broker's Prometheus metrics, with RocketMQ 5.x's names, types and labels.

Port of org.apache.rocketmq.broker.metrics.BrokerMetricsManager / BrokerMetricsConstant and
org.apache.rocketmq.store.metrics.DefaultStoreMetricsConstant (5.x), exported in Prometheus text
format when metricsExporterType=PROM (docs/observability.md lists every metric). Every sample carries
5.x's common labels cluster, node_type="broker" and node_id (the broker name).

The hot path only counts: a send adds to a (topic, message type) row and a size histogram, a pull to
a (group, topic) row and remembers how far the group has pulled each queue. Everything else - lags,
connections, watermarks, storage figures, label values such as is_system - is computed when scraped,
from the tables the broker keeps anyway. Consumer figures follow 5.x's ConsumerLagCalculator: lag is
max offset - committed offset, inflight is pulled - committed, ready is max offset - pulled, lag latency
is the age of the first message not committed, queueing latency the age of the first one not pulled.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from rocketq.common import constants as C
from rocketq.remoting.metrics import (
    PENDING_FOLD_AT,
    Histograms,
    PrometheusExporter,
    RpcLatency,
    fold_into_buckets,
    new_registry,
)
from rocketq.remoting.protocol.codes import LanguageCode

if TYPE_CHECKING:
    from rocketq.broker.context import BrokerContext
    from rocketq.broker.stats.publisher import BrokerStatsService
    from rocketq.store.status import PutResult

log = logging.getLogger("rocketq.broker.metrics")

# BrokerMetricsManager's message size buckets: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024 * 1024.0, 4 * 1024 * 1024.0)
# Java's executor names as 5.x reports them in rocketmq_processor_watermark{processor=...}.
# Our admin families each have their own executor (admin-topic, admin-offset, ...): reported one by one.
_PROCESSOR_NAMES = {
    "send": "send", "pull": "pull", "query": "query_message", "heartbeat": "heartbeat",
    "consumer-manage": "consumer_manager", "end-transaction": "transaction", "ack": "ack", "pop": "pop",
}  # fmt: skip
_TRANSACTION, _DELAY = C.PROPERTY_TRANSACTION_PREPARED, C.PROPERTY_DELAY_TIME_LEVEL
_TIMER_DELIVER, _TIMER_SEC = C.PROPERTY_TIMER_DELIVER_MS, C.PROPERTY_TIMER_DELAY_SEC
# MessageConst.PROPERTY_TIMER_DELAY_MS and PROPERTY_SHARDING_KEY (5.x), which only this label reads.
_TIMER_MS, _SHARDING_KEY = "TIMER_DELAY_MS", "__SHARDINGKEY"
# The properties that make a message other than "normal" (_message_type); sizes listed before counting.
_TYPED_PROPERTIES = frozenset((_TRANSACTION, _DELAY, _TIMER_DELIVER, _TIMER_SEC, _TIMER_MS, _SHARDING_KEY))
# A row of messages_in: messages, bytes, then the size histogram's buckets (the last one +Inf) and sum.
_SIZE_BUCKETS_AT = 2


class BrokerMetrics:
    """The counters the processors feed, and the collector that turns them into families at scrape time."""

    def __init__(
        self, ctx: BrokerContext, stats_service: BrokerStatsService, server: Any, rpc: RpcLatency
    ) -> None:
        self.ctx = ctx
        self.server = server  # the RemotingServer, whose executors' queues are the watermarks
        self.stats_service = stats_service
        self.messages_in: dict[
            tuple[str, str], list[float]
        ] = {}  # (topic, type) -> [messages, bytes, sizes...]
        # topic -> sizes of single normal messages not counted into messages_in yet
        self._normal_sizes: dict[str, list[int]] = {}
        self.messages_out: dict[tuple[str, str], list[int]] = {}  # (group, topic) -> [messages, bytes]
        self.pulled: dict[tuple[str, str], dict[int, int]] = {}  # (group, topic) -> queue -> next offset
        self.rpc = rpc  # fed by the server's dispatcher (RemotingServer.time_requests)
        cfg = ctx.broker_config
        self.registry = new_registry(self.collect)
        self.exporter = PrometheusExporter(
            self.registry, cfg.metrics_prom_exporter_host, cfg.metrics_prom_exporter_port
        )

    # -- hot path -----------------------------------------------------------------------------------
    def on_put(self, topic: str, properties: Mapping[str, str], result: PutResult) -> None:
        # The store sets `append` only when it wrote the record (PUT_OK, or a flush / slave timeout after
        # the write): the one test needed, cheaper than the status set look-up the counters use.
        append = result.append
        if append is None:
            return
        # Most sends are one message with none of the properties that make it transactional, delayed or
        # ordered: those only append their size to the topic's list, counted into the row when scraped
        # (or once the list holds PENDING_FOLD_AT sizes): a third of the cost of classifying and counting each.
        if append.msg_num == 1 and _TYPED_PROPERTIES.isdisjoint(properties):
            sizes = self._normal_sizes.get(topic)
            if sizes is None:
                sizes = self._normal_sizes[topic] = []
            sizes.append(append.wrote_bytes)
            if len(sizes) >= PENDING_FOLD_AT:
                self._fold_normal(topic, sizes)
            return
        row = self._row_in(topic, _message_type(properties))
        msgs, size = append.msg_num, append.wrote_bytes
        row[0] += msgs
        row[1] += size
        average = size / msgs if msgs > 1 else size  # 5.x records one size per request: the average
        row[_SIZE_BUCKETS_AT + bisect_left(MESSAGE_SIZE_BUCKETS, average)] += 1
        row[-1] += average

    def on_put_many(
        self, topics: Sequence[str], properties: Sequence[Mapping[str, str]], results: Sequence[PutResult]
    ) -> None:
        """The puts of one run of single messages (SendMessageProcessor.process_requests), counted as
        `on_put` counts each: the i-th message went to topics[i] with properties[i] and ended as results[i].

        A run is usually one topic's normal messages: then one C-level pass over every property name of
        the run tells that none makes a message typed, and the written sizes join the topic's list in
        one extend (about half the instructions of an on_put per message, docs/observability.md);
        anything else goes message by message.
        """
        if not topics:
            return
        topic, names = topics[0], chain.from_iterable(properties)
        if topics.count(topic) != len(topics) or not _TYPED_PROPERTIES.isdisjoint(names):
            for args in zip(topics, properties, results, strict=True):
                self.on_put(*args)
            return
        sizes = self._normal_sizes.get(topic)
        if sizes is None:
            sizes = self._normal_sizes[topic] = []
        sizes += [append.wrote_bytes for result in results if (append := result.append) is not None]
        if len(sizes) >= PENDING_FOLD_AT:
            self._fold_normal(topic, sizes)

    def _row_in(self, topic: str, kind: str) -> list[float]:
        row = self.messages_in.get((topic, kind))
        if row is None:
            row = self.messages_in[(topic, kind)] = [0] * (_SIZE_BUCKETS_AT + len(MESSAGE_SIZE_BUCKETS) + 2)
        return row

    def _fold_normal(self, topic: str, sizes: list[int]) -> None:
        row = self._row_in(topic, "normal")
        total = sum(sizes)
        row[0] += len(sizes)
        row[1] += total
        row[-1] += total
        fold_into_buckets(row, _SIZE_BUCKETS_AT, sizes, MESSAGE_SIZE_BUCKETS)

    def fold_messages_in(self) -> None:
        """Count the sizes on_put only listed into `messages_in` (before it is read)."""
        for topic, sizes in self._normal_sizes.items():
            if sizes:
                self._fold_normal(topic, sizes)

    def on_get(
        self, group: str, topic: str, queue_id: int, messages: int, size: int, next_offset: int
    ) -> None:
        key = (group, topic)
        row = self.messages_out.get(key)
        if row is None:
            row = self.messages_out[key] = [0, 0]
            self.pulled[key] = {}
        row[0] += messages
        row[1] += size
        self.pulled[key][queue_id] = next_offset

    # -- scrape ---------------------------------------------------------------------------------------
    def common_labels(self) -> dict[str, str]:
        cfg = self.ctx.broker_config
        return {"cluster": cfg.broker_cluster_name, "node_type": "broker", "node_id": cfg.broker_name}

    def _is_system_topic(self, topic: str) -> str:
        return _bool(self.ctx.topic_config_manager.is_system_topic(topic))

    def collect(self) -> Iterable[Metric]:
        common = self.common_labels()
        yield from self._traffic(common)
        yield self.rpc.family(common)
        yield from self._broker_gauges(common)
        yield from self._connections(common)
        yield from self._consumer_gauges(common)
        yield from self._storage(common)

    def _traffic(self, common: dict[str, str]) -> Iterable[Metric]:
        names = (*common, "topic", "message_type", "is_system")
        msgs_in = CounterMetricFamily(
            "rocketmq_messages_in", "Total number of incoming messages", labels=names
        )
        bytes_in = CounterMetricFamily(
            "rocketmq_throughput_in", "Total traffic of incoming messages (bytes)", labels=names
        )
        sizes = Histograms(("topic", "message_type", "is_system"), MESSAGE_SIZE_BUCKETS)
        self.fold_messages_in()
        for (topic, kind), row in sorted(self.messages_in.items()):
            values = [*common.values(), topic, kind, self._is_system_topic(topic)]
            msgs_in.add_metric(values, row[0])
            bytes_in.add_metric(values, row[1])
            sizes.table[(topic, kind, values[-1])] = row[_SIZE_BUCKETS_AT:]
        names = (*common, "topic", "consumer_group", "is_retry", "is_system")
        msgs_out = CounterMetricFamily(
            "rocketmq_messages_out", "Total number of outgoing messages", labels=names
        )
        bytes_out = CounterMetricFamily(
            "rocketmq_throughput_out", "Total traffic of outgoing messages (bytes)", labels=names
        )
        for (group, topic), (count, size) in sorted(self.messages_out.items()):
            values = [*common.values(), topic, group, *self._group_flags(group, topic)]
            msgs_out.add_metric(values, count)
            bytes_out.add_metric(values, size)
        yield from (msgs_in, bytes_in, msgs_out, bytes_out)
        yield sizes.family("rocketmq_message_size", "Incoming messages size (bytes)", common)

    def _group_flags(self, group: str, topic: str) -> tuple[str, str]:
        is_retry = topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX)
        is_system = group.startswith(C.CID_RMQ_SYS_PREFIX) or (
            not is_retry and self.ctx.topic_config_manager.is_system_topic(topic)
        )
        return _bool(is_retry), _bool(is_system)

    def _broker_gauges(self, common: dict[str, str]) -> Iterable[Metric]:
        ctx, values = self.ctx, list(common.values())
        watermark = GaugeMetricFamily(
            "rocketmq_processor_watermark", "Request processor watermark", labels=(*common, "processor")
        )
        for executor in self.server.registry.executors():
            watermark.add_metric(
                [*values, _PROCESSOR_NAMES.get(executor.name, executor.name)], executor.queued
            )
        yield watermark
        yield _gauge(
            "rocketmq_broker_permission", "Broker permission", common, ctx.broker_config.broker_permission
        )
        yield _gauge(
            "rocketmq_topic_number",
            "Active topic number",
            common,
            len(ctx.topic_config_manager.topic_config_table),
        )
        yield _gauge(
            "rocketmq_consumer_group_number",
            "Active subscription group number",
            common,
            len(ctx.subscription_group_manager.subscription_group_table),
        )

    def _connections(self, common: dict[str, str]) -> Iterable[Metric]:
        values = list(common.values())
        producers: dict[tuple[str, str], int] = {}
        for channels in self.ctx.producer_manager.group_channel_table.values():
            for info in channels.values():
                key = (_language(info.language), str(info.version))
                producers[key] = producers.get(key, 0) + 1
        family = GaugeMetricFamily(
            "rocketmq_producer_connections",
            "Producer connections",
            labels=(*common, "language", "version", "protocol_type"),
        )
        for (language, version), n in sorted(producers.items()):
            family.add_metric([*values, language, version, "remoting"], n)
        yield family
        consumers: dict[tuple[str, str, str, str], int] = {}
        for group, group_info in self.ctx.consumer_manager.consumer_table.items():
            mode = "push" if str(group_info.consume_type) == "CONSUME_PASSIVELY" else "pull"
            for info in group_info.channel_info_table.values():
                member = (group, _language(info.language), str(info.version), mode)
                consumers[member] = consumers.get(member, 0) + 1
        family = GaugeMetricFamily(
            "rocketmq_consumer_connections",
            "Consumer connections",
            labels=(
                *common,
                "consumer_group",
                "language",
                "version",
                "consume_mode",
                "protocol_type",
                "is_system",
            ),
        )
        for (group, language, version, mode), n in sorted(consumers.items()):
            family.add_metric(
                [
                    *values,
                    group,
                    language,
                    version,
                    mode,
                    "remoting",
                    _bool(group.startswith(C.CID_RMQ_SYS_PREFIX)),
                ],
                n,
            )
        yield family

    def _consumer_gauges(self, common: dict[str, str]) -> Iterable[Metric]:
        store, now = self.ctx.store, self.ctx.clock.now_ms()
        names = (*common, "topic", "consumer_group", "is_retry", "is_system")
        families = {
            "lag": GaugeMetricFamily("rocketmq_consumer_lag_messages", "Consumer lag messages", labels=names),
            "lag_latency": GaugeMetricFamily(
                "rocketmq_consumer_lag_latency", "Consumer lag time (milliseconds)", labels=names
            ),
            "inflight": GaugeMetricFamily(
                "rocketmq_consumer_inflight_messages", "Consumer inflight messages", labels=names
            ),
            "queueing": GaugeMetricFamily(
                "rocketmq_consumer_queueing_latency", "Consumer queueing time (milliseconds)", labels=names
            ),
            "ready": GaugeMetricFamily(
                "rocketmq_consumer_ready_messages", "Consumer ready messages", labels=names
            ),
        }
        for (group, topic), committed in sorted(self.stats_service.offsets_by_group().items()):
            if topic in C.BROKER_STATS_TOPICS:
                continue
            pulled = self.pulled.get((group, topic), {})
            lag = inflight = ready = lag_latency = queueing = 0
            for queue_id, done in committed.items():
                done = max(done, 0)
                max_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
                fetched = min(max(pulled.get(queue_id, done), done), max_offset)
                lag += max(max_offset - done, 0)
                inflight += fetched - done if fetched > done else 0
                ready += max(max_offset - fetched, 0)
                if max_offset > done:
                    lag_latency = max(lag_latency, _age(store, topic, queue_id, done, now))
                if max_offset > fetched:
                    queueing = max(queueing, _age(store, topic, queue_id, fetched, now))
            values = [*common.values(), topic, group, *self._group_flags(group, topic)]
            for key, value in (("lag", lag), ("lag_latency", lag_latency), ("inflight", inflight),
                               ("queueing", queueing), ("ready", ready)):  # fmt: skip
                families[key].add_metric(values, value)
        yield from families.values()
        yield self._half_messages(common)

    def _half_messages(self, common: dict[str, str]) -> Metric:
        """Half messages not yet checked (the half topic's backlog behind the transaction check's offset)."""
        family = GaugeMetricFamily(
            "rocketmq_half_messages", "Half messages of all topics", labels=(*common, "topic")
        )
        store, half = self.ctx.store, C.RMQ_SYS_TRANS_HALF_TOPIC
        if half in self.ctx.topic_config_manager.topic_config_table:
            checked = self.ctx.consumer_offset_manager.query_offset(C.CID_SYS_RMQ_TRANS, half, 0)
            backlog = max(
                store.get_max_offset_in_queue(half, 0) - max(checked, store.get_min_offset_in_queue(half, 0)),
                0,
            )
            family.add_metric([*common.values(), half], backlog)
        return family

    def _storage(self, common: dict[str, str]) -> Iterable[Metric]:
        figures = self.stats_service.store_figures()
        labels = common | {"storage_type": "local", "storage_medium": "disk"}
        root = Path(self.ctx.store_config.store_path_root_dir).expanduser()
        yield _gauge("rocketmq_storage_size", "Broker storage size (bytes)", labels, _tree_size(root))
        yield _gauge(
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
            labels,
            figures.flush_behind_bytes,
        )
        yield _gauge(
            "rocketmq_storage_dispatch_behind_bytes",
            "Broker dispatch behind bytes",
            labels,
            figures.dispatch_behind_bytes,
        )


def _message_type(properties: Mapping[str, str]) -> str:
    """The message_type label: 5.x TopicMessageType.parseFromMessageProperty(...).getMetricsValue()."""
    if _TRANSACTION in properties and properties[_TRANSACTION] == "true":
        return "transaction"
    if (
        _DELAY in properties
        or _TIMER_DELIVER in properties
        or _TIMER_SEC in properties
        or _TIMER_MS in properties
    ):
        return "delay"
    if _SHARDING_KEY in properties:
        return "fifo"
    return "normal"


def _gauge(name: str, documentation: str, labels: dict[str, str], value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=tuple(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def _language(language: object) -> str:
    """A client's language as the metric label (java, cpp, ...); a code we do not know as its number."""
    return (language.name if isinstance(language, LanguageCode) else str(language)).lower()


def _age(store: Any, topic: str, queue_id: int, offset: int, now_ms: int) -> int:
    stored_at = store.get_message_store_timestamp(topic, queue_id, offset)
    return max(now_ms - stored_at, 0) if stored_at > 0 else 0


def _tree_size(root: Path) -> int:
    """Bytes of the store's files (commit log, consume queues, index, config)."""
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                continue  # deleted by the cleaner while we walked
    return total
