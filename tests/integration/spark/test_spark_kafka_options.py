"""Kafka's source options on format("rocketq") against real daemons: exact row sets, and fast failures."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import bounds, create_topic, produce, running_cluster

from rocketq.spark.progress import describe, offsets_behind_latest
from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("kafka-options"), broker_count=2) as started:
        yield started


def reader(spark: Any, namesrv: str, *, stream: bool = False, **options: str) -> Any:
    r = (spark.readStream if stream else spark.read).format("rocketq").option("namesrv", namesrv)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def seqs(df: Any) -> list[int]:
    return sorted(int(r.properties["seq"]) for r in df.select("properties").collect())


def queue_json(namesrv: str, topic: str, value: Any) -> str:
    return json.dumps({topic: {f"{b}:{q}": value(b, q) for b, q in bounds(namesrv, topic)}})


def test_subscribe_and_assign_read_exactly_the_named_topics_and_queues(
    spark: Any, cluster: LocalCluster
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaSubA", 2)
    create_topic(ns, "KafkaSubB", 2)
    produce(ns, "KafkaSubA", 40)
    produce(ns, "KafkaSubB", 30)
    assert reader(spark, ns, subscribe="KafkaSubA,KafkaSubB").count() == 70
    queues = bounds(ns, "KafkaSubA")
    (broker, queue_id), (low, high) = sorted(queues.items())[0]
    rows = reader(spark, ns, assign=json.dumps({"KafkaSubA": [f"{broker}:{queue_id}"]})).collect()
    assert {(r.broker_name, r.queue_id) for r in rows} == {(broker, queue_id)}
    assert sorted(r.queue_offset for r in rows) == list(range(low, high))
    # A bare queue id is that queue on every broker of the topic.
    by_id = reader(spark, ns, assign=json.dumps({"KafkaSubA": [1]})).collect()
    assert {(r.broker_name, r.queue_id) for r in by_id} == {q for q in queues if q[1] == 1}
    with pytest.raises(Exception, match="assign: topic KafkaSubA has no queue 7"):
        reader(spark, ns, assign=json.dumps({"KafkaSubA": [7]})).count()


def test_offsets_json_must_name_every_queue_and_only_known_ones(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaJson", 3)
    produce(ns, "KafkaJson", 60)
    full = json.loads(queue_json(ns, "KafkaJson", lambda b, q: 1))
    ranged = reader(spark, ns, subscribe="KafkaJson", startingOffsets=json.dumps(full),
                    endingOffsets=queue_json(ns, "KafkaJson", lambda b, q: 3)).collect()  # fmt: skip
    assert sorted(r.queue_offset for r in ranged) == sorted([1, 2] * len(full["KafkaJson"]))
    first = sorted(full["KafkaJson"])[0]
    partial = {"KafkaJson": {first: 2}}
    with pytest.raises(Exception, match="endingOffsets misses queues that are read"):
        reader(spark, ns, subscribe="KafkaJson", endingOffsets=json.dumps(partial)).count()
    unknown = {"KafkaJson": {**full["KafkaJson"], "no-such-broker:0": 1}}
    with pytest.raises(Exception, match="names queues that are not read: KafkaJson no-such-broker:0"):
        reader(spark, ns, subscribe="KafkaJson", startingOffsets=json.dumps(unknown)).count()
    other_topic = {**full, "NoSuchTopic": {"broker-x:0": 1}}
    with pytest.raises(Exception, match="names queues that are not read: NoSuchTopic"):
        reader(spark, ns, subscribe="KafkaJson", startingOffsets=json.dumps(other_topic)).count()
    backwards_start = queue_json(ns, "KafkaJson", lambda b, q: 5)
    backwards_end = queue_json(ns, "KafkaJson", lambda b, q: 4)
    with pytest.raises(
        Exception, match=r"startingOffsets of KafkaJson .* \(5\) is after its endingOffsets \(4\)"
    ):
        reader(
            spark, ns, subscribe="KafkaJson", startingOffsets=backwards_start, endingOffsets=backwards_end
        ).count()
    with pytest.raises(Exception, match=r"unknown source option.*maxoffsetspertriger"):
        reader(spark, ns, subscribe="KafkaJson", maxOffsetsPerTriger="5").count()


def test_timestamps_start_and_end_a_read_by_store_time(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaTime", 2)
    produce(ns, "KafkaTime", 30)
    time.sleep(0.05)  # store timestamps are ms: keep the three parts apart
    t1 = int(time.time() * 1000)
    time.sleep(0.05)
    produce(ns, "KafkaTime", 30, start=30)
    time.sleep(0.05)
    t2 = int(time.time() * 1000)
    time.sleep(0.05)
    produce(ns, "KafkaTime", 30, start=60)
    assert seqs(reader(spark, ns, subscribe="KafkaTime", startingTimestamp=str(t1))) == list(range(30, 90))
    middle = reader(spark, ns, subscribe="KafkaTime", startingTimestamp=str(t1), endingTimestamp=str(t2))
    assert seqs(middle) == list(range(30, 60))
    per_queue = reader(spark, ns, subscribe="KafkaTime", startingOffsetsByTimestamp=queue_json(ns, "KafkaTime", lambda b, q: t1),
                       endingOffsetsByTimestamp=queue_json(ns, "KafkaTime", lambda b, q: t2))  # fmt: skip
    assert seqs(per_queue) == list(range(30, 60))
    future = str(int(time.time() * 1000) + 3_600_000)
    with pytest.raises(Exception, match=r"no message of KafkaTime .* was stored at or after"):
        reader(spark, ns, subscribe="KafkaTime", startingTimestamp=future).count()  # Kafka's default: error
    lenient = reader(
        spark,
        ns,
        subscribe="KafkaTime",
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert lenient.count() == 0


def test_min_partitions_and_include_headers(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaSplit", 1)
    produce(ns, "KafkaSplit", 100)
    df = reader(spark, ns, subscribe="KafkaSplit", minPartitions="8", includeHeaders="true")
    assert df.rdd.getNumPartitions() >= 8  # 2 queues (one per broker) cut into pieces
    rows = df.collect()
    assert seqs(df) == list(range(100))
    assert len({(r.broker_name, r.queue_id, r.queue_offset) for r in rows}) == 100
    headers = {h.key: h.value for h in rows[0].headers}
    assert headers["seq"] == rows[0].properties["seq"].encode()
    assert headers["KEYS"] == rows[0].keys.encode()


def test_max_partitions_packs_queues_and_reads_every_message_once(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaPack", 4)  # 4 queues on each of the 2 brokers
    produce(ns, "KafkaPack", 120)
    df = reader(spark, ns, subscribe="KafkaPack", maxPartitions="3")
    assert df.rdd.getNumPartitions() == 3
    rows = df.select("broker_name", "queue_id", "queue_offset", "properties").collect()
    assert sorted(int(r.properties["seq"]) for r in rows) == list(range(120))
    assert len({(r.broker_name, r.queue_id, r.queue_offset) for r in rows}) == 120
    with pytest.raises(Exception, match=r"minPartitions \(4\) is greater than maxPartitions \(2\)"):
        reader(spark, ns, subscribe="KafkaPack", minPartitions="4", maxPartitions="2").count()


def run_stream(df: Any, out: Path, checkpoint: Path, **trigger: Any) -> Any:
    return (
        df.select("topic", "queue_offset", "msg_id", "properties")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(**trigger)
        .start()
    )


def wait_rows(query: Any, want: int, timeout_s: float = 90) -> int:
    """Wait until the query's committed batches hold `want` rows (its progress, not a racy file listing)."""
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise AssertionError(str(query.exception()))
        seen = sum(p["numInputRows"] for p in query.recentProgress)
        if seen >= want:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{seen} rows after {timeout_s:.0f}s, wanted {want}")


def test_subscribe_pattern_picks_up_a_topic_created_mid_stream(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "Pattern-one", 2)
    create_topic(ns, "NotPattern-x", 2)
    produce(ns, "Pattern-one", 20)
    produce(ns, "NotPattern-x", 20)
    df = reader(spark, ns, stream=True, subscribePattern="Pattern-.*", maxOffsetsPerTrigger="15")
    query = run_stream(df, tmp_path / "out", tmp_path / "ck", processingTime="300 milliseconds")
    try:
        wait_rows(query, 20)
        create_topic(ns, "Pattern-two", 2)
        produce(ns, "Pattern-two", 25)
        wait_rows(query, 45)
    finally:
        query.stop()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.topic, int(r.properties["seq"])) for r in rows) == sorted(
        [("Pattern-one", i) for i in range(20)] + [("Pattern-two", i) for i in range(25)]
    )
    assert max(p["numInputRows"] for p in query.recentProgress) <= 15  # maxOffsetsPerTrigger, Kafka's name
    # The first batch took 15 of 20: its progress says how far the query was behind the latest offsets.
    first = next(p for p in query.recentProgress if p["numInputRows"])
    lag = offsets_behind_latest(first["sources"][0])
    assert lag is not None and lag["maxOffsetsBehindLatest"] > 0
    assert "behind latest: max" in describe(first)


def test_min_offsets_per_trigger_waits_for_enough_messages(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "KafkaMinTrigger", 2)
    produce(ns, "KafkaMinTrigger", 10)
    df = reader(
        spark, ns, stream=True, subscribe="KafkaMinTrigger", minOffsetsPerTrigger="50", maxTriggerDelay="1h"
    )
    query = run_stream(df, tmp_path / "out", tmp_path / "ck", processingTime="200 milliseconds")
    try:
        wait_rows(query, 10)  # the first trigger runs at once, as Kafka's
        produce(ns, "KafkaMinTrigger", 30, start=10)
        # 30 new messages are under the minimum of 50: several triggers pass without a batch.
        deadline = time.monotonic() + 60
        while len(query.recentProgress) < 8 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(p["numInputRows"] for p in query.recentProgress) == 10
        produce(ns, "KafkaMinTrigger", 20, start=40)
        wait_rows(query, 60)
    finally:
        query.stop()
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [10, 50]
