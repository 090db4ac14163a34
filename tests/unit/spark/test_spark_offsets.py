"""rocketq.spark offsets and options: JSON form, option parsing, read limits, planning (no Spark needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.spark.offsets import (
    OffsetSpecError,
    QueueKey,
    advance,
    cap,
    count,
    dumps,
    normalize,
    parse_spec,
    plan,
    to_offsets,
)
from rocketq.spark.options import SourceOptions


def q(queue_id: int, broker: str = "broker-a", topic: str = "T") -> QueueKey:
    return QueueKey(topic, broker, queue_id)


def test_offsets_are_sorted_json_with_string_queue_keys() -> None:
    offsets = to_offsets({q(10): 5, q(2): 7, q(0, "broker-b", "A"): 1})
    assert list(offsets) == ["A", "T"]
    assert list(offsets["T"]) == ["broker-a:10", "broker-a:2"]  # string order: stable, not numeric
    assert dumps(offsets) == '{"A":{"broker-b:0":1},"T":{"broker-a:10":5,"broker-a:2":7}}'
    # Spark hands offsets back as parsed JSON and compares the JSON text: a round trip is identical.
    assert json.dumps(normalize(json.loads(json.dumps(offsets)))) == json.dumps(offsets)


def test_queue_keys_take_broker_names_with_colons_apart_from_the_right() -> None:
    assert QueueKey.parse("T", "broker:a:3") == QueueKey("T", "broker:a", 3)
    with pytest.raises(OffsetSpecError, match="brokerName>:<queueId"):
        QueueKey.parse("T", "broker-a")


def test_starting_offsets_specs() -> None:
    assert parse_spec("startingOffsets", None, "earliest").resolve(q(0), 3, 9) == 3
    assert parse_spec("startingOffsets", "LATEST", "earliest").resolve(q(0), 3, 9) == 9
    ts = parse_spec("startingOffsets", "1700000000000", "earliest")
    assert (ts.kind, ts.timestamp_ms) == ("timestamp", 1_700_000_000_000)
    assert ts.resolve(q(0), 3, 9, by_time=5) == 5
    assert ts.resolve(q(0), 3, 9, by_time=1) == 3  # clamped into the queue's range
    spec = parse_spec(
        "startingOffsets", '{"T": {"broker-a:0": 4, "broker-a:1": -1, "broker-a:2": -2}}', "earliest"
    )
    assert [spec.resolve(q(i), 3, 9) for i in range(3)] == [4, 9, 3]
    spec.check_covers([q(0), q(1), q(2)])
    # As Kafka, explicit JSON names every queue read, and only those (never a silent "nothing" or "all").
    with pytest.raises(OffsetSpecError, match="misses queues that are read: T broker-a:3"):
        spec.check_covers([q(0), q(1), q(2), q(3)])
    with pytest.raises(OffsetSpecError, match="names queues that are not read: T broker-a:2"):
        spec.check_covers([q(0), q(1)])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("soonest", "expected earliest, latest"),
        ("[1, 2]", "must map each topic"),
        ('{"T": {"broker-a:0": "x"}}', "integer >= -2"),
        ('{"T": {"broker-a:0": -3}}', "integer >= -2"),
        ('{"T": {"0": 1}}', "brokerName>:<queueId"),
    ],
)
def test_bad_offset_specs_name_the_option_and_the_problem(text: str, problem: str) -> None:
    with pytest.raises(OffsetSpecError, match=problem):
        parse_spec("startingOffsets", text, "earliest")


def test_options_use_kafka_names_in_any_case_and_check_values() -> None:
    opts = SourceOptions.parse(
        {
            "namesrv": "127.0.0.1:9876",
            "topic": "B, A,B",
            "maxmessagespertrigger": "100",
            "failOnDataLoss": "false",
        }
    )
    assert opts.topics == ("A", "B")
    assert opts.max_offsets_per_trigger == 100  # Spark may hand the keys over lower-cased
    assert opts.fail_on_data_loss is False
    assert opts.ending is not None
    assert (opts.starting.kind, opts.ending.kind) == ("earliest", "latest")
    assert (opts.pull_batch_size, opts.group, opts.commit_offsets) == (32, "rocketq-spark", False)
    with pytest.raises(OffsetSpecError, match="'namesrv' is required"):
        SourceOptions.parse({"topic": "A"})
    with pytest.raises(OffsetSpecError, match="exactly one of the options 'subscribe'"):
        SourceOptions.parse({"namesrv": "x:1"})
    with pytest.raises(OffsetSpecError, match="maxMessagesPerTrigger: expected a positive integer"):
        SourceOptions.parse({"namesrv": "x:1", "topic": "A", "maxMessagesPerTrigger": "0"})
    with pytest.raises(OffsetSpecError, match="failOnDataLoss"):
        SourceOptions.parse({"namesrv": "x:1", "topic": "A", "failOnDataLoss": "maybe"})


def test_advance_keeps_queues_missing_from_the_route_and_never_goes_back() -> None:
    start = to_offsets({q(0): 10, q(1): 20})
    latest = to_offsets({q(0): 15, q(2): 4})  # queue 1's broker is out of the route; queue 2 is new
    assert advance(start, latest) == to_offsets({q(0): 15, q(1): 20, q(2): 4})
    assert advance(start, to_offsets({q(0): 5, q(1): 25})) == to_offsets({q(0): 10, q(1): 25})


def test_cap_shares_the_limit_in_proportion_to_backlog() -> None:
    start = to_offsets({q(0): 0, q(1): 100, q(2): 50})
    latest = to_offsets({q(0): 300, q(1): 200, q(2): 50})
    end = cap(start, latest, 100)
    assert end == to_offsets({q(0): 75, q(1): 125, q(2): 50})
    assert count(start, end) == 100
    assert cap(start, latest, 1000) == latest  # everything fits


def test_plan_lists_only_queues_with_messages_and_new_queues_start_at_zero() -> None:
    start = to_offsets({q(0): 5, q(1): 7})
    end = to_offsets({q(0): 9, q(1): 7, q(2): 3})
    assert plan(start, end) == [(q(0), 5, 9), (q(2), 0, 3)]
    assert plan(end, end) == []


backlogs = st.dictionaries(
    st.integers(0, 7), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1
)


@given(backlogs, st.integers(1, 5000))
def test_cap_takes_exactly_the_limit_or_all_and_stays_within_bounds(
    queues: dict[int, tuple[int, int]], limit: int
) -> None:
    start = to_offsets({q(i): a for i, (a, _b) in queues.items()})
    latest = to_offsets({q(i): a + b for i, (a, b) in queues.items()})
    end = cap(start, latest, limit)
    backlog = sum(b for _a, b in queues.values())
    assert count(start, end) == min(limit, backlog)
    for i, (a, b) in queues.items():
        assert a <= end["T"][q(i).key] <= a + b
    if backlog:
        assert count(start, end) >= 1  # progress whatever the shares
