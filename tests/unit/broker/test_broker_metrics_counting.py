"""BrokerMetrics' counting of sends: the sizes a normal send only lists end up in the same rows and buckets."""

from __future__ import annotations

from typing import Any

import pytest
from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.metrics import MESSAGE_SIZE_BUCKETS, BrokerMetrics
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.common import constants as C
from rocketq.common.message import encode_properties
from rocketq.remoting.metrics import PENDING_FOLD_AT, RpcLatency
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
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


def _put_one_by_one_and_as_a_run(
    topics: list[str], properties: list[dict[str, str]], results: list[PutResult]
) -> tuple[BrokerMetrics, BrokerMetrics]:
    alone, run = _metrics(), _metrics()
    for args in zip(topics, properties, results, strict=True):
        alone.on_put(*args)
    run.on_put_many(topics, properties, results)
    return alone, run


@pytest.mark.parametrize(
    "topics, properties",
    [
        (["T"] * 5, [{"UNIQ_KEY": "x", "TAGS": "a"}] * 5),  # the usual run: one topic, all normal
        (["T", "U", "T", "U", "T"], [{}] * 5),  # two topics
        (["T"] * 5, [{}, {C.PROPERTY_DELAY_TIME_LEVEL: "3"}, {}, {"__SHARDINGKEY": "k"}, {}]),  # typed ones
        (["T"] * 5, [{C.PROPERTY_TRANSACTION_PREPARED: "false"}] + [{}] * 4),  # a typed name, a normal value
    ],
)
def test_a_run_counts_as_its_puts_one_by_one(topics: list[str], properties: list[dict[str, str]]) -> None:
    results = [_put(100), _put(2000), PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), _put(5000), _put(30)]
    alone, run = _put_one_by_one_and_as_a_run(topics, properties, results)
    assert _samples(run) == _samples(alone)
    assert sum(row[0] for row in run.messages_in.values()) == 4  # the put not written is not counted


def test_runs_keep_the_listed_sizes_bounded() -> None:
    metrics = _metrics()
    for _ in range(PENDING_FOLD_AT // 64 * 2 + 1):
        metrics.on_put_many(["T"] * 64, [{}] * 64, [_put(10)] * 64)
    assert all(len(sizes) < PENDING_FOLD_AT for sizes in metrics._normal_sizes.values())
    metrics.fold_messages_in()
    assert metrics.messages_in[("T", "normal")][0] == PENDING_FOLD_AT * 2 + 64
    metrics.on_put_many([], [], [])  # an empty run counts nothing
    assert metrics.messages_in[("T", "normal")][0] == PENDING_FOLD_AT * 2 + 64


async def test_the_send_processor_counts_a_run_as_its_sends_alone() -> None:
    """process_requests (a run of one read) feeds BrokerMetrics the same counts as each request alone."""

    def requests() -> list[RemotingCommand]:
        out = []
        for topic, props in [
            ("T", {"UNIQ_KEY": "a"}),
            ("T", {"DELAY": "2"}),
            ("U", {}),
            ("T", {"TAGS": "x"}),
        ]:
            h = SendMessageRequestHeader(
                producer_group="pg", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
                queue_id=0, sys_flag=0, born_timestamp=1_700_000_000_000, flag=0,
                properties=encode_properties(props),
            )  # fmt: skip
            out.append(
                RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext_fields(), b"x" * 50)
            )
        return out

    counted = []
    for together in (False, True):
        ctx = make_context(FakeStore(), metricsExporterType="PROM", metricsPromExporterPort=0)
        ctx.metrics = metrics = BrokerMetrics(ctx, None, None, RpcLatency())  # type: ignore[arg-type]
        proc, conn = SendMessageProcessor(ctx), FakeConnection()
        if together:
            answers = await proc.process_requests(conn, requests())
        else:
            answers = [await proc.process_request(conn, r) for r in requests()]
        assert [a.code for a in answers if a is not None] == [0, 0, 0, 0]
        counted.append(_samples(metrics))
    assert counted[0] == counted[1]
    assert counted[1][("rocketmq_messages_in_total", (("message_type", "normal"), ("topic", "T")))] == 2
    assert counted[1][("rocketmq_messages_in_total", (("message_type", "delay"), ("topic", "T")))] == 1
    assert counted[1][("rocketmq_messages_in_total", (("message_type", "normal"), ("topic", "U")))] == 1
