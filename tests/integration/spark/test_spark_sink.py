"""df.write / writeStream .format("rocketq") against real daemons: round trips, and a retried task's duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, produce, running_cluster, spark_env

from rocketq.common.message import MessageExt
from rocketq.spark.client import SyncClient
from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

RETRY_DRIVER = Path(__file__).with_name("spark_sink_retry_driver.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("sink"), broker_count=2) as started:
        yield started


def read_topic(namesrv: str, topic: str) -> list[MessageExt]:
    out: list[MessageExt] = []
    with SyncClient(namesrv) as client:
        routes = client.routes(topic)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high):
                out.extend(msgs)
    return out


def test_a_batch_write_sends_every_row_with_its_columns(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SinkBatch", 4)
    rows = [
        (f"body-{i}".encode(), f"k{i} kk{i}", "TagA" if i % 2 else "TagB", {"seq": str(i)})
        for i in range(500)
    ]
    df = spark.createDataFrame(rows, "body binary, keys string, tags string, properties map<string,string>")
    df.repartition(3).write.mode("append").format("rocketq").option("namesrv", ns).option(
        "topic", "SinkBatch"
    ).save()
    got = read_topic(ns, "SinkBatch")
    assert len(got) == 500
    by_seq = {int(m.properties["seq"]): m for m in got}
    assert sorted(by_seq) == list(range(500))
    for i, m in by_seq.items():
        assert (m.body, m.keys, m.tags) == (
            f"body-{i}".encode(),
            [f"k{i}", f"kk{i}"],
            "TagA" if i % 2 else "TagB",
        )
    assert len({m.msg_id for m in got}) == 500
    # Read back through the source too: what the sink wrote is what the source reads.
    back = spark.read.format("rocketq").option("namesrv", ns).option("subscribe", "SinkBatch").load()
    assert sorted(r.body for r in back.select("body").collect()) == sorted(r[0] for r in rows)


def test_the_topic_can_come_from_a_column_and_the_body_from_value(spark: Any, cluster: LocalCluster) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SinkColA", 2)
    create_topic(ns, "SinkColB", 2)
    df = spark.createDataFrame(
        [("SinkColA" if i % 3 else "SinkColB", f"v{i}") for i in range(90)], "topic string, value string"
    )
    df.write.mode("append").format("rocketq").option("namesrv", ns).save()
    assert sorted(m.body for m in read_topic(ns, "SinkColA")) == sorted(
        f"v{i}".encode() for i in range(90) if i % 3
    )
    assert len(read_topic(ns, "SinkColB")) == 30
    with pytest.raises(Exception, match="needs a 'body'"):
        spark.createDataFrame([("x",)], "topic string").write.mode("append").format("rocketq").option(
            "namesrv", ns
        ).save()


def test_a_streaming_query_copies_one_topic_into_another(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SinkStreamIn", 2)
    create_topic(ns, "SinkStreamOut", 2)
    produce(ns, "SinkStreamIn", 120)
    source = (
        spark.readStream.format("rocketq").option("namesrv", ns).option("subscribe", "SinkStreamIn").load()
    )
    query = (
        source.select("body", "keys", "properties")
        .writeStream.format("rocketq")
        .option("namesrv", ns)
        .option("topic", "SinkStreamOut")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    got = read_topic(ns, "SinkStreamOut")
    assert sorted(int(m.properties["seq"]) for m in got) == list(range(120))
    assert sorted(m.body for m in got) == sorted(
        f"SinkStreamIn-{i}".encode().ljust(64, b".") for i in range(120)
    )


def test_a_retried_task_sends_duplicates_with_the_same_ids(cluster: LocalCluster, tmp_path: Path) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SinkRetry", 2)
    env = {**os.environ, **spark_env()}
    done = subprocess.run(
        [sys.executable, str(RETRY_DRIVER), ns, "SinkRetry", "200", "150"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert "WROTE 200" in done.stdout, done.stdout[-2000:] + done.stderr[-4000:]
    got = read_topic(ns, "SinkRetry")
    ids = Counter(m.msg_id for m in got)
    assert len(ids) == 200  # every row once by id...
    twice = {m.msg_id: m.body for m in got if ids[m.msg_id] == 2}
    sent_first = len(twice)
    assert len(got) == 200 + sent_first  # ...and what the failed attempt sent, again, under the same ids
    assert 0 < sent_first < 150, (
        "the first attempt was to fail after sending some rows: " + done.stderr[-3000:]
    )
    # The failed attempt sent whole batches of 20 from the start of its partition.
    assert sent_first % 20 == 0
    assert sorted(twice.values()) == sorted(f"row-{i}".ljust(1000, ".").encode() for i in range(sent_first))
    by_id: dict[str, set[bytes]] = {}
    for m in got:
        by_id.setdefault(m.msg_id, set()).add(m.body)
    assert all(len(bodies) == 1 for bodies in by_id.values())  # a duplicate is the same message
    print(
        json.dumps(
            {
                "rows": 200,
                "delivered": len(got),
                "distinct_ids": len(ids),
                "sent_by_failed_attempt": sent_first,
            }
        )
    )
