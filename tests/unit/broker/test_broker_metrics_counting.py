"""BrokerMetrics' counting of sends: the sizes a normal send only lists end up in the same rows and buckets."""

from __future__ import annotations

from typing import Any

from broker_fakes import make_context

from rocketq.broker.metrics import MESSAGE_SIZE_BUCKETS, BrokerMetrics
from rocketq.common import constants as C
from rocketq.remoting.metrics import PENDING_FOLD_AT, RpcLatency
from rocketq.store.status import AppendResult, PutMessageStatus, PutResult


def _metrics() -> BrokerMetrics:
    ctx = make_context(metricsExporterType="PROM", metricsPromExporterPort=0)
    return BrokerMetrics(ctx, None, None, RpcLatency())  # type: ignore[arg-type]  # no scrape of stats or executors


def _put(size: int, msgs: int = 1) -> PutResult:
    return PutResult(PutMessageStatus.PUT_OK, AppendResult(wrote_bytes=size, msg_num=msgs))


def _samples(metrics: BrokerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in metrics._traffic(metrics.common_labels()):
        for sample in family.samples:
            labels: Any = tuple(
                sorted((k, v) for k, v in sample.labels.items() if k in ("topic", "message_type", "le"))
            )
            out[(sample.name, labels)] = sample.value
    return out


def test_single_normal_sends_are_counted_with_their_size_buckets_when_scraped() -> None:
    metrics = _metrics()
    for size in (100, 1024, 1025, 5000, 600 * 1024):
        metrics.on_put("T", {"UNIQ_KEY": "x"}, _put(size))
    metrics.on_put("T", {}, PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE))  # not written: not counted
    samples = _samples(metrics)
    normal = (("message_type", "normal"), ("topic", "T"))
    assert samples[("rocketmq_messages_in_total", normal)] == 5
    assert samples[("rocketmq_throughput_in_total", normal)] == 100 + 1024 + 1025 + 5000 + 600 * 1024
    buckets = {
        le: samples[("rocketmq_message_size_bucket", tuple(sorted((*normal, ("le", le)))))]
        for le in [str(float(b)) for b in MESSAGE_SIZE_BUCKETS] + ["+Inf"]
    }
    assert buckets == {
        "1024.0": 2,
        "4096.0": 3,
        "524288.0": 4,
        "1048576.0": 5,
        "2097152.0": 5,
        "4194304.0": 5,
        "+Inf": 5,
    }
    assert samples[("rocketmq_message_size_sum", normal)] == 100 + 1024 + 1025 + 5000 + 600 * 1024
    assert samples[("rocketmq_message_size_count", normal)] == 5


def test_typed_messages_and_batches_keep_their_own_rows() -> None:
    metrics = _metrics()
    metrics.on_put("T", {C.PROPERTY_DELAY_TIME_LEVEL: "3"}, _put(200))
    metrics.on_put("T", {C.PROPERTY_TRANSACTION_PREPARED: "true"}, _put(300))
    metrics.on_put("T", {C.PROPERTY_TRANSACTION_PREPARED: "false"}, _put(400))  # not prepared: normal
    metrics.on_put("T", {"__SHARDINGKEY": "k"}, _put(500))
    metrics.on_put("T", {}, _put(3000, msgs=3))  # a batch: one size observation, the average
    samples = _samples(metrics)

    def count(kind: str) -> float:
        return samples[("rocketmq_messages_in_total", (("message_type", kind), ("topic", "T")))]

    assert (count("delay"), count("transaction"), count("fifo"), count("normal")) == (1, 1, 1, 4)
    normal = (("message_type", "normal"), ("topic", "T"))
    assert samples[("rocketmq_message_size_count", normal)] == 2  # the 400-byte send and the batch
    assert samples[("rocketmq_message_size_sum", normal)] == 400 + 1000


def test_listed_sizes_are_bounded_without_a_scrape() -> None:
    metrics = _metrics()
    for _ in range(PENDING_FOLD_AT * 2 + 3):
        metrics.on_put("T", {}, _put(10))
    assert all(len(sizes) < PENDING_FOLD_AT for sizes in metrics._normal_sizes.values())
    assert metrics.messages_in[("T", "normal")][0] == PENDING_FOLD_AT * 2  # folded twice; 3 still listed
    metrics.fold_messages_in()
    assert metrics.messages_in[("T", "normal")][0] == PENDING_FOLD_AT * 2 + 3
