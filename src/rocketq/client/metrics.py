"""The SDK's own Prometheus metrics, when asked for: send latency, consume latency, cached messages.

Names, units and buckets of the RocketMQ 5.x clients' metrics (apache/rocketmq-clients, Java
ClientMeterManager / MetricName / HistogramEnum):

    rocketmq_send_cost_time            histogram (ms; 1, 5, 10, 20, 50, 200, 500)   topic, client_id, invocation_status
    rocketmq_delivery_latency          histogram (ms; 1, 5, 10, 20, 50, 200, 500)   topic, consumer_group, client_id
    rocketmq_process_time              histogram (ms; 1, 5, 10, 100, 1e3, 1e4, 6e4) topic, consumer_group, client_id, invocation_status
    rocketmq_consumer_cached_messages  gauge                                          topic, consumer_group, client_id
    rocketmq_consumer_cached_bytes     gauge                                          topic, consumer_group, client_id

Off until `enable_client_metrics()` is called; then every producer's send and every push consumer's
listener call in the process is observed (a few microseconds each), and the cached-message gauges
are read from the consumers' process queues at scrape time. The metrics go to prometheus_client's
default registry unless another is given, so `prometheus_client.start_http_server(port)` serves them.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

if TYPE_CHECKING:  # the consumers import this module to report to it
    from rocketq.client.consumer.push import PushConsumer

SEND_COST_BUCKETS_MS = (1, 5, 10, 20, 50, 200, 500)
DELIVERY_LATENCY_BUCKETS_MS = (1, 5, 10, 20, 50, 200, 500)
PROCESS_TIME_BUCKETS_MS = (1, 5, 10, 100, 1_000, 10_000, 60_000)


class ClientMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.send_cost = Histogram(
            "rocketmq_send_cost_time", "Send cost time (milliseconds)", ["topic", "client_id", "invocation_status"],
            buckets=SEND_COST_BUCKETS_MS, registry=registry,
        )  # fmt: skip
        self.delivery_latency = Histogram(
            "rocketmq_delivery_latency", "From stored to handed to the listener (milliseconds)",
            ["topic", "consumer_group", "client_id"], buckets=DELIVERY_LATENCY_BUCKETS_MS, registry=registry,
        )  # fmt: skip
        self.process_time = Histogram(
            "rocketmq_process_time", "Listener process time (milliseconds)",
            ["topic", "consumer_group", "client_id", "invocation_status"], buckets=PROCESS_TIME_BUCKETS_MS,
            registry=registry,
        )  # fmt: skip
        self._consumers: weakref.WeakSet[PushConsumer] = weakref.WeakSet()
        registry.register(_CachedMessages(self._consumers))

    def watch_consumer(self, consumer: PushConsumer) -> None:
        """A push consumer whose process queues feed the cached-message gauges."""
        self._consumers.add(consumer)

    def sent(self, topic: str, client_id: str, ok: bool, cost_ms: float) -> None:
        self.send_cost.labels(topic, client_id, "success" if ok else "failure").observe(cost_ms)

    def consumed(
        self, msgs: Iterable[Any], group: str, client_id: str, ok: bool, started_ms: int, ended_ms: int
    ) -> None:
        msgs = list(msgs)
        if not msgs:
            return
        topic = msgs[0].topic
        for msg in msgs:
            if msg.store_timestamp > 0:
                self.delivery_latency.labels(topic, group, client_id).observe(
                    max(started_ms - msg.store_timestamp, 0)
                )
        self.process_time.labels(topic, group, client_id, "success" if ok else "failure").observe(
            ended_ms - started_ms
        )


class _CachedMessages:
    """rocketmq_consumer_cached_messages / _bytes, summed over each consumer's process queues per topic."""

    def __init__(self, consumers: weakref.WeakSet[PushConsumer]) -> None:
        self._consumers = consumers

    def collect(self) -> Iterable[Metric]:
        labels = ("topic", "consumer_group", "client_id")
        messages = GaugeMetricFamily(
            "rocketmq_consumer_cached_messages", "Messages in the process queues", labels=labels
        )
        size = GaugeMetricFamily(
            "rocketmq_consumer_cached_bytes", "Bytes in the process queues", labels=labels
        )
        for consumer in list(self._consumers):
            rebalance = consumer.rebalance
            per_topic: dict[str, list[int]] = {}
            # A scrape may run on prometheus_client's server thread: copy the table before walking it.
            for mq, pq in list(rebalance.process_queues.items()):
                row = per_topic.setdefault(mq.topic, [0, 0])
                row[0] += pq.msg_count
                row[1] += pq.msg_size
            try:
                client_id = consumer.client_id
            except Exception:  # shut down meanwhile
                continue
            for topic, (count, nbytes) in sorted(per_topic.items()):
                messages.add_metric([topic, consumer.group, client_id], count)
                size.add_metric([topic, consumer.group, client_id], nbytes)
        yield messages
        yield size


_ACTIVE: ClientMetrics | None = None


def enable_client_metrics(registry: CollectorRegistry | None = None) -> ClientMetrics:
    """Turn the SDK's metrics on for this process (idempotent); they go to `registry` (default: the global one)."""
    global _ACTIVE
    if _ACTIVE is None:
        _ACTIVE = ClientMetrics(REGISTRY if registry is None else registry)
    return _ACTIVE


def active() -> ClientMetrics | None:
    """The client metrics if enabled, else None (read on every send: one global look-up)."""
    return _ACTIVE


def disable_client_metrics() -> None:
    """Stop observing (the metrics already registered stay in their registry)."""
    global _ACTIVE
    _ACTIVE = None
