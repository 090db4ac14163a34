"""Auto-registration of `format("rocketq")`: Spark imports every `pyspark_*` module on the Python path
that has a `DefaultSource` (a DataSource subclass) and registers it under its name()."""

from rocketq.spark.source import RocketqDataSource as DefaultSource

__all__ = ["DefaultSource"]
