"""Broker stats job: read the rmq_sys_broker_stats_* topics, write parquet tables and PNG charts.

    spark-submit spark_jobs/broker_stats.py --namesrv 127.0.0.1:9876 --out /tmp/stats
    spark-submit --master spark://127.0.0.1:7077 spark_jobs/broker_stats.py --namesrv ... --out ...

Batch by default (everything the stats topics hold); --streaming ingests only what is new since the
last run, exactly once, through a checkpoint under OUT/_checkpoint (Trigger.AvailableNow), then
rebuilds the tables from all records ingested so far. Output:

    OUT/raw/{topic,group,broker}/   the parsed records (parquet)
    OUT/tables/topic_tps/           per bucket and topic: put/get messages, bytes, put TPS
    OUT/tables/group_lag/           per bucket, group and topic: lag (messages, ms), gets, send-backs
    OUT/tables/put_latency/         per bucket and broker: put latency p50/p90/p99/p99.9 (us)
    OUT/charts/*.png                topic_tps, group_lag, put_latency, overview

Buckets are --resolution-s seconds (default 60: per minute). See spark_jobs/README.md and docs/spark.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

import rocketq.spark
from rocketq.spark import stats_tables as T
from rocketq.spark.progress import describe
from rocketq.spark.source import SCHEMA_DDL


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="broker_stats.py", description=__doc__.split("\n")[0])
    p.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR"), help="NameServers host:port[;host:port]")
    p.add_argument("--out", required=True, help="output directory (local path or any Hadoop URI)")
    p.add_argument("--master", help="Spark master when not run by spark-submit --master (default local[2])")
    p.add_argument("--streaming", action="store_true", help="ingest incrementally with a checkpoint")
    p.add_argument("--resolution-s", type=int, default=60, help="bucket length in seconds (default 60)")
    p.add_argument("--starting-offsets", default="earliest", help="startingOffsets of the stats topics")
    p.add_argument("--no-charts", action="store_true", help="write the tables only")
    args = p.parse_args(argv)
    if not args.namesrv:
        p.error("--namesrv is required (or set NAMESRV_ADDR)")
    if args.resolution_s <= 0:
        p.error("--resolution-s must be positive")
    return args


def session(master: str | None) -> SparkSession:
    builder = (
        SparkSession.builder.appName("rocketq-broker-stats")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Not started by spark-submit (which sets the master it was given, local[*] by default).
        builder = builder.master("local[2]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    # format("rocketq") is registered by Spark itself through the installed pyspark_rocketq module;
    # ROCKETQ_SPARK_REGISTER=1 registers it explicitly where that module is not on the Python path.
    if os.environ.get("ROCKETQ_SPARK_REGISTER") == "1":
        rocketq.spark.register(spark)
    return spark


def ingest_batch(spark: SparkSession, args: argparse.Namespace, raw_dir: str) -> None:
    raw = T.read_stats(spark, args.namesrv, startingOffsets=args.starting_offsets).cache()  # read once, not per kind
    for kind, records in T.parse_all(raw).items():
        records.write.mode("overwrite").parquet(f"{raw_dir}/{kind}")
    raw.unpersist()


def ingest_streaming(spark: SparkSession, args: argparse.Namespace, raw_dir: str, checkpoint: str) -> None:
    stream = (
        spark.readStream.format("rocketq")
        .option("namesrv", args.namesrv)
        .option("topic", ",".join(T.STATS_TOPICS))
        .option("startingOffsets", args.starting_offsets)
        .load()
    )

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # Overwriting the batch's own directory makes a replayed batch idempotent: exactly once.
        for kind, records in T.parse_all(batch).items():
            records.write.mode("overwrite").parquet(f"{raw_dir}/{kind}/batch_id={batch_id}")

    query = (
        stream.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    for progress in query.recentProgress:
        if progress["numInputRows"]:
            print(f"ingest {describe(progress)}")


def load_raw(spark: SparkSession, raw_dir: str) -> dict[str, DataFrame]:
    """The parsed records ingested so far; an empty table for a kind nothing was ingested for."""
    out = {}
    no_rows = spark.createDataFrame([], SCHEMA_DDL)
    for topic in T.STATS_TOPICS:
        kind = T.KIND_OF_TOPIC[topic]
        try:
            out[kind] = spark.read.parquet(f"{raw_dir}/{kind}")
        except AnalysisException:  # the path does not exist yet
            out[kind] = T.parse(no_rows, topic)
    return out


def run(spark: SparkSession, args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Ingest, build and write the tables, draw the charts; the tables as rows."""
    out = args.out.rstrip("/")
    raw_dir = f"{out}/raw"
    if args.streaming:
        ingest_streaming(spark, args, raw_dir, f"{out}/_checkpoint")
    else:
        ingest_batch(spark, args, raw_dir)
    tables = T.build_tables(load_raw(spark, raw_dir), args.resolution_s)
    collected = {}
    for name, table in tables.items():
        table.write.mode("overwrite").parquet(f"{out}/tables/{name}")
        collected[name] = T.rows(spark.read.parquet(f"{out}/tables/{name}"))
        print(f"{name}: {len(collected[name])} rows -> {out}/tables/{name}")
    if not args.no_charts:
        if "://" in out and not out.startswith("file://"):
            print(f"charts are drawn to local paths only; none for {out}")
        else:
            from rocketq.spark.stats_charts import write_charts

            for path in write_charts(Path(out.removeprefix("file://")) / "charts", collected, args.resolution_s):
                print(f"chart -> {path}")
    return collected


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spark = session(args.master)
    try:
        run(spark, args)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
