"""RpcLatency: observations kept as raw nanoseconds on the hot path, folded into buckets when read."""

from __future__ import annotations

from time import perf_counter_ns

from prometheus_client.core import HistogramMetricFamily

from rocketq.remoting.metrics import RPC_LATENCY_BUCKETS_MS, RpcLatency

MS = 1_000_000


def _buckets(family: HistogramMetricFamily, **labels: str) -> dict[str, float]:
    return {
        s.labels["le"]: s.value
        for s in family.samples
        if s.name.endswith("_bucket") and all(s.labels.get(k) == v for k, v in labels.items())
    }


def test_observations_land_in_the_first_bucket_at_or_above_them() -> None:
    rpc = RpcLatency()
    now = perf_counter_ns()
    # started so long ago that the elapsed time is (just over) 2 ms, 50 ms, 5 s; 2 more in the 2 ms bucket
    for ago in (2 * MS, 2 * MS, 2 * MS, 50 * MS, 5000 * MS):
        rpc.record((310, 0, "success"), now - ago)
    rpc.record((310, 1, "success"), now - 200 * MS)
    family = rpc.family({"cluster": "c"})
    ok = _buckets(family, request_code="310", response_code="0", result="success")
    assert ok["1.0"] == 0 and ok["3.0"] == 3 and ok["10.0"] == 3 and ok["100.0"] == 4
    assert ok["3000.0"] == 4 and ok["+Inf"] == 5
    failed = _buckets(family, response_code="1", result="success")
    assert failed["100.0"] == 0 and failed["1000.0"] == 1
    total = next(
        s.value for s in family.samples if s.name.endswith("_sum") and s.labels["response_code"] == "0"
    )
    assert 5056 <= total < 5100  # milliseconds
    assert rpc.count(310) == 6 and rpc.count(310, 0) == 5


def test_pending_observations_are_bounded_without_a_scrape() -> None:
    rpc = RpcLatency()
    started = perf_counter_ns()
    for _ in range(RpcLatency.FOLD_AT * 2 + 3):
        rpc.record((11, 0, "success"), started)
    assert all(len(p) < RpcLatency.FOLD_AT for p in rpc._pending.values())
    row = rpc.histograms.table[(11, 0, "success")]
    assert sum(row[:-1]) == RpcLatency.FOLD_AT * 2  # folded twice; 3 still pending
    assert rpc.count(11) == RpcLatency.FOLD_AT * 2 + 3
    assert len(row) == len(RPC_LATENCY_BUCKETS_MS) + 2


def test_a_run_answered_together_counts_each_request_with_one_elapsed_time() -> None:
    rpc = RpcLatency()
    now = perf_counter_ns()
    rpc.record_many((310, 0, "success"), now - 2 * MS, 64)
    rpc.record((310, 0, "success"), now - 50 * MS)
    ok = _buckets(rpc.family({"cluster": "c"}), request_code="310", response_code="0")
    assert ok["1.0"] == 0 and ok["3.0"] == 64 and ok["100.0"] == 65 and ok["+Inf"] == 65
    for _ in range(RpcLatency.FOLD_AT // 64 + 1):  # runs alone fill the pending list: still bounded
        rpc.record_many((310, 0, "success"), now, 64)
    assert all(len(p) < RpcLatency.FOLD_AT for p in rpc._pending.values())
    assert rpc.count(310) == 65 + 64 * (RpcLatency.FOLD_AT // 64 + 1)
