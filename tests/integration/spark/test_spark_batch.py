"""spark.read.format("rocketq"): a batch read returns exactly what was sent, with offsets options honoured."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import bounds, create_topic, produce, running_cluster

from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("batch"), broker_count=2) as started:
        yield started


def load(spark: Any, namesrv: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("rocketq").option("namesrv", namesrv).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_a_batch_read_equals_what_was_sent(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkBatch", 3)
    sent = produce(ns, "SparkBatch", 240, body_size=200)
    df = load(spark, ns, "SparkBatch")
    assert df.rdd.getNumPartitions() == 6  # one partition per queue: 3 queues on each of 2 brokers
    rows = df.collect()
    assert len(rows) == 240
    assert sorted(r.msg_id for r in rows) == sorted(sent)
    by_seq = {int(r.properties["seq"]): r for r in rows}
    assert sorted(by_seq) == list(range(240))
    for seq, row in by_seq.items():
        assert row.topic == "SparkBatch"
        assert row.body == f"SparkBatch-{seq}".encode().ljust(200, b".")
        assert (row.tags, row.keys) == ("t", f"k{seq}")
        assert row.broker_name in {b.name for b in cluster.brokers}
        assert row.born_timestamp <= row.store_timestamp
        assert abs(row.store_timestamp.timestamp() - time.time()) < 300
    per_queue: dict[tuple[str, int], list[int]] = {}
    for row in rows:
        per_queue.setdefault((row.broker_name, row.queue_id), []).append(row.queue_offset)
    assert {q: sorted(o) for q, o in per_queue.items()} == {
        q: list(range(len(o))) for q, o in per_queue.items()
    }
    assert {q: (0, len(o)) for q, o in per_queue.items()} == bounds(ns, "SparkBatch")
    # Pulls asking more than the broker answers at once (32) are completed by follow-up pulls.
    big_pulls = (
        load(spark, ns, "SparkBatch", pullBatchSize="100", pullPipelineDepth="3").select("msg_id").collect()
    )
    assert sorted(r.msg_id for r in big_pulls) == sorted(sent)


def test_starting_and_ending_offsets_and_several_topics(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkRangeA", 2)
    create_topic(ns, "SparkRangeB", 2)
    produce(ns, "SparkRangeA", 80)
    produce(ns, "SparkRangeB", 40)
    both = load(spark, ns, "SparkRangeB,SparkRangeA")
    assert sorted(r.topic for r in both.groupBy("topic").count().collect()) == ["SparkRangeA", "SparkRangeB"]
    assert both.count() == 120
    queues = bounds(ns, "SparkRangeA")
    starting = {"SparkRangeA": {f"{b}:{q}": 2 for b, q in queues}}
    ending = {"SparkRangeA": {f"{b}:{q}": 5 for b, q in queues}}
    import json

    ranged = load(
        spark, ns, "SparkRangeA", startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending)
    ).collect()
    assert len(ranged) == 3 * len(queues)
    assert {r.queue_offset for r in ranged} == {2, 3, 4}
    with pytest.raises(Exception, match=r"'latest' \(-1\) is not valid for batch queries"):
        load(spark, ns, "SparkRangeA", startingOffsets="latest").count()  # as Kafka: fail, not an empty read


def test_starting_offsets_by_timestamp(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkByTime", 2)
    produce(ns, "SparkByTime", 30)
    time.sleep(0.05)  # store timestamps are ms: keep the two halves apart
    since_ms = int(time.time() * 1000)
    time.sleep(0.05)
    later = produce(ns, "SparkByTime", 20, start=30)
    rows = load(spark, ns, "SparkByTime", startingOffsets=str(since_ms)).collect()
    assert sorted(r.msg_id for r in rows) == sorted(later)


def test_register_works_where_auto_registration_is_not_used(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    import rocketq.spark

    rocketq.spark.register(spark)
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkRegistered", 1)
    produce(ns, "SparkRegistered", 5)
    assert load(spark, ns, "SparkRegistered").count() == 5
