"""Prometheus metrics of real daemons (metricsExporterType=PROM): exact counts, lags, histograms, bad ports."""

from __future__ import annotations

import asyncio
import re
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from scrape_helpers import PROM, metrics_addr, scrape, value

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, Message, MessageQueue, Producer
from rocketq.testing.cluster import DaemonStartError
from rocketq.testing.waiting import wait_for

TOPIC, GROUP = "TopicMetrics", "cg-metrics"
GRAFANA_JSON = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "rocketq-dashboard.json"


async def test_scrape_shows_exact_counts_lags_and_histograms(cluster_factory) -> None:
    broker_labels = {"cluster": "DefaultCluster", "node_type": "broker", "topic": TOPIC}
    group_labels = broker_labels | {"consumer_group": GROUP, "is_retry": "false", "is_system": "false"}
    cluster = await cluster_factory(broker_overrides=PROM, namesrv_overrides=PROM)
    broker, namesrv = cluster.brokers[0], cluster.namesrvs[0]
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=1, write_queues=1)
    async with Producer("pg-metrics", namesrv_addr=ns) as producer:
        first = [await producer.send(Message(TOPIC, f"m{i}".encode())) for i in range(10)]
        mq = MessageQueue(TOPIC, first[0].queue.broker_name, 0)
        async with LitePullConsumer(
            GROUP,
            namesrv_addr=ns,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            auto_commit=False,
        ) as lite:
            lite.assign([mq])
            got: list = []
            for _ in range(100):
                got.extend(await lite.poll(timeout_ms=200))
                if len(got) >= 10:
                    break
            assert len(got) == 10
            await lite.commit()
        families = await scrape(broker)
        assert value(families, "rocketmq_messages_out_total", **group_labels) == 10
        assert value(families, "rocketmq_consumer_lag_messages", **group_labels) == 0
        for i in range(5):  # sent after the consumer left: a backlog of 5
            await producer.send(Message(TOPIC, f"late{i}".encode()))

    async def lag_is_five() -> dict | None:
        families = await scrape(broker)
        return families if value(families, "rocketmq_consumer_lag_messages", **group_labels) == 5 else None

    families = await wait_for(lag_is_five, timeout_s=15, what="a consumer lag of 5 messages")
    assert (
        value(
            families, "rocketmq_messages_in_total", message_type="normal", is_system="false", **broker_labels
        )
        == 15
    )
    assert value(families, "rocketmq_throughput_in_total", message_type="normal", **broker_labels) > 15 * 2
    assert value(families, "rocketmq_throughput_out_total", **group_labels) > 0
    # The consumer's last long-polling pull may still be held by the broker when the late messages
    # arrive, and be answered with some of them: those are out and in flight (pulled, not committed).
    out = value(families, "rocketmq_messages_out_total", **group_labels)
    inflight = value(families, "rocketmq_consumer_inflight_messages", **group_labels)
    assert 10 <= out <= 15 and inflight == out - 10
    assert value(families, "rocketmq_consumer_ready_messages", **group_labels) == 5 - inflight
    assert value(families, "rocketmq_consumer_lag_latency", **group_labels) >= 0
    assert value(families, "rocketmq_consumer_queueing_latency", **group_labels) >= 0
    # Histograms: cumulative buckets ending in +Inf, the count equal to the observations.
    size_buckets = [
        s for s in families["rocketmq_message_size"] if s[0].endswith("_bucket") and s[1]["topic"] == TOPIC
    ]
    assert [b[1]["le"] for b in size_buckets][-1] == "+Inf" and len(size_buckets) == 7
    assert size_buckets[0][2] == 15, "every message is smaller than 1 KiB"
    assert value(families, "rocketmq_message_size_count", topic=TOPIC) == 15
    sends = value(
        families, "rocketmq_rpc_latency_count", request_code="310", response_code="0", result="success"
    )
    assert sends == 15, "SEND_MESSAGE_V2 (310) answered SUCCESS 15 times"
    assert value(families, "rocketmq_topic_number", node_type="broker") >= 1
    assert value(families, "rocketmq_broker_permission", node_type="broker") == 6
    assert value(families, "rocketmq_storage_size", node_type="broker") > 0
    assert value(families, "rocketmq_storage_dispatch_behind_bytes", node_type="broker") is not None
    assert value(families, "rocketmq_processor_watermark", processor="send") == 0
    assert value(families, "process_cpu_seconds_total") > 0

    ns_families = await scrape(namesrv)
    # Every metric the shipped Grafana dashboard charts is one the daemons export.
    grafana = GRAFANA_JSON.read_text()
    exported = {name for fams in (families, ns_families) for fam in fams.values() for name, _, _ in fam}
    exported |= {name for fams in (families, ns_families) for name in fams}  # families with no sample now
    charted = set(re.findall(r"rocketmq_[a-z_]+", grafana))
    assert charted and charted <= exported, f"charted but not exported: {sorted(charted - exported)}"
    assert value(ns_families, "rocketmq_namesrv_brokers_alive") == 1
    assert value(ns_families, "rocketmq_namesrv_topic_number") >= 1
    assert value(ns_families, "rocketmq_namesrv_route_requests_total", result="found") >= 1
    assert (
        value(
            ns_families, "rocketmq_rpc_latency_count", request_code="103", response_code="0", result="success"
        )
        >= 1
    )


async def test_metrics_are_off_unless_enabled(cluster) -> None:
    assert "METRICS" not in cluster.brokers[0].stdout_text()
    assert "METRICS" not in cluster.namesrvs[0].stdout_text()


@pytest.mark.parametrize("role", ["broker", "namesrv"])
async def test_a_metrics_port_in_use_fails_the_start_naming_the_key(cluster_factory, role) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = PROM | {"metricsPromExporterPort": taken.getsockname()[1]}
        overrides = (
            {"broker_overrides": busy} if role == "broker" else {"namesrv_overrides": busy, "broker_count": 0}
        )
        with pytest.raises(DaemonStartError, match="metricsPromExporterPort"):
            await cluster_factory(**overrides)


async def test_metrics_addr_is_printed(cluster_factory) -> None:
    cluster = await cluster_factory(broker_count=0, namesrv_overrides=PROM)
    host, port = metrics_addr(cluster.namesrvs[0]).rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0

    def status_of(path: str, method: str = "GET") -> int:
        request = urllib.request.Request(f"http://{host}:{port}{path}", method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert await asyncio.to_thread(status_of, "/metrics") == 200
    assert await asyncio.to_thread(status_of, "/other") == 404
    assert await asyncio.to_thread(status_of, "/metrics", "POST") == 405
