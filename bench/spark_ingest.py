"""Ingest rate of the rocketq Spark data source: batch (spark.read) and streaming (readStream, AvailableNow).

    .venv/bin/python bench/spark_ingest.py                                  # 100,000 x 1 KiB, 8 queues
    .venv/bin/python bench/spark_ingest.py --messages 20000 --queues 4 --runs 1
    .venv/bin/python bench/spark_ingest.py --namesrv 127.0.0.1:9876 --topic T   # an existing cluster

Starts a throw-away NameServer and broker (subprocesses, temporary store) unless --namesrv is given,
fills a topic with --messages messages of --body-size bytes (batch sends), then reads the whole topic
with Spark (local[2] by default) into the `noop` sink, which makes Spark fetch and convert every row
and keep none: batch (`spark.read...write.format("noop")`) and streaming (`readStream`, AvailableNow,
a fresh checkpoint each run). A warm-up read of a small range starts the Python workers first. The
figure is messages / wall-clock second of the Spark job (session start excluded); the best of --runs.
The same run also reads the topic with the project's own pull client in plain Python (one process,
rocketq.spark.client.SyncClient.read_range over every queue, no Spark) and prints each Spark figure as
a ratio of that one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from rocketq.client.blocking import Admin, Message, Producer
from rocketq.spark.client import SyncClient
from rocketq.testing.cluster import LocalCluster


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--body-size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--namesrv", help="use this cluster instead of starting one")
    p.add_argument("--topic", default="SparkIngestBench")
    p.add_argument("--no-fill", action="store_true", help="read what the topic holds, send nothing")
    p.add_argument("--pull-batch-size", default="32")
    return p.parse_args()


def fill(namesrv: str, topic: str, count: int, body_size: int, queues: int) -> None:
    with Admin(namesrv_addr=namesrv) as admin:
        admin.create_topic(topic, read_queues=queues, write_queues=queues)
    body = b"x" * body_size
    started = time.monotonic()
    with Producer("spark-bench-producer", namesrv_addr=namesrv) as producer:
        for first in range(0, count, 32):
            producer.send_batch([Message(topic, body, tags="bench", keys=f"k{i}") for i in range(first, min(first + 32, count))])
    print(f"filled {topic}: {count} x {body_size} B in {time.monotonic() - started:.1f} s", file=sys.stderr)


def session(master: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName("rocketq-spark-ingest-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def reader(spark: SparkSession, args: argparse.Namespace, streaming: bool) -> Any:
    source = spark.readStream if streaming else spark.read
    return (
        source.format("rocketq")
        .option("namesrv", args.namesrv)
        .option("topic", args.topic)
        .option("pullBatchSize", args.pull_batch_size)
        .load()
    )


def batch_run(spark: SparkSession, args: argparse.Namespace) -> float:
    started = time.monotonic()
    reader(spark, args, False).write.format("noop").mode("overwrite").save()
    return time.monotonic() - started


def stream_run(spark: SparkSession, args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as checkpoint:
        started = time.monotonic()
        query = (
            reader(spark, args, True)
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        elapsed = time.monotonic() - started
        rows = sum(p["numInputRows"] for p in query.recentProgress)
    if rows != args.messages:
        raise SystemExit(f"the streaming run read {rows} rows, expected {args.messages}")
    return elapsed


def plain_run(spark: SparkSession, args: argparse.Namespace) -> float:
    """The baseline: every queue read with the pull client in this process (decoded MessageExt lists)."""
    started = time.monotonic()
    rows = 0
    with SyncClient(args.namesrv) as client:
        routes = client.routes(args.topic)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high, batch=int(args.pull_batch_size)):
                rows += len(msgs)
    if rows != args.messages:
        raise SystemExit(f"the plain pull read {rows} rows, expected {args.messages}")
    return time.monotonic() - started


def measure(args: argparse.Namespace) -> None:
    if not args.no_fill:
        fill(args.namesrv, args.topic, args.messages, args.body_size, args.queues)
    spark = session(args.master)
    try:
        warm = spark.read.format("rocketq").option("namesrv", args.namesrv).option("topic", args.topic)
        warm.option("endingOffsets", "0").load().count()  # starts the Python workers, no rows
        count = reader(spark, args, False).count()
        if count != args.messages and not args.no_fill:
            raise SystemExit(f"the topic holds {count} messages, expected {args.messages}")
        args.messages = count
        baseline = 0.0
        for name, run in (("plain", plain_run), ("batch", batch_run), ("streaming", stream_run)):
            times = [run(spark, args) for _ in range(args.runs)]
            best = min(times)
            rate = args.messages / best
            baseline = baseline or rate
            print(
                f"{name:9s} {args.messages} msgs x {args.body_size} B, {args.queues} queues, {args.master}: "
                f"best {rate:,.0f} msg/s = {rate / baseline:.2f}x plain ({best:.2f} s; "
                f"runs {', '.join(f'{t:.2f}' for t in times)} s)"
            )
    finally:
        spark.stop()


def main() -> None:
    args = parse_args()
    if args.namesrv:
        measure(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp))
        asyncio.run(cluster.start())
        try:
            args.namesrv = cluster.namesrv_addr
            measure(args)
        finally:
            asyncio.run(cluster.close())


if __name__ == "__main__":
    main()
