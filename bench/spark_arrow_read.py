"""CPU per message of the Spark source's reading side, in one process, without Spark.

    .venv/bin/python bench/spark_arrow_read.py                  # throw-away NameServer + broker, 50000 x 1 KiB
    .venv/bin/python bench/spark_arrow_read.py --count 20000 --rounds 5

What a Spark executor's Python worker does for the `rocketq` source, minus Spark: read every queue of
a topic into Arrow batches with rocketq.spark.source.read_partition (the pulls and the column
builder), against the reference of bench/spark_ingest.py (the same pulls with
rocketq.spark.client.SyncClient.read_range, every column of a Spark row read into a tuple per message).
A backlog of `--count` messages is sent first; then rounds, each running every mode once in turn, and
the median per mode. "cpu us" is this process's CPU time (time.process_time) per message: the broker
runs in its own processes and is left out. ROCKETQ_NO_EXTENSIONS=1 measures the pure-Python record
functions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.client.blocking import Admin, Message, Producer
from rocketq.common.message import MessageExt
from rocketq.spark.arrow_batches import batch_of_messages, reader_schema
from rocketq.spark.client import SyncClient
from rocketq.spark.source import ROWS_PER_ARROW_BATCH, QueueRange, QueueRanges, read_partition
from rocketq.testing.cluster import LocalCluster

TOPIC = "bench_spark_arrow_read"
SCHEMA = reader_schema()


def backlog(namesrv: str, count: int, size: int, queues: int) -> None:
    with Admin(namesrv_addr=namesrv) as admin:
        admin.create_topic(TOPIC, read_queues=queues, write_queues=queues)
    body = b"x" * size
    with Producer("bench_spark_arrow_read_producer", namesrv_addr=namesrv) as producer:
        for first in range(0, count, 32):
            batch = range(first, min(first + 32, count))
            producer.send_batch([Message(TOPIC, body, tags="bench", keys=f"k{i}") for i in batch])


def plain(namesrv: str) -> int:
    rows = 0
    with SyncClient(namesrv) as client:
        routes = client.routes(TOPIC)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high):
                for m in msgs:
                    props = m.properties
                    row = (m.topic, m.broker_name, m.queue_id, m.queue_offset, m.msg_id, props.get("TAGS"),
                           props.get("KEYS"), props, m.body, m.born_timestamp, m.store_timestamp)  # fmt: skip
                    rows += len(row) > 0
    return rows


def arrow(namesrv: str) -> int:
    """The source's read: read_partition over one partition of every queue (batches from pull bodies)."""
    with SyncClient(namesrv) as client:
        routes = client.routes(TOPIC)
        ranges = [
            QueueRange(namesrv, "rocketq-spark", TOPIC, r.broker_name, r.queue_id, low, high, r.addr)
            for r, (low, high) in zip(routes, client.bounds(routes), strict=True)
        ]
    return sum(b.num_rows for b in read_partition(QueueRanges(ranges), SCHEMA))


def arrow_views(namesrv: str) -> int:
    """The same batches from decoded messages (batch_of_messages, the reference builder)."""
    rows = 0
    with SyncClient(namesrv) as client:
        routes = client.routes(TOPIC)
        pending: list[MessageExt] = []
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high):
                pending += msgs
                if len(pending) >= ROWS_PER_ARROW_BATCH:
                    rows += batch_of_messages(pending, SCHEMA).num_rows
                    pending = []
        if pending:
            rows += batch_of_messages(pending, SCHEMA).num_rows
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, default=50_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--modes", default="plain,arrow,arrow-views", help="comma-separated, of the default")
    args = p.parse_args()
    every: dict[str, Callable[[str], int]] = {"plain": plain, "arrow": arrow, "arrow-views": arrow_views}
    modes = {name: every[name] for name in args.modes.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp))
        asyncio.run(cluster.start())
        try:
            backlog(cluster.namesrv_addr, args.count, args.size, args.queues)
            for fn in modes.values():  # warm-up: imports, connections, the broker's page cache
                fn(cluster.namesrv_addr)
            cpu: dict[str, list[float]] = {name: [] for name in modes}
            for _ in range(args.rounds):
                for name, fn in modes.items():
                    started = time.process_time()
                    rows = fn(cluster.namesrv_addr)
                    cpu[name].append(time.process_time() - started)
                    if rows != args.count:
                        raise SystemExit(f"{name} read {rows} rows, expected {args.count}")
        finally:
            asyncio.run(cluster.close())
    load = os.getloadavg()
    for name, times in cpu.items():
        us = statistics.median(times) / args.count * 1e6
        print(
            f"{name:11s} {args.count} x {args.size} B: cpu us/msg median {us:.2f} (rounds {', '.join(f'{t:.2f}' for t in times)} s)"
        )
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
