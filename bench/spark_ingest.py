"""Ingest rate of the rocketq Spark data source: batch (spark.read) and streaming (readStream, AvailableNow).

    .venv/bin/python bench/spark_ingest.py                                  # 100,000 x 1 KiB, 8 queues
    .venv/bin/python bench/spark_ingest.py --messages 20000 --queues 4 --runs 1
    .venv/bin/python bench/spark_ingest.py --namesrv 127.0.0.1:9876 --topic T   # an existing cluster

Starts a throw-away NameServer and broker (subprocesses, temporary store) unless --namesrv is given,
fills a topic with --messages messages of --body-size bytes (batch sends), then reads the whole topic
with Spark (local[2] by default) into the `noop` sink, which makes Spark fetch and convert every row
and keep none: batch (`spark.read...write.format("noop")`) and streaming (`readStream`, AvailableNow,
a fresh checkpoint each run). Two warm-up reads (an empty one, then the whole topic) start the Python
workers and the JIT first. The figure is messages / wall-clock second of each job (session start
excluded); the best of --runs rounds, each round running every mode once in turn (plain, Spark batch,
Spark streaming, ...) so that a change of load touches them all alike.

The reference ("plain") reads the same messages with the project's own pull client in plain Python
(one process, rocketq.spark.client.SyncClient.read_range over every queue, no Spark) and reads every
column the Spark source outputs (topic, broker, queue id and offset, msg id, tags, keys, the property
map, the body, both timestamps) into a tuple per message: the same data as a Spark row. "plain-lazy"
only counts the pulled messages (their fields are decoded on first read, so it decodes none): the
bound of the pulls alone. Spark reads with maxPartitions = the cores of a local[N] master
(--max-partitions; 0 = one partition per queue, the Kafka source's layout, shown as batch/queue).
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
    p.add_argument(
        "--max-partitions", type=int, help="the source's maxPartitions (default: N of local[N]; 0 = none)"
    )
    return p.parse_args()


def fill(namesrv: str, topic: str, count: int, body_size: int, queues: int) -> None:
    with Admin(namesrv_addr=namesrv) as admin:
        admin.create_topic(topic, read_queues=queues, write_queues=queues)
    body = b"x" * body_size
    started = time.monotonic()
    with Producer("spark-bench-producer", namesrv_addr=namesrv) as producer:
        for first in range(0, count, 32):
            producer.send_batch(
                [
                    Message(topic, body, tags="bench", keys=f"k{i}")
                    for i in range(first, min(first + 32, count))
                ]
            )
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


def reader(spark: SparkSession, args: argparse.Namespace, streaming: bool, *, packed: bool = True) -> Any:
    source = spark.readStream if streaming else spark.read
    source = source.format("rocketq").option("namesrv", args.namesrv).option("topic", args.topic)
    if packed and args.max_partitions:
        source = source.option("maxPartitions", str(args.max_partitions))
    return source.option("pullBatchSize", args.pull_batch_size).load()


STREAM_PHASES: list[list[dict[str, int]]] = []


def batch_run(spark: SparkSession, args: argparse.Namespace) -> float:
    started = time.monotonic()
    reader(spark, args, False).write.format("noop").mode("overwrite").save()
    return time.monotonic() - started


def batch_per_queue_run(spark: SparkSession, args: argparse.Namespace) -> float:
    started = time.monotonic()
    reader(spark, args, False, packed=False).write.format("noop").mode("overwrite").save()
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
        # Where a stream's time goes besides its batch: Spark's own phases of each trigger (ms).
        STREAM_PHASES.append([dict(p["durationMs"]) for p in query.recentProgress])
    if rows != args.messages:
        raise SystemExit(f"the streaming run read {rows} rows, expected {args.messages}")
    return elapsed


def plain_run(spark: SparkSession, args: argparse.Namespace, *, columns: bool = True) -> float:
    """The reference: every queue read with the pull client in this process, every column of each
    message read into a tuple (columns=False: the messages only counted, no field decoded)."""
    started = time.monotonic()
    rows = 0
    with SyncClient(args.namesrv) as client:
        routes = client.routes(args.topic)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high, batch=int(args.pull_batch_size)):
                if columns:
                    for m in msgs:
                        props = m.properties
                        row = (m.topic, m.broker_name, m.queue_id, m.queue_offset, m.msg_id, props.get("TAGS"),
                               props.get("KEYS"), props, m.body, m.born_timestamp, m.store_timestamp)  # fmt: skip
                        rows += len(row) > 0
                else:
                    rows += len(msgs)
    if rows != args.messages:
        raise SystemExit(f"the plain pull read {rows} rows, expected {args.messages}")
    return time.monotonic() - started


def plain_lazy_run(spark: SparkSession, args: argparse.Namespace) -> float:
    return plain_run(spark, args, columns=False)


def measure(args: argparse.Namespace) -> None:
    if args.max_partitions is None:
        cores = args.master.removeprefix("local[").removesuffix("]")
        args.max_partitions = int(cores) if cores.isdigit() else 0
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
        modes = [("plain", plain_run), ("plain-lazy", plain_lazy_run), ("batch", batch_run)]
        if args.max_partitions:
            modes.append(("batch/queue", batch_per_queue_run))
        modes.append(("streaming", stream_run))
        times: dict[str, list[float]] = {name: [] for name, _run in modes}
        for _round in range(args.runs):
            for name, run in modes:
                times[name].append(run(spark, args))
        baseline = args.messages / min(times["plain"])
        load = os.getloadavg()
        for name, _run in modes:
            best = min(times[name])
            rate = args.messages / best
            print(
                f"{name:11s} {args.messages} msgs x {args.body_size} B, {args.queues} queues, {args.master}, "
                f"maxPartitions {args.max_partitions if name in ('batch', 'streaming') else '-'}: "
                f"best {rate:,.0f} msg/s = {rate / baseline:.2f}x plain ({best:.2f} s; "
                f"runs {', '.join(f'{t:.2f}' for t in times[name])} s)"
            )
        for i, phases in enumerate(STREAM_PHASES):
            print(f"streaming run {i + 1}, each trigger's durationMs: {phases}")
        print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
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
