"""BrokerStatsManager: what the send/pull hot paths count, windows, totals, the latency histogram."""

from __future__ import annotations

from stats_helpers import T0

from rocketq.broker.stats.counters import (
    LATENCY_BUCKETS_US,
    BrokerStatsManager,
    LatencyHistogram,
    histogram_percentile,
)
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.store.status import AppendResult, PutMessageStatus, PutResult


def stored(msgs: int = 1, size: int = 100, status: PutMessageStatus = PutMessageStatus.PUT_OK) -> PutResult:
    return PutResult(status, AppendResult(wrote_bytes=size, msg_num=msgs))


def test_puts_count_messages_and_bytes_per_topic_and_batches_count_each_message(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    stats.on_put("A", stored(1, 100), 1_000)
    stats.on_put("A", stored(5, 700), 1_000)
    stats.on_put("B", stored(1, 50), 1_000)
    assert stats.window.topics == {"A": [6, 800], "B": [1, 50]}
    assert stats.window.put_latency.count == 3  # one latency sample per request, not per message
    assert stats.put_total_now() == 7


def test_refused_puts_and_the_stats_topics_themselves_are_not_counted(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    stats.on_put("A", PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 1_000)
    stats.on_put("A", stored(status=PutMessageStatus.MESSAGE_ILLEGAL), 1_000)
    for topic in C.BROKER_STATS_TOPICS:
        stats.on_put(topic, stored(), 1_000)
        stats.on_get("g", topic, 3, 300)
        stats.on_send_back("g", topic)
    assert stats.window.topics == {}
    assert stats.window.groups == {}
    # stored but flushed late still counts, as in Java
    stats.on_put("A", stored(status=PutMessageStatus.FLUSH_DISK_TIMEOUT), 1_000)
    assert stats.window.topics == {"A": [1, 100]}


def test_a_run_of_puts_counts_as_its_puts_one_by_one(clock: ManualClock) -> None:
    topics = ["A", "B", "A", "A", min(C.BROKER_STATS_TOPICS)]  # the last one is never counted
    results = [
        stored(1, 100),
        stored(1, 50),
        PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE),
        stored(1, 70, PutMessageStatus.FLUSH_DISK_TIMEOUT),
        stored(),
    ]
    one_by_one, run = BrokerStatsManager(clock), BrokerStatsManager(clock)
    for topic, result in zip(topics, results, strict=True):
        one_by_one.on_put(topic, result, 2_500_000)
    run.on_put_run(topics, results, 2_500_000)
    assert run.window.topics == one_by_one.window.topics == {"A": [2, 170], "B": [1, 50]}
    mine, theirs = run.window.put_latency, one_by_one.window.put_latency
    assert (mine.counts, mine.count, mine.sum_us, mine.max_us) == (
        theirs.counts,
        theirs.count,
        theirs.sum_us,
        theirs.max_us,
    )
    assert mine.count == 3
    run.on_put_run(["A"], [PutResult(PutMessageStatus.MESSAGE_ILLEGAL)], 9_000_000)
    assert run.window.put_latency.count == 3  # nothing stored, no latency sample


def test_gets_and_send_backs_count_per_group_and_topic(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    stats.on_get("g1", "A", 32, 3200)
    stats.on_get("g1", "A", 8, 800)
    stats.on_get("g2", "A", 1, 10)
    stats.on_send_back("g1", "A")
    assert stats.window.groups == {("g1", "A"): [40, 4000, 1], ("g2", "A"): [1, 10, 0]}
    assert stats.window.get_totals() == (41, 4010, 1)


def test_a_snapshot_closes_the_window_exactly_and_keeps_totals(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    stats.on_put("A", stored(2, 200), 1_000)
    clock.advance(10_000)
    first = stats.snapshot()
    assert (first.start_ms, first.end_ms) == (T0, T0 + 10_000)
    assert first.topics == {"A": [2, 200]}
    stats.on_put("A", stored(3, 300), 1_000)
    stats.on_get("g", "A", 4, 400)
    clock.advance(10_000)
    second = stats.snapshot()
    assert second.start_ms == first.end_ms  # windows tile time: nothing counted twice or lost
    assert second.topics == {"A": [3, 300]}
    assert stats.window.topics == {} and stats.window.start_ms == second.end_ms
    totals = stats.totals
    assert (totals.put_msgs, totals.put_bytes, totals.get_msgs, totals.get_bytes) == (5, 500, 4, 400)
    assert totals.topic_put_msgs == {"A": 5}


def test_runtime_info_reports_totals_rates_and_java_keys(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    for _ in range(20):
        stats.on_put("A", stored(1, 100), 300_000)  # 300 us
    stats.on_get("g", "A", 10, 1000)
    clock.advance(10_000)
    stats.snapshot()
    stats.on_put("A", stored(1, 100), 2_000_000)  # 2 ms, in the open window
    info = stats.runtime_info()
    assert info["msgPutTotalTodayNow"] == "21"
    assert info["msgGetTotalTodayNow"] == "10"
    assert info["rocketmq_messages_in_total"] == "21"
    assert info["rocketmq_throughput_in_total"] == "2100"
    assert info["rocketmq_messages_out_total"] == "10"
    assert info["putTps"] == "2.00"  # the last closed window: 20 puts in 10 s
    assert info["getTotalTps"] == info["getTransferedTps"] == "1.00"
    assert info["putMessageDistributeTime"].startswith("[<=0ms]:20 [0~10ms]:1 [10~50ms]:0")
    assert all(isinstance(v, str) for v in info.values())


def test_runtime_info_has_the_rates_mqadmin_parses_before_the_first_window(clock: ManualClock) -> None:
    # mqadmin clusterList splits putTps and getTransferedTps: a missing key was a NullPointerException there.
    info = BrokerStatsManager(clock).runtime_info()
    assert (info["putTps"], info["getTransferedTps"], info["getTotalTps"]) == ("0.00", "0.00", "0.00")


def test_daily_marks_move_at_midnight(clock: ManualClock) -> None:
    stats = BrokerStatsManager(clock)
    stats.on_put("A", stored(7, 70), 1_000)
    stats.snapshot()
    assert stats.runtime_info()["msgPutTotalTodayMorning"] == "0"
    clock.advance(86_400_000)
    stats.on_put("A", stored(3, 30), 1_000)
    stats.snapshot()  # the first window of the new day: the morning mark is the total when it closed
    info = stats.runtime_info()
    assert info["msgPutTotalYesterdayMorning"] == "0"
    assert info["msgPutTotalTodayMorning"] == "10"
    assert info["msgPutTotalTodayNow"] == "10"


def test_histogram_buckets_are_inclusive_upper_edges_and_percentiles_interpolate() -> None:
    h = LatencyHistogram()
    h.record(50_000)  # 50 us -> first bucket
    h.record(51_000)  # 51 us -> second bucket
    h.record(20_000_000_000)  # 20 s -> overflow bucket
    assert h.counts[0] == 1 and h.counts[1] == 1 and h.counts[-1] == 1
    assert (h.count, h.max_us) == (3, 20_000_000)
    counts = [0] * (len(LATENCY_BUCKETS_US) + 1)
    counts[LATENCY_BUCKETS_US.index(1_000)] = 100  # 100 samples in (500, 1000] us
    assert histogram_percentile(counts, 0.5) == 750.0
    assert histogram_percentile(counts, 1.0) == 1000.0
    assert histogram_percentile([0] * len(counts), 0.99) == 0.0
    merged = LatencyHistogram()
    merged.merge(h)
    merged.merge(h)
    assert merged.count == 6 and merged.counts[-1] == 2
