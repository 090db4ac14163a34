"""examples/spark_*.py run to completion against a real cluster (their own Spark driver each)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_helpers import running_cluster, spark_env

from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EXPECTED = {"spark_read_topic.py": "stream read 20 then 5 messages; output: 25 rows, 25 distinct"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("examples")) as started:
        yield started


def test_every_spark_example_has_an_expectation() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("spark_*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_spark_example_runs(cluster: LocalCluster, script: str) -> None:
    done = subprocess.run(
        [sys.executable, script, "--namesrv-addr", cluster.namesrv_addr],
        cwd=EXAMPLES, env={**os.environ, **spark_env()}, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert EXPECTED[script] in done.stdout, done.stdout
