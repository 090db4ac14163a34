"""Spark integration tests: one SparkSession for the whole directory, quiet and fast.

Every test here is marked `spark` (needs Java and the `spark` extra); without Java the session
fixture skips. Clusters are LocalClusters (real daemons as subprocesses), started per module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from spark_helpers import spark_env


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    pyspark_sql = pytest.importorskip("pyspark.sql")
    for key, value in spark_env().items():
        os.environ.setdefault(key, value)
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("rocketq-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
