"""rocketq.spark: a PySpark data source for rocketq / RocketMQ topics (`format("rocketq")`).

    import rocketq.spark
    rocketq.spark.register(spark)            # or rely on the pyspark_rocketq module (registered by Spark)
    df = spark.read.format("rocketq").option("namesrv", "127.0.0.1:9876").option("topic", "T").load()

Options, columns and offsets: docs/spark.md. Needs the `spark` extra (pyspark, pyarrow).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMAT_NAME", "register"]

FORMAT_NAME = "rocketq"


def register(spark: Any) -> None:
    """Register `format("rocketq")` with a SparkSession (needed only where auto-registration is off)."""
    from rocketq.spark.source import RocketqDataSource

    spark.dataSource.register(RocketqDataSource)
