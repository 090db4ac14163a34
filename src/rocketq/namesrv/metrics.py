"""NamesrvMetrics: the NameServer's Prometheus metrics (metricsExporterType=PROM).

RocketMQ 5.x's NameServer exports only rocketmq_rpc_latency; the figures an operator asks of a
NameServer first are added under our names in the same style (docs/observability.md):
rocketmq_namesrv_brokers_alive, rocketmq_namesrv_topic_number, rocketmq_namesrv_cluster_number and
rocketmq_namesrv_route_requests_total{result="found"|"not_found"}. All are read at scrape time from
the route tables and the RPC latency histogram, so the request path only pays for the latter.
Every sample carries node_type="namesrv" and node_id (the listen address).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from rocketq.remoting.metrics import PrometheusExporter, RpcLatency, new_registry
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode

if TYPE_CHECKING:
    from rocketq.namesrv.config import NamesrvConfig
    from rocketq.namesrv.route_info import RouteInfoManager


class NamesrvMetrics:
    def __init__(self, config: NamesrvConfig, routes: RouteInfoManager) -> None:
        self.config = config
        self.routes = routes
        self.rpc = RpcLatency()
        self.node_id = ""  # host:port once the server listens
        self.registry = new_registry(self.collect)
        self.exporter = PrometheusExporter(
            self.registry, config.metrics_prom_exporter_host, config.metrics_prom_exporter_port
        )

    def collect(self) -> Iterable[Metric]:
        common = {"node_type": "namesrv", "node_id": self.node_id}
        labels, values = tuple(common), list(common.values())
        yield self.rpc.family(common)
        for name, doc, value in (
            (
                "rocketmq_namesrv_brokers_alive",
                "Brokers whose registration has not expired",
                len(self.routes.live),
            ),
            ("rocketmq_namesrv_topic_number", "Topics with a route", len(self.routes.topics)),
            ("rocketmq_namesrv_cluster_number", "Clusters with a broker", len(self.routes.clusters)),
        ):
            gauge = GaugeMetricFamily(name, doc, labels=labels)
            gauge.add_metric(values, value)
            yield gauge
        requests = CounterMetricFamily(
            "rocketmq_namesrv_route_requests",
            "Route look-ups (GET_ROUTEINFO_BY_TOPIC) by result",
            labels=(*labels, "result"),
        )
        found = self.rpc.count(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS)
        requests.add_metric([*values, "found"], found)
        requests.add_metric(
            [*values, "not_found"], self.rpc.count(RequestCode.GET_ROUTEINFO_BY_TOPIC) - found
        )
        yield requests
