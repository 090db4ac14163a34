"""failOnDataLoss: a query whose offsets fell below the queue's minimum after retention deleted files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import bounds, create_topic, produce, running_cluster, wait_for

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

# Small commit-log files that expire about a second after they are full, deleted at any hour.
RETENTION = {
    "mappedFileSizeCommitLog": 64 * 1024,
    "mappedFileSizeConsumeQueue": 20 * 64,
    "mappedFileReserveAhead": 0,
    "fileReservedTime": 0.0003,
    "deleteWhen": ";".join(f"{h:02d}" for h in range(24)),
    "cleanResourceInterval": 200,
}


def run(df: Any, out: Path, checkpoint: Path) -> Any:
    query = (
        df.select("queue_offset", "msg_id")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
    except Exception as exc:  # StreamingQueryException: the query failed
        return exc
    return query.exception()


def test_offsets_below_the_minimum_fail_or_are_skipped(spark: Any, tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster", broker_overrides=RETENTION) as cluster:
        ns = cluster.namesrv_addr
        broker = cluster.brokers[0].name
        create_topic(ns, "SparkLoss", 1)

        def stream(**options: str) -> Any:
            reader = spark.readStream.format("rocketq").option("namesrv", ns).option("topic", "SparkLoss")
            for key, value in options.items():
                reader = reader.option(key, value)
            return reader.load()

        out, checkpoint = tmp_path / "out", tmp_path / "ck"
        produce(ns, "SparkLoss", 50)
        assert run(stream(), out, checkpoint) is None
        assert spark.read.parquet(str(out)).count() == 50

        # The query is down while 600 more messages arrive and retention deletes the oldest files.
        produce(ns, "SparkLoss", 600, body_size=400, start=50)
        wait_for("retention to delete past offset 50", lambda: bounds(ns, "SparkLoss")[(broker, 0)][0] > 50)

        error = run(stream(), out, checkpoint)
        assert error is not None and "are gone" in str(error) and "failOnDataLoss=false" in str(error)
        assert spark.read.parquet(str(out)).count() == 50  # the failed batch wrote nothing

        assert run(stream(failOnDataLoss="false"), out, checkpoint) is None
        offsets = sorted(r.queue_offset for r in spark.read.parquet(str(out)).collect())
        _low, high = bounds(ns, "SparkLoss")[(broker, 0)]
        assert offsets[:50] == list(range(50))
        resumed = offsets[50:]
        assert resumed and resumed[0] > 50 and resumed == list(range(resumed[0], high))

        # A batch read from offset 0 fails the same way, or skips what is gone.
        from_zero = json.dumps({"SparkLoss": {f"{broker}:0": 0}})
        batch = spark.read.format("rocketq").option("namesrv", ns).option("topic", "SparkLoss")
        with pytest.raises(Exception, match="are gone"):
            batch.option("startingOffsets", from_zero).load().collect()
        rows = batch.option("startingOffsets", from_zero).option("failOnDataLoss", "false").load().collect()
        got = sorted(r.queue_offset for r in rows)
        assert got and got[0] > 50 and got == list(range(got[0], high))
