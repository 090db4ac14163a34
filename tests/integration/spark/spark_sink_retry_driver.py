"""A Spark driver whose sink task fails once mid-write and is retried (run as a subprocess by the tests).

    python spark_sink_retry_driver.py NAMESRV TOPIC ROWS FAIL_AT_ROW

local[2,2] lets a failed task run a second time (plain local[2] never retries). The first attempt of
the only partition raises at row FAIL_AT_ROW, after the sink sent some batches (how many depends on
how far the rows had travelled; 10-row batches keep them moving); the retry sends every row. Prints "WROTE <rows>" when the write succeeded.
"""

from __future__ import annotations

import sys

from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(namesrv: str, topic: str, rows: int, fail_at: int) -> None:
    spark = (
        SparkSession.builder.master("local[2,2]")
        .appName("rocketq-sink-retry")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        # Small batches between the JVM and the Python workers, so rows reach the sink before the failure.
        .config("spark.sql.execution.python.udf.maxRecordsPerBatch", "10")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10")
        .config("spark.buffer.size", "4096")  # the JVM's buffered streams to and from Python workers
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("FATAL")

    @F.udf("string")
    def body(i: int) -> str:
        ctx = TaskContext.get()
        if i == fail_at and ctx is not None and ctx.attemptNumber() == 0:
            raise RuntimeError(f"failing attempt 0 at row {i} on purpose")
        return f"row-{i}".ljust(1000, ".")

    df = spark.range(rows, numPartitions=1).select(
        body("id").alias("body"), F.concat(F.lit("k"), "id").alias("keys")
    )
    df.write.mode("append").format("rocketq").option("namesrv", namesrv).option("topic", topic).option(
        "batchSize", "20"
    ).option("maxInflight", "1").save()
    print(f"WROTE {rows}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
