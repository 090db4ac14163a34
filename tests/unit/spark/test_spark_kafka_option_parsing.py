"""Kafka-source parity of the rocketq Spark options: names, meanings and fail-fast checks (no Spark session)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.spark.offsets import OffsetSpecError, QueueKey, pack, split
from rocketq.spark.options import SourceOptions, Subscription, parse_duration_ms

NS = {"namesrv": "127.0.0.1:9876"}


def parse(streaming: bool = False, **options: str) -> SourceOptions:
    return SourceOptions.parse({**NS, **options}, streaming=streaming)


def q(queue_id: int, broker: str = "broker-a", topic: str = "T") -> QueueKey:
    return QueueKey(topic, broker, queue_id)


def test_subscribe_pattern_and_assign_are_kafkas_three_ways_to_name_what_is_read() -> None:
    assert parse(subscribe="B,A").subscription == Subscription("subscribe", topics=("A", "B"))
    assert parse(topic="A").subscription == parse(subscribe="A").subscription  # our first name, kept
    pattern = parse(subscribePattern="orders-.*").subscription
    assert pattern.matches("orders-eu") and not pattern.matches("my-orders-eu")  # the whole name, as Java
    assert not Subscription("subscribePattern", pattern=".*").matches("%RETRY%g")
    assert not Subscription("subscribePattern", pattern=".*").matches("rmq_sys_broker_stats_topic")
    assign = parse(assign='{"T": ["broker-a:1", 2], "U": ["broker-b:0"]}')
    assert assign.topics == ("T", "U")
    sub = assign.subscription
    assert sub.keeps(q(1)) and sub.keeps(q(2, "broker-z")) and sub.keeps(q(0, "broker-b", "U"))
    assert not sub.keeps(q(0)) and not sub.keeps(q(1, "broker-b"))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"topic": "A", "subscribe": "B"}, "exactly one of .* got topic, subscribe"),
        ({"subscribePattern": "("}, "subscribePattern: '\\(' is not a regular expression"),
        ({"assign": "[1]"}, "assign: expected JSON like"),
        ({"assign": '{"T": []}'}, "assign: expected JSON like"),
        ({"assign": '{"T": [true]}'}, "assign: queue True of topic 'T'"),
        ({"topic": "A", "maxOffsetsPerTrigger": "5", "maxMessagesPerTrigger": "5"}, "not both"),
        ({"topic": "A", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "is greater than"),
        ({"topic": "A", "maxTriggerDelay": "soon"}, "maxTriggerDelay: expected a duration"),
        ({"topic": "A", "startingOffsetsByTimestampStrategy": "closest"}, "expected error or latest"),
        ({"topic": "A", "startingTimestamp": "yesterday"}, "startingTimestamp: a timestamp must be epoch"),
        (
            {"topic": "A", "startingOffsetsByTimestamp": '{"A": {"b:0": -5}}'},
            "timestamp of A b:0 must be an integer >= 0",
        ),
        ({"topic": "A", "kafka.bootstrap.servers": "x:1"}, "unknown source option.*kafka.bootstrap.servers"),
        ({"topic": "A", "maxMesagesPerTrigger": "5"}, "unknown source option.*maxmesagespertrigger"),
        ({"topic": "A", "startingOffsets": "latest"}, "'latest' \\(-1\\) is not valid for batch queries"),
        ({"topic": "A", "startingOffsets": '{"A": {"b:0": -1}}'}, "is not valid for batch queries"),
        ({"topic": "A", "endingOffsets": "earliest"}, "endingOffsets: 'earliest' \\(-2\\) is not valid"),
    ],
)
def test_batch_options_that_cannot_be_honoured_fail_naming_the_option(
    options: dict[str, str], problem: str
) -> None:
    with pytest.raises(OffsetSpecError, match=problem):
        SourceOptions.parse({**NS, **options}, streaming=False)


@pytest.mark.parametrize("ending", ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"])
def test_a_stream_has_no_end(ending: str) -> None:
    with pytest.raises(OffsetSpecError, match=f"{ending} is not valid in streaming queries"):
        parse(streaming=True, topic="A", **{ending: "latest"})
    assert parse(streaming=True, topic="A", startingOffsets="latest").ending is None  # latest is fine there


def test_timestamp_options_take_kafkas_precedence_and_strategy() -> None:
    both = parse(topic="T", startingTimestamp="1000", startingOffsetsByTimestamp='{"T": {"broker-a:0": 5}}')
    assert (both.starting.kind, both.starting.timestamp_ms, both.starting.strict) == ("timestamp", 1000, True)
    per_queue = parse(
        topic="T", startingOffsetsByTimestamp='{"T": {"broker-a:0": 5}}', startingOffsets="earliest"
    )
    assert per_queue.starting.kind == "timestamps"
    assert per_queue.starting.timestamp_of(q(0)) == 5
    # strategy error (Kafka's default): no message at or after the time fails; latest: start at the end.
    with pytest.raises(OffsetSpecError, match="no message of T broker-a:0 was stored at or after 1000"):
        both.starting.resolve(q(0), 0, 10, by_time=10)
    lenient = parse(topic="T", startingTimestamp="1000", startingOffsetsByTimestampStrategy="latest").starting
    assert lenient.resolve(q(0), 0, 10, by_time=10) == 10
    assert lenient.resolve(q(0), 0, 10, by_time=4) == 4
    # Our shorthand startingOffsets=<epoch ms> stays lenient, as it always was.
    assert parse(topic="T", startingOffsets="1000").starting.resolve(q(0), 0, 10, by_time=10) == 10
    ending = parse(topic="T", endingTimestamp="2000").ending
    assert ending is not None and ending.resolve(q(0), 0, 10, by_time=10) == 10  # ends never fail


def test_trigger_and_partition_options() -> None:
    opts = parse(
        streaming=True,
        topic="T",
        maxOffsetsPerTrigger="100",
        minOffsetsPerTrigger="10",
        maxTriggerDelay="30s",
    )
    assert (opts.max_offsets_per_trigger, opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (
        100,
        10,
        30_000,
    )
    assert parse(topic="T").max_trigger_delay_ms == 15 * 60 * 1000  # Kafka's default
    assert parse(topic="T", minPartitions="8", includeHeaders="true").min_partitions == 8
    assert parse(topic="T", includeHeaders="true").include_headers is True
    assert [parse_duration_ms("d", text, 0) for text in ("250", "250ms", "2s", "3m", "1h", "1d")] == [
        250, 250, 2000, 180_000, 3_600_000, 86_400_000,
    ]  # fmt: skip


def test_min_partitions_cuts_large_queues_in_proportion() -> None:
    ranges = [(q(0), 0, 900), (q(1), 100, 200)]
    assert split(ranges, None) == ranges
    assert split(ranges, 2) == ranges  # enough already
    pieces = split(ranges, 10)
    assert pieces[:9] == [(q(0), 100 * i, 100 * (i + 1)) for i in range(9)]
    assert pieces[9:] == [(q(1), 100, 200)]


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 500)), min_size=1, max_size=6), st.integers(1, 40)
)
def test_split_covers_every_offset_once_and_in_order(
    sizes: list[tuple[int, int]], min_partitions: int
) -> None:
    ranges = [(q(i), start, start + size) for i, (start, size) in enumerate(sizes)]
    pieces = split(ranges, min_partitions)
    for queue, since, until in ranges:
        mine = [(s, u) for qq, s, u in pieces if qq == queue]
        covered = [o for s, u in mine for o in range(s, u)]
        assert covered == list(range(since, until))
        assert all(u > s for s, u in mine) or since == until
    if sum(size for _s, size in sizes) >= min_partitions and len(ranges) < min_partitions:
        assert len(pieces) >= min(min_partitions, sum(size for _s, size in sizes)) // 2


def test_max_partitions_packs_queues_into_fewer_tasks() -> None:
    ranges = [(q(0), 0, 500), (q(1), 0, 100), (q(2), 0, 300), (q(3), 0, 300)]
    assert pack(ranges, None) == [[r] for r in ranges]
    assert pack(ranges, 4) == [[r] for r in ranges]  # few enough already
    assert pack(ranges, 2) == [[(q(0), 0, 500), (q(1), 0, 100)], [(q(2), 0, 300), (q(3), 0, 300)]]
    assert parse(topic="T", maxPartitions="2").max_partitions == 2
    with pytest.raises(OffsetSpecError, match=r"minPartitions \(8\) is greater than maxPartitions \(2\)"):
        parse(topic="T", minPartitions="8", maxPartitions="2")
    with pytest.raises(OffsetSpecError, match="maxPartitions: expected a positive integer, got 0"):
        parse(topic="T", maxPartitions="0")


@given(st.lists(st.integers(0, 500), min_size=0, max_size=12), st.integers(1, 6))
def test_pack_keeps_every_range_once_within_the_limit(sizes: list[int], max_partitions: int) -> None:
    ranges = [(q(i), 10, 10 + size) for i, size in enumerate(sizes)]
    packed = pack(ranges, max_partitions)
    assert len(packed) <= max(max_partitions, 0) or len(ranges) <= max_partitions
    assert sorted(r for group in packed for r in group) == sorted(ranges)
    assert all(group == sorted(group) and group for group in packed)
