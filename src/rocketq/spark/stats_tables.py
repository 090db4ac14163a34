"""Tables over the broker stats topics: parse the JSON records, then TPS, lag and latency per time bucket.

Used by spark_jobs/broker_stats.py. The record schemas are those of docs/stats-topics.md (schema
version 1). A record belongs to the bucket holding its window's last millisecond, so with
statsInterval dividing the bucket (the default 60 s windows and 60 s buckets) every window falls in
exactly one bucket. Rates divide by the seconds the broker's windows covered in the bucket, not by
the bucket length, so a broker that started mid-minute is not shown slower than it was.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from rocketq.common import constants as C

STATS_TOPICS = (
    C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC,
    C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC,
    C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC,
)

_ENVELOPE = (
    "schemaVersion int, kind string, cluster string, brokerName string, brokerAddr string, "
    "windowStartMs long, windowEndMs long, timestampMs long"
)
TOPIC_SCHEMA = (
    f"{_ENVELOPE}, topic string, putMessages long, putBytes long, putTps double, getMessages long, "
    "getBytes long, putMessagesTotal long"
)
GROUP_SCHEMA = (
    f"{_ENVELOPE}, group string, topic string, getMessages long, getBytes long, getTps double, "
    "sendBackMessages long, lagMessages long, lagLatencyMs long, queues array<struct<queueId:int, "
    "brokerOffset:long, consumerOffset:long, lagMessages:long, lagLatencyMs:long>>"
)
BROKER_SCHEMA = (
    f"{_ENVELOPE}, putMessages long, putBytes long, putTps double, getMessages long, getBytes long, "
    "getTps double, sendBackMessages long, putMessagesTotal long, getMessagesTotal long, putBytesTotal long, "
    "getBytesTotal long, putLatency struct<bucketsUs:array<long>, counts:array<long>, count:long, sumUs:long, "
    "maxUs:long, p50Us:double, p90Us:double, p99Us:double>, store struct<dispatchBehindBytes:long, "
    "flushBehindBytes:long, diskUsedRatio:double, commitLogMinOffset:long, commitLogMaxOffset:long, "
    "commitLogBytes:long>, topicCount int, groupCount int"
)
SCHEMA_OF_TOPIC = {
    C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC: TOPIC_SCHEMA,
    C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC: GROUP_SCHEMA,
    C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC: BROKER_SCHEMA,
}
KIND_OF_TOPIC = {
    C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC: "topic",
    C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC: "group",
    C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC: "broker",
}
PERCENTILES = (("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99), ("p999_us", 0.999))


def read_stats(spark: SparkSession, namesrv: str, **options: str) -> DataFrame:
    """The raw rows of the three stats topics (batch)."""
    reader = spark.read.format("rocketq").option("namesrv", namesrv).option("topic", ",".join(STATS_TOPICS))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def parse(raw: DataFrame, stats_topic: str) -> DataFrame:
    """The records of one stats topic as columns (schema version 1), with the window as timestamps."""
    parsed = raw.where(F.col("topic") == stats_topic).select(
        F.from_json(F.col("body").cast("string"), SCHEMA_OF_TOPIC[stats_topic]).alias("r")
    )
    return (
        parsed.select("r.*")
        .where(F.col("schemaVersion") == 1)
        .withColumn("window_start", F.timestamp_millis("windowStartMs"))
        .withColumn("window_end", F.timestamp_millis("windowEndMs"))
    )


def parse_all(raw: DataFrame) -> dict[str, DataFrame]:
    """{"topic": ..., "group": ..., "broker": ...}: the parsed records of each stats topic."""
    return {KIND_OF_TOPIC[t]: parse(raw, t) for t in STATS_TOPICS}


def _bucket(resolution_s: int) -> Column:
    """The start of the bucket holding a window's last millisecond."""
    ms = resolution_s * 1000
    return F.timestamp_millis(F.floor((F.col("windowEndMs") - 1) / ms) * ms)


def coverage(brokers: DataFrame, resolution_s: int) -> DataFrame:
    """Seconds each broker's windows covered per bucket: (bucket, brokerName, covered_s)."""
    return (
        brokers.withColumn("bucket", _bucket(resolution_s))
        .groupBy("bucket", "brokerName")
        .agg((F.sum(F.col("windowEndMs") - F.col("windowStartMs")) / 1000.0).alias("covered_s"))
    )


def topic_tps(topics: DataFrame, brokers: DataFrame, resolution_s: int = 60) -> DataFrame:
    """Per bucket and topic, over all brokers: messages and bytes in and out, and put TPS."""
    per_broker = (
        topics.withColumn("bucket", _bucket(resolution_s))
        .groupBy("bucket", "brokerName", "topic")
        .agg(
            F.sum("putMessages").alias("put_messages"),
            F.sum("putBytes").alias("put_bytes"),
            F.sum("getMessages").alias("get_messages"),
        )
        .join(coverage(brokers, resolution_s), ["bucket", "brokerName"], "left")
        .withColumn("covered_s", F.coalesce("covered_s", F.lit(float(resolution_s))))
        .withColumn("put_tps", F.col("put_messages") / F.col("covered_s"))
        .withColumn("get_tps", F.col("get_messages") / F.col("covered_s"))
    )
    active = per_broker.groupBy("bucket", "topic").agg(
        F.sum("put_messages").alias("put_messages"),
        F.sum("put_bytes").alias("put_bytes"),
        F.sum("get_messages").alias("get_messages"),
        F.sum("put_tps").alias("put_tps"),
        F.sum("get_tps").alias("get_tps"),
        F.count("*").alias("brokers"),
    )
    # A topic is published only for windows it had traffic in: buckets the brokers covered without
    # a record of the topic are idle buckets (zero), so a chart shows the idle time as such.
    buckets = coverage(brokers, resolution_s).select("bucket").distinct()
    grid = buckets.crossJoin(topics.select("topic").distinct())
    zeros: dict[str, bool | float | int | str] = {
        "put_messages": 0,
        "put_bytes": 0,
        "get_messages": 0,
        "put_tps": 0.0,
        "get_tps": 0.0,
        "brokers": 0,
    }
    return grid.join(active, ["bucket", "topic"], "left").fillna(zeros).orderBy("bucket", "topic")


def group_lag(groups: DataFrame, resolution_s: int = 60) -> DataFrame:
    """Per bucket, group and topic: the lag at the bucket's last window (summed over brokers), gets, send-backs."""
    with_bucket = groups.withColumn("bucket", _bucket(resolution_s))
    last = Window.partitionBy("bucket", "brokerName", "group", "topic").orderBy(F.col("windowEndMs").desc())
    latest = (
        with_bucket.withColumn("rank", F.row_number().over(last))
        .where(F.col("rank") == 1)
        .groupBy("bucket", "group", "topic")
        .agg(F.sum("lagMessages").alias("lag_messages"), F.max("lagLatencyMs").alias("lag_latency_ms"))
    )
    traffic = with_bucket.groupBy("bucket", "group", "topic").agg(
        F.sum("getMessages").alias("get_messages"),
        F.sum("getBytes").alias("get_bytes"),
        F.sum("sendBackMessages").alias("send_back_messages"),
    )
    return latest.join(traffic, ["bucket", "group", "topic"]).orderBy("bucket", "group", "topic")


def put_latency(brokers: DataFrame, resolution_s: int = 60) -> DataFrame:
    """Per bucket and broker: put latency percentiles from the merged histograms (linear inside a bucket)."""
    cells = (
        brokers.withColumn("bucket", _bucket(resolution_s))
        .select(
            "bucket",
            "brokerName",
            F.col("putLatency.bucketsUs").alias("edges"),
            F.col("putLatency.maxUs").alias("max_us"),
            F.posexplode("putLatency.counts").alias("idx", "n"),
        )
        .groupBy("bucket", "brokerName", "idx")
        .agg(F.sum("n").alias("n"), F.max("max_us").alias("max_us"), F.first("edges").alias("edges"))
    )
    by_idx = Window.partitionBy("bucket", "brokerName").orderBy("idx")
    whole = Window.partitionBy("bucket", "brokerName")
    upper = F.when(
        F.col("idx") < F.size("edges"), F.element_at("edges", F.col("idx") + 1).cast("double")
    ).otherwise(F.greatest(F.col("max_us_all").cast("double"), F.col("lower")))
    ranked = (
        cells.withColumn("max_us_all", F.max("max_us").over(whole))
        .withColumn("total", F.sum("n").over(whole))
        .withColumn("cum", F.sum("n").over(by_idx.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
        .withColumn(
            "lower",
            F.when(F.col("idx") == 0, F.lit(0.0)).otherwise(
                F.element_at("edges", F.col("idx")).cast("double")
            ),
        )
        .withColumn("upper", upper)
    )
    aggs: list[Column] = [F.first("total").alias("count"), F.first("max_us_all").alias("max_us")]
    for name, q in PERCENTILES:
        rank = F.lit(q) * F.col("total")
        inside = F.col("lower") + (F.col("upper") - F.col("lower")) * (
            rank - (F.col("cum") - F.col("n"))
        ) / F.col("n")
        value = F.least(inside, F.col("max_us_all").cast("double"))  # never above the slowest put seen
        hit = (F.col("n") > 0) & (F.col("cum") >= rank)
        aggs.append(F.min_by(F.when(hit, value), F.when(hit, F.col("idx"))).alias(name))
    return (
        ranked.groupBy("bucket", "brokerName")
        .agg(*aggs)
        .where(F.col("count") > 0)
        .orderBy("bucket", "brokerName")
    )


def build_tables(records: dict[str, DataFrame], resolution_s: int = 60) -> dict[str, DataFrame]:
    """The job's output tables from parsed records (parse_all)."""
    return {
        "topic_tps": topic_tps(records["topic"], records["broker"], resolution_s),
        "group_lag": group_lag(records["group"], resolution_s),
        "put_latency": put_latency(records["broker"], resolution_s),
    }


def rows(df: DataFrame) -> list[dict[str, Any]]:
    """A small table on the driver, as dicts (for charts and checks)."""
    return [r.asDict() for r in df.collect()]
