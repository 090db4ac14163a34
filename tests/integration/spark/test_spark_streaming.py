"""spark.readStream.format("rocketq"): read limits, and exactly once across a killed and restarted driver."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, produce, running_cluster, spark_env, wait_for

from rocketq.client.blocking import Admin
from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

DRIVER = Path(__file__).with_name("spark_stream_driver.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("stream")) as started:
        yield started


def stream(spark: Any, namesrv: str, topic: str, **options: str) -> Any:
    reader = spark.readStream.format("rocketq").option("namesrv", namesrv).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def run_available_now(df: Any, out: Path, checkpoint: Path) -> list[int]:
    """Run the query to the end of what is there now; the input rows of each batch."""
    query = (
        df.select("topic", "broker_name", "queue_id", "queue_offset", "msg_id", "body")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_max_messages_per_trigger_splits_the_backlog_into_batches(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkLimited", 4)
    sent = produce(ns, "SparkLimited", 500)
    df = stream(
        spark,
        ns,
        "SparkLimited",
        maxMessagesPerTrigger="150",
        group="spark-progress",
        commitOffsetsToBroker="true",
    )
    assert run_available_now(df, tmp_path / "out", tmp_path / "ck") == [150, 150, 150, 50]
    rows = spark.read.parquet(str(tmp_path / "out")).select("msg_id").collect()
    assert sorted(r.msg_id for r in rows) == sorted(sent)
    # A restart with nothing new adds no batch; with new messages it reads just those.
    more = produce(ns, "SparkLimited", 60, start=500)
    assert run_available_now(df, tmp_path / "out", tmp_path / "ck") == [60]
    rows = spark.read.parquet(str(tmp_path / "out")).select("msg_id").collect()
    assert sorted(r.msg_id for r in rows) == sorted(sent + more)
    # Progress reaches the brokers one run late in AvailableNow mode: Spark commits a run's last batch
    # when the query next starts. After the second run the first run's end (all 500) is committed.
    with Admin(namesrv_addr=ns) as admin:
        progress = admin.consumer_progress("spark-progress", "SparkLimited")
    assert sum(p.consumer_offset for p in progress) >= 500


def test_a_killed_driver_restarted_from_its_checkpoint_yields_every_message_once(
    spark: Any, cluster: LocalCluster, tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    create_topic(ns, "SparkKilled", 4)
    sent = produce(ns, "SparkKilled", 600)
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    env = {**os.environ, **spark_env()}
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), ns, "SparkKilled", str(checkpoint), str(out), "100"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )  # fmt: skip
    more: list[str] = []
    producer = threading.Thread(target=lambda: more.extend(produce(ns, "SparkKilled", 400, start=600)))
    try:
        # Kill it (the Python driver and its JVM) once a few batches are committed, while messages still arrive.
        producer.start()
        wait_for(
            "three committed batches",
            lambda: driver.poll() is None and len(list((checkpoint / "commits").glob("[0-9]*"))) >= 3,
            timeout_s=120,
        )
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
        log.close()
        producer.join(60)
    committed = len(list((checkpoint / "commits").glob("[0-9]*")))
    done = spark.read.parquet(str(out)).count()
    assert 0 < done < 1000, "the driver was to be killed mid-stream"
    run_available_now(stream(spark, ns, "SparkKilled"), out, checkpoint)
    rows = spark.read.parquet(str(out)).select("broker_name", "queue_id", "queue_offset", "msg_id").collect()
    assert len(rows) == 1000, (
        f"{len(rows)} rows after the restart ({done} before, {committed} batches committed)"
    )
    assert sorted(r.msg_id for r in rows) == sorted(sent + more)
    assert len({(r.broker_name, r.queue_id, r.queue_offset) for r in rows}) == 1000
