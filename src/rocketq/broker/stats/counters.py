"""BrokerStatsManager: the broker's traffic counters, read out one window at a time.

Port of the counting half of org.apache.rocketmq.store.stats.BrokerStatsManager (4.9.8: TOPIC_PUT_NUMS,
TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS) and
of StoreStatsService's put latency distribution, with the 5.x metric names documented in
docs/stats-topics.md. Deviations: instead of Java's sampled StatsItems (10 s / 1 min / 1 h moving
windows), the counters accumulate into one window that `snapshot()` swaps out, so a published record
holds exact deltas and nothing is counted twice or lost between windows. Totals since boot and the
"today morning" / "yesterday morning" figures of GET_BROKER_RUNTIME_INFO are kept beside them. Put
latency uses finer buckets than Java's (our puts take microseconds), with Java's bucket edges among
them so putMessageDistributeTime can still be given.

Hot path: `on_put` / `on_get` are one set look-up, one dict look-up and a few list increments; the
broker's own stats topics are never counted.
"""

from __future__ import annotations

import datetime as _dt
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.store.status import PutMessageStatus, PutResult

# Upper bucket edges (inclusive) of the put latency histogram, in microseconds; one more bucket holds
# everything slower. Java's StoreStatsService edges (1, 10, 50, 100, 200, 500 ms, 1..5, 10 s) are among them.
LATENCY_BUCKETS_US: tuple[int, ...] = (
    50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
    1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000, 10_000_000,
)  # fmt: skip
_JAVA_EDGES_US = (1_000, 10_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 3_000_000,
                  4_000_000, 5_000_000, 10_000_000)  # fmt: skip
_JAVA_LABELS = ("<=0ms", "0~10ms", "10~50ms", "50~100ms", "100~200ms", "200~500ms", "500ms~1s", "1~2s",
                "2~3s", "3~4s", "4~5s", "5~10s", "10s~")  # fmt: skip

# A put in any of these states is stored (Java counts them all as put).
_PUT_OK = PutMessageStatus.PUT_OK
_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)

PUT_MSGS, PUT_BYTES = 0, 1  # indexes of a topic's counters
GET_MSGS, GET_BYTES, SEND_BACKS = 0, 1, 2  # indexes of a group+topic's counters


class LatencyHistogram:
    """Counts per bucket of LATENCY_BUCKETS_US, plus count, sum and max (all in microseconds)."""

    __slots__ = ("count", "counts", "max_us", "sum_us")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS_US) + 1)
        self.count = 0
        self.sum_us = 0
        self.max_us = 0

    def record(self, elapsed_ns: int, times: int = 1) -> None:
        """`times` observations of `elapsed_ns` (the puts of one run share one store call's time)."""
        us = elapsed_ns // 1000
        self.counts[bisect_left(LATENCY_BUCKETS_US, us)] += times
        self.count += times
        self.sum_us += us * times
        if us > self.max_us:
            self.max_us = us

    def merge(self, other: LatencyHistogram) -> None:
        for i, n in enumerate(other.counts):
            self.counts[i] += n
        self.count += other.count
        self.sum_us += other.sum_us
        self.max_us = max(self.max_us, other.max_us)

    def percentile_us(self, q: float) -> float:
        """The q-quantile (0 < q <= 1), interpolated linearly inside its bucket; 0 when empty."""
        return histogram_percentile(self.counts, q, self.max_us)

    def java_distribution(self) -> str:
        """StoreStatsService.putMessageDistributeTime's text: `[<=0ms]:n [0~10ms]:n ...` over Java's edges."""
        java = [0] * len(_JAVA_LABELS)
        for edge, n in zip((*LATENCY_BUCKETS_US, 1 << 62), self.counts, strict=True):
            # A bucket ending at or below a Java edge belongs to the Java bucket that edge closes.
            java[bisect_left(_JAVA_EDGES_US, edge)] += n
        return " ".join(f"[{label}]:{n}" for label, n in zip(_JAVA_LABELS, java, strict=True))

    def to_json(self) -> dict[str, object]:
        return {
            "bucketsUs": list(LATENCY_BUCKETS_US),
            "counts": list(self.counts),
            "count": self.count,
            "sumUs": self.sum_us,
            "maxUs": self.max_us,
        }


def histogram_percentile(counts: list[int], q: float, max_us: float = 0.0) -> float:
    """A quantile of a LATENCY_BUCKETS_US histogram; the open last bucket ends at `max_us`."""
    total = sum(counts)
    if total == 0:
        return 0.0
    rank = q * total
    seen = 0
    lower = 0.0
    for i, n in enumerate(counts):
        upper = float(LATENCY_BUCKETS_US[i]) if i < len(LATENCY_BUCKETS_US) else max(max_us, lower)
        if n and seen + n >= rank:
            value = lower + (upper - lower) * max(0.0, rank - seen) / n
            return min(value, max_us) if max_us > 0 else value  # never above the slowest one seen
        seen += n
        lower = upper
    return lower


@dataclass(slots=True)
class StatsWindow:
    """What was counted between `start_ms` and `end_ms` (end is 0 while the window is open)."""

    start_ms: int
    end_ms: int = 0
    topics: dict[str, list[int]] = field(default_factory=dict)  # topic -> [put msgs, put bytes]
    groups: dict[tuple[str, str], list[int]] = field(
        default_factory=dict
    )  # (group, topic) -> [get msgs, get bytes, send-backs]
    put_latency: LatencyHistogram = field(default_factory=LatencyHistogram)

    def put_totals(self) -> tuple[int, int]:
        return sum(c[PUT_MSGS] for c in self.topics.values()), sum(c[PUT_BYTES] for c in self.topics.values())

    def get_totals(self) -> tuple[int, int, int]:
        values = self.groups.values()
        return (
            sum(c[GET_MSGS] for c in values),
            sum(c[GET_BYTES] for c in values),
            sum(c[SEND_BACKS] for c in values),
        )


@dataclass(slots=True)
class Totals:
    """Counts since the broker started, and the daily marks GET_BROKER_RUNTIME_INFO reports."""

    put_msgs: int = 0
    put_bytes: int = 0
    get_msgs: int = 0
    get_bytes: int = 0
    send_backs: int = 0
    topic_put_msgs: dict[str, int] = field(default_factory=dict)
    topic_put_bytes: dict[str, int] = field(default_factory=dict)
    day: _dt.date | None = None
    put_today_morning: int = 0
    put_yesterday_morning: int = 0
    get_today_morning: int = 0
    get_yesterday_morning: int = 0


class BrokerStatsManager:
    """Counters of one broker. Single-threaded (the broker's event loop), like every processor."""

    def __init__(
        self, clock: Clock = SYSTEM_CLOCK, excluded_topics: frozenset[str] = C.BROKER_STATS_TOPICS
    ) -> None:
        self.clock = clock
        self.excluded_topics = excluded_topics
        self.totals = Totals()
        self.last_window: StatsWindow | None = None
        # Gauges read at request time (store figures, consumer lag), set by BrokerStatsService.
        self.gauges: Callable[[], Mapping[str, object]] | None = None
        self._window = StatsWindow(clock.now_ms())
        self._roll_day(clock.now_ms())

    @property
    def window(self) -> StatsWindow:
        """The window being counted now (open)."""
        return self._window

    # -- hot path ---------------------------------------------------------------------------------
    def on_put(self, topic: str, result: PutResult, elapsed_ns: int) -> None:
        """A send to `topic` finished with `result` after `elapsed_ns` in the store."""
        self.on_put_run((topic,), (result,), elapsed_ns)

    def on_put_run(self, topics: Sequence[str], results: Sequence[PutResult], elapsed_ns: int) -> None:
        """Sends to topics[i] that ended as results[i], stored by one store call in `elapsed_ns`: each
        stored one counted for its topic, the latency recorded once with the count of the stored ones."""
        window = self._window
        excluded = self.excluded_topics
        counted = 0
        for topic, result in zip(topics, results, strict=True):
            append = result.append
            status = result.status  # PUT_OK by identity first: an Enum's hash is a Python-level call
            if append is None or (status is not _PUT_OK and status not in _STORED) or topic in excluded:
                continue
            counters = window.topics.get(topic)
            if counters is None:
                counters = window.topics[topic] = [0, 0]
            counters[PUT_MSGS] += append.msg_num
            counters[PUT_BYTES] += append.wrote_bytes
            counted += 1
        if counted:
            window.put_latency.record(elapsed_ns, counted)

    def on_get(self, group: str, topic: str, messages: int, size: int) -> None:
        """A pull of `group` found `messages` records of `topic`, `size` bytes stored."""
        if topic in self.excluded_topics:
            return
        counters = self._group_counters(group, topic)
        counters[GET_MSGS] += messages
        counters[GET_BYTES] += size

    def on_send_back(self, group: str, topic: str) -> None:
        """`group` handed a message of `topic` back for a retry (Java incSendBackNums)."""
        if topic in self.excluded_topics:
            return
        self._group_counters(group, topic)[SEND_BACKS] += 1

    def _group_counters(self, group: str, topic: str) -> list[int]:
        key = (group, topic)
        counters = self._window.groups.get(key)
        if counters is None:
            counters = self._window.groups[key] = [0, 0, 0]
        return counters

    # -- windows ----------------------------------------------------------------------------------
    def snapshot(self, now_ms: int | None = None) -> StatsWindow:
        """Close the open window at `now_ms` (default: the clock), start the next one, return the closed one."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        closed = self._window
        closed.end_ms = max(now, closed.start_ms)
        self._window = StatsWindow(closed.end_ms)
        totals = self.totals
        put_msgs, put_bytes = closed.put_totals()
        get_msgs, get_bytes, send_backs = closed.get_totals()
        totals.put_msgs += put_msgs
        totals.put_bytes += put_bytes
        totals.get_msgs += get_msgs
        totals.get_bytes += get_bytes
        totals.send_backs += send_backs
        for topic, counters in closed.topics.items():
            totals.topic_put_msgs[topic] = totals.topic_put_msgs.get(topic, 0) + counters[PUT_MSGS]
            totals.topic_put_bytes[topic] = totals.topic_put_bytes.get(topic, 0) + counters[PUT_BYTES]
        self._roll_day(closed.end_ms)
        self.last_window = closed
        return closed

    def _roll_day(self, now_ms: int) -> None:
        """Java BrokerStats.record at midnight: today's morning mark becomes yesterday's."""
        day = _dt.datetime.fromtimestamp(now_ms / 1000).date()
        totals = self.totals
        if totals.day == day:
            return
        put_now, get_now = self.put_total_now(), self.get_total_now()
        if totals.day is None:  # boot: both marks start at the boot figures (zero)
            totals.put_yesterday_morning = totals.put_today_morning = put_now
            totals.get_yesterday_morning = totals.get_today_morning = get_now
        else:
            totals.put_yesterday_morning, totals.put_today_morning = totals.put_today_morning, put_now
            totals.get_yesterday_morning, totals.get_today_morning = totals.get_today_morning, get_now
        totals.day = day

    # -- figures ------------------------------------------------------------------------------------
    def put_total_now(self) -> int:
        return self.totals.put_msgs + self._window.put_totals()[0]

    def get_total_now(self) -> int:
        return self.totals.get_msgs + self._window.get_totals()[0]

    def runtime_info(self) -> dict[str, str]:
        """Figures for GET_BROKER_RUNTIME_INFO: Java's keys, and the 5.x metric names for the totals."""
        totals = self.totals
        window = self._window
        put_msgs, put_bytes = window.put_totals()
        get_msgs, get_bytes, send_backs = window.get_totals()
        info: dict[str, object] = {
            "msgPutTotalYesterdayMorning": totals.put_yesterday_morning,
            "msgPutTotalTodayMorning": totals.put_today_morning,
            "msgPutTotalTodayNow": totals.put_msgs + put_msgs,
            "msgGetTotalYesterdayMorning": totals.get_yesterday_morning,
            "msgGetTotalTodayMorning": totals.get_today_morning,
            "msgGetTotalTodayNow": totals.get_msgs + get_msgs,
            "sendBackTotal": totals.send_backs + send_backs,
            "rocketmq_messages_in_total": totals.put_msgs + put_msgs,
            "rocketmq_messages_out_total": totals.get_msgs + get_msgs,
            "rocketmq_throughput_in_total": totals.put_bytes + put_bytes,
            "rocketmq_throughput_out_total": totals.get_bytes + get_bytes,
        }
        latency = LatencyHistogram()
        latency.merge(window.put_latency)
        last = self.last_window
        if last is not None:
            latency.merge(last.put_latency)
            seconds = max(last.end_ms - last.start_ms, 1) / 1000
            last_put, _ = last.put_totals()
            last_get = last.get_totals()[0]
            info["statsWindowStartMs"] = last.start_ms
            info["statsWindowEndMs"] = last.end_ms
            info["putTps"] = f"{last_put / seconds:.2f}"
            info["getTotalTps"] = info["getTransferedTps"] = f"{last_get / seconds:.2f}"
        else:
            # Java's StoreStatsService always has these figures, and mqadmin clusterList parses them
            # (a missing one is a NullPointerException there): zero until the first window closes.
            info["putTps"] = info["getTotalTps"] = info["getTransferedTps"] = "0.00"
        info["putMessageDistributeTime"] = latency.java_distribution()
        info["putLatencyP50Us"] = f"{latency.percentile_us(0.50):.0f}"
        info["putLatencyP99Us"] = f"{latency.percentile_us(0.99):.0f}"
        info["putLatencyMaxUs"] = latency.max_us
        if self.gauges is not None:
            info.update(self.gauges())
        return {key: str(value) for key, value in info.items()}
