"""spark_jobs/broker_stats.py over a cluster that ran a known workload: tables, charts, broker-status."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, produce, read_json_topic, running_cluster, spark_env, wait_for

from rocketq.client import admin_cli
from rocketq.common import constants as C
from rocketq.spark.client import SyncClient
from rocketq.testing.cluster import LocalCluster

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

JOB = Path(__file__).parents[3] / "spark_jobs" / "broker_stats.py"
PNG = b"\x89PNG\r\n\x1a\n"
SENT_A, SENT_B, LAG_COMMIT = 300, 120, 10


@pytest.fixture(scope="module")
def workload(
    tmp_path_factory: pytest.TempPathFactory, spark: Any
) -> Iterator[tuple[LocalCluster, dict[str, int]]]:
    """A cluster (stats every second) that took 420 sends, one full read of StatsA and one committed offset."""
    with running_cluster(
        tmp_path_factory.mktemp("stats"), broker_overrides={"statsInterval": 1000}
    ) as cluster:
        ns = cluster.namesrv_addr
        create_topic(ns, "StatsA", 2)
        create_topic(ns, "StatsB", 1)
        produce(ns, "StatsA", SENT_A, body_size=100)
        produce(ns, "StatsB", SENT_B, body_size=1000)
        read = spark.read.format("rocketq").option("namesrv", ns).option("topic", "StatsA")
        assert read.option("group", "stats-reader").load().count() == SENT_A
        with SyncClient(ns, group="stats-lag") as client:
            route = client.routes("StatsA")[0]
            high = client.max_offset(route)
            client.commit_offset(route, LAG_COMMIT)
        expected = {"lag": high - LAG_COMMIT}

        def published() -> bool:  # a window closed after all of it: the broker record shows the totals
            brokers = read_json_topic(ns, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC)
            groups = read_json_topic(ns, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC)
            return any(
                b["putMessagesTotal"] == SENT_A + SENT_B and b["getMessagesTotal"] == SENT_A for b in brokers
            ) and any(g["group"] == "stats-lag" for g in groups)

        wait_for("the stats windows holding the workload", published, timeout_s=30)
        yield cluster, expected


def check_tables(tables: dict[str, list[dict[str, Any]]], expected: dict[str, int]) -> None:
    tps = tables["topic_tps"]
    put = {t: sum(r["put_messages"] for r in tps if r["topic"] == t) for t in ("StatsA", "StatsB")}
    assert put == {"StatsA": SENT_A, "StatsB": SENT_B}
    assert sum(r["get_messages"] for r in tps if r["topic"] == "StatsA") == SENT_A
    assert not {r["topic"] for r in tps} & C.BROKER_STATS_TOPICS  # the stats topics do not count themselves
    assert all(r["put_tps"] >= 0 for r in tps) and any(r["put_tps"] > 0 for r in tps)
    lag = tables["group_lag"]
    reader = [r for r in lag if (r["group"], r["topic"]) == ("stats-reader", "StatsA")]
    assert sum(r["get_messages"] for r in reader) == SENT_A
    lagging = sorted((r for r in lag if r["group"] == "stats-lag"), key=lambda r: r["bucket"])
    assert lagging[-1]["lag_messages"] == expected["lag"] and lagging[-1]["lag_latency_ms"] > 0
    latency = tables["put_latency"]
    assert sum(r["count"] for r in latency) == SENT_A + SENT_B  # one sample per send request
    for row in latency:
        assert 0 < row["p50_us"] <= row["p90_us"] <= row["p99_us"] <= row["p999_us"] <= max(row["max_us"], 1)


def test_spark_submit_writes_the_tables_and_charts(
    workload: tuple[LocalCluster, dict[str, int]], tmp_path: Path
) -> None:
    cluster, expected = workload
    out = tmp_path / "stats"
    spark_submit = Path(sys.executable).with_name("spark-submit")
    command = [
        str(spark_submit), "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
        "--driver-java-options", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        str(JOB), "--namesrv", cluster.namesrv_addr, "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(
        command, env={**os.environ, **spark_env()}, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "topic_tps:" in done.stdout and "chart ->" in done.stdout
    spark_env_python = importlib.util.find_spec("pyarrow.parquet")
    assert spark_env_python is not None
    import pyarrow.parquet as pq

    tables = {
        name: pq.read_table(out / "tables" / name).to_pylist()
        for name in ("topic_tps", "group_lag", "put_latency")
    }
    check_tables(tables, expected)
    for chart in ("topic_tps", "get_tps", "group_lag", "lag_latency", "put_latency", "overview"):
        data = (out / "charts" / f"{chart}.png").read_bytes()
        assert data.startswith(PNG) and len(data) > 5_000


def test_streaming_ingest_is_incremental_and_exactly_once(
    workload: tuple[LocalCluster, dict[str, int]],
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, expected = workload
    spec = importlib.util.spec_from_file_location("broker_stats_job", JOB)
    assert spec is not None and spec.loader is not None
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    args = job.parse_args(
        ["--namesrv", cluster.namesrv_addr, "--out", str(tmp_path / "s"), "--streaming", "--no-charts"]
    )
    check_tables(job.run(spark, args), expected)
    assert "ingest batch 0: " in capsys.readouterr().out  # progress with the lag behind the latest offsets
    brokers_before = spark.read.parquet(str(tmp_path / "s" / "raw" / "broker")).count()
    wait_for(
        "a later broker window",
        lambda: (
            len(read_json_topic(cluster.namesrv_addr, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC)) > brokers_before
        ),
    )
    check_tables(job.run(spark, args), expected)  # the second run adds only the new windows
    raw = spark.read.parquet(str(tmp_path / "s" / "raw" / "broker"))
    assert raw.count() == raw.select("windowEndMs").distinct().count() > brokers_before


def test_broker_status_reports_the_same_totals(
    workload: tuple[LocalCluster, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, expected = workload
    code = admin_cli.main(
        ["--namesrv-addr", cluster.namesrv_addr, "--json", "broker-status", "-b", cluster.brokers[0].addr]
    )
    assert code == 0
    figures = {row["key"]: row["value"] for row in json.loads(capsys.readouterr().out)}
    assert figures["rocketmq_messages_in_total"] == str(SENT_A + SENT_B)
    assert figures["msgPutTotalTodayNow"] == str(SENT_A + SENT_B)
    assert figures["msgGetTotalTodayNow"] == str(SENT_A)
    assert figures["rocketmq_consumer_lag_messages"] == str(expected["lag"])
    assert figures["statsInterval"] == "1000"
    assert "[<=0ms]:" in figures["putMessageDistributeTime"]
