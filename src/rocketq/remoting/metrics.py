"""Prometheus metrics shared by the daemons: the exporter settings, cheap histograms, RPC latency.

Port of the parts of RocketMQ 5.x that are not broker-specific: the `metricsExporterType`,
`metricsPromExporterHost` and `metricsPromExporterPort` keys of org.apache.rocketmq.common.BrokerConfig
(PROM only; DISABLE is the default), and org.apache.rocketmq.remoting.metrics.RemotingMetricsManager's
`rocketmq_rpc_latency` histogram (labels protocol_type, request_code, response_code, result; bucket
edges 1, 3, 5, 7, 10, 100, 1000, 2000, 3000 ms).

Counting stays cheap on the hot path: a histogram is a dict of plain lists (one bisect and two list
increments per observation, no lock: everything runs on the daemon's event loop) that a custom
collector turns into Prometheus families only when scraped. The exporter is a small HTTP server on
the same event loop rather than prometheus_client's threaded one, so the collectors read the
daemon's tables from the thread that changes them and never see a dict half-updated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter_ns
from typing import Any, Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.process_collector import ProcessCollector
from pydantic import Field

from rocketq.common.config import RocketConfig
from rocketq.common.errors import RocketQError

log = logging.getLogger("rocketq.metrics")

DEFAULT_PROM_EXPORTER_PORT = 5557
RPC_LATENCY_BUCKETS_MS: tuple[float, ...] = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)
_RPC_LATENCY_EDGES_NS = tuple(int(ms * 1_000_000) for ms in RPC_LATENCY_BUCKETS_MS)
# Observations listed before they are counted into buckets, at most (RpcLatency, BrokerMetrics.on_put).
PENDING_FOLD_AT = 4096
_MAX_REQUEST_HEAD = 8192
_READ_TIMEOUT_S = 5.0


class MetricsExporterConfig(RocketConfig):
    """The 5.x exporter keys, shared by BrokerConfig and NamesrvConfig."""

    metrics_exporter_type: Literal["DISABLE", "PROM"] = Field("DISABLE", alias="metricsExporterType")
    """PROM serves Prometheus text format on metricsPromExporterHost:metricsPromExporterPort."""
    metrics_prom_exporter_host: str = Field("127.0.0.1", alias="metricsPromExporterHost")
    """Address the metrics endpoint listens on (5.x listens on every address; we stay on loopback)."""
    metrics_prom_exporter_port: int = Field(
        DEFAULT_PROM_EXPORTER_PORT, alias="metricsPromExporterPort", ge=0, le=65535
    )
    """Port of the metrics endpoint; 0 picks a free one (printed as `METRICS <role> host:port`)."""

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_exporter_type == "PROM"


class MetricsExporterError(RocketQError):
    """The metrics endpoint cannot listen (its port is in use, its address is not ours)."""


# -- cheap histograms ---------------------------------------------------------------------------------
class Histograms:
    """Histograms keyed by a tuple of label values: per key, counts per bucket then the sum."""

    __slots__ = ("bounds", "label_names", "table")

    def __init__(self, label_names: Sequence[str], bounds: Sequence[float]) -> None:
        self.label_names = tuple(label_names)
        self.bounds = tuple(bounds)
        self.table: dict[tuple[Any, ...], list[float]] = {}

    def observe(self, key: tuple[Any, ...], value: float) -> None:
        row = self.table.get(key)
        if row is None:
            row = self.table[key] = [0] * (len(self.bounds) + 2)
        row[bisect_left(self.bounds, value)] += 1
        row[-1] += value

    def family(self, name: str, documentation: str, common: dict[str, str]) -> HistogramMetricFamily:
        """The Prometheus family (cumulative buckets, +Inf, sum), each sample also labelled `common`."""
        family = HistogramMetricFamily(name, documentation, labels=(*common, *self.label_names))
        edges = [_edge(b) for b in self.bounds] + ["+Inf"]
        for key, row in sorted(self.table.items()):
            cumulative, running = [], 0.0
            for edge, count in zip(edges, row[:-1], strict=True):
                running += count
                cumulative.append((edge, running))
            family.add_metric([*common.values(), *key], cumulative, row[-1])
        return family


def _edge(bound: float) -> str:
    return str(float(bound))


def fold_into_buckets(row: list[Any], at: int, pending: list[Any], edges: Sequence[float]) -> None:
    """Count the observations `pending` into the histogram buckets of `row` starting at index `at` (one
    per edge, then +Inf; a value v lands in the first bucket with v <= edge), and empty `pending`.

    One sort and one bisect per edge for the whole list: the hot path only appends to `pending`, which
    costs a fraction of a bisect and two increments per observation.
    """
    pending.sort()
    below = 0
    for i, edge in enumerate(edges, at):
        upto = bisect_right(pending, edge)
        row[i] += upto - below
        below = upto
    row[at + len(edges)] += len(pending) - below  # +Inf
    pending.clear()


# -- RPC latency ----------------------------------------------------------------------------------------
class RpcLatency:
    """rocketmq_rpc_latency: how long each request code took to answer, by response code.

    The dispatcher calls `record` for every request (RemotingServer.time_requests). It only appends
    the elapsed nanoseconds to a list per (request code, response code, result); the lists are folded
    into the histogram rows at scrape time, or once one holds FOLD_AT values (so an endpoint nobody
    scrapes stays bounded): a fold sorts the values and counts each bucket with one bisect per edge
    and one C-level sum, far cheaper per request than a bisect and two increments each time.
    """

    LABELS = ("protocol_type", "request_code", "response_code", "result")
    FOLD_AT = PENDING_FOLD_AT

    def __init__(self) -> None:
        # keyed (request code, response code, result) as ints and a str, labelled at scrape time
        self.histograms = Histograms(self.LABELS[1:], RPC_LATENCY_BUCKETS_MS)
        self._pending: dict[tuple[int, int, str], list[int]] = {}

    def record(self, key: tuple[int, int, str], started_ns: int) -> None:
        """One answered request: `key` is (request code, response code, result), `started_ns` perf_counter_ns() at dispatch."""
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = []
        pending.append(perf_counter_ns() - started_ns)
        if len(pending) >= PENDING_FOLD_AT:  # a module constant: no attribute look-up per request
            self._fold(key, pending)

    def record_many(self, key: tuple[int, int, str], started_ns: int, count: int) -> None:
        """`count` requests answered together (a run of one read), all with `key`: one elapsed time."""
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = []
        pending += [perf_counter_ns() - started_ns] * count
        if len(pending) >= PENDING_FOLD_AT:
            self._fold(key, pending)

    def _fold(self, key: tuple[int, int, str], pending: list[int]) -> None:
        table = self.histograms.table
        row = table.get(key)
        if row is None:
            row = table[key] = [0] * (len(RPC_LATENCY_BUCKETS_MS) + 2)
        row[-1] += sum(pending) / 1e6
        fold_into_buckets(row, 0, pending, _RPC_LATENCY_EDGES_NS)

    def fold(self) -> None:
        """Fold every pending observation into the histogram rows (before they are read)."""
        for key, pending in self._pending.items():
            if pending:
                self._fold(key, pending)

    def family(self, common: dict[str, str]) -> HistogramMetricFamily:
        self.fold()
        labelled = Histograms(self.LABELS, RPC_LATENCY_BUCKETS_MS)
        labelled.table = {
            ("remoting", str(code), str(int(response)), result): row
            for (code, response, result), row in self.histograms.table.items()
        }
        return labelled.family("rocketmq_rpc_latency", "Rpc latency (milliseconds)", common)

    def count(self, request_code: int, response_code: int | None = None) -> float:
        """Requests seen of `request_code` (answered with `response_code` if given); for the NameServer's figures."""
        self.fold()
        total = 0.0
        for (code, response, _result), row in self.histograms.table.items():
            if code == request_code and (response_code is None or response == response_code):
                total += sum(row[:-1])
        return total


# -- collectors and the exporter ---------------------------------------------------------------------
class FunctionCollector:
    """A prometheus_client collector that calls `collect_fn` at scrape time."""

    def __init__(self, collect_fn: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect_fn

    def collect(self) -> Iterable[Metric]:
        return self._collect()


def new_registry(collect_fn: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of its own per daemon (not prometheus_client's global one) with the process figures."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FunctionCollector(collect_fn))
    ProcessCollector(registry=registry)  # process_cpu_seconds_total ..., to read the cost of a workload
    return registry


class PrometheusExporter:
    """Serves GET /metrics (and /) in Prometheus text format from the daemon's event loop."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.requested_port = port
        self._server: asyncio.Server | None = None
        self._scrape_failures = 0

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self.requested_port
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self.requested_port)
        except OSError as exc:
            raise MetricsExporterError(
                f"cannot serve metrics on {self.host}:{self.requested_port} "
                f"(metricsPromExporterHost / metricsPromExporterPort): {exc.strerror or exc}"
            ) from None
        log.info("Prometheus metrics served on http://%s/metrics", self.addr)

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(request_line) < 2 or request_line[0] not in ("GET", "HEAD"):
                self._answer(writer, 405, "text/plain", b"only GET is served\n")
            elif request_line[1].split("?", 1)[0] not in ("/", "/metrics"):
                self._answer(writer, 404, "text/plain", b"metrics are at /metrics\n")
            else:
                body = self._scrape()
                self._answer(writer, 200, CONTENT_TYPE_LATEST, b"" if request_line[0] == "HEAD" else body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # a client that went away or sent no request: nothing to answer
        finally:
            writer.close()

    def _scrape(self) -> bytes:
        try:
            return generate_latest(self.registry)
        except (
            Exception
        ):  # a bug in a collector must not take the daemon down; logged once per run of failures
            self._scrape_failures += 1
            if self._scrape_failures == 1:
                log.exception("a metrics scrape failed")
            return b"# scrape failed, see the daemon's log\n"

    @staticmethod
    def _answer(writer: asyncio.StreamWriter, status: int, content_type: str, body: bytes) -> None:
        reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed"}[status]
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
            + body
        )
