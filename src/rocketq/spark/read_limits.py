"""The read limits of a Python streaming source: PySpark's own (pyspark.sql.streaming.datasource, which
came with PySpark 4.2), else stand-ins of the same names for PySpark 4.0 and 4.1.

PySpark 4.0 and 4.1 call DataSourceStreamReader.latestOffset() without a start offset or a limit and
never ask a source for its default read limit or to prepare for Trigger.AvailableNow, so there the
stand-ins are only names the stream reader is written against: maxOffsetsPerTrigger,
minOffsetsPerTrigger and maxTriggerDelay take no effect (docs/spark.md, Install). Where PySpark has the
module, these are its classes, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
else:
    try:
        from pyspark.sql.streaming.datasource import (
            ReadAllAvailable,
            ReadLimit,
            ReadMaxRows,
            SupportsTriggerAvailableNow,
        )
    except ImportError:  # PySpark 4.0 / 4.1
        from dataclasses import dataclass

        class ReadLimit:
            """How much a micro-batch may read (never passed to a source by PySpark 4.0 / 4.1)."""

        @dataclass
        class ReadAllAvailable(ReadLimit):
            """Everything available."""

        @dataclass
        class ReadMaxRows(ReadLimit):
            """At most `max_rows` rows."""

            max_rows: int

        class SupportsTriggerAvailableNow:
            """The mixin PySpark 4.2 looks for; 4.0 / 4.1 run Trigger.AvailableNow without it."""


__all__ = ["ReadAllAvailable", "ReadLimit", "ReadMaxRows", "SupportsTriggerAvailableNow"]
