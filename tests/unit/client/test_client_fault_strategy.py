"""The fault-latency policy on a manual clock (org.apache.rocketmq.client.latency.MQFaultStrategy)."""

import pytest
from client_routes import two_brokers

from rocketq.client.producer.fault_strategy import LatencyFaultTolerance, MQFaultStrategy
from rocketq.client.route import to_publish_info
from rocketq.common.clock import ManualClock

# latency (ms) -> penalty (ms), from Java's latencyMax / notAvailableDuration tables
TABLE = [
    (0, 0),
    (49, 0),
    (50, 0),
    (99, 0),
    (100, 0),
    (549, 0),
    (550, 30_000),
    (999, 30_000),
    (1000, 60_000),
    (1999, 60_000),
    (2000, 120_000),
    (2999, 120_000),
    (3000, 180_000),
    (14_999, 180_000),
    (15_000, 600_000),
    (30_000, 600_000),
    (10**9, 600_000),
]


@pytest.mark.parametrize("latency,penalty", TABLE)
def test_penalty_table(latency: int, penalty: int) -> None:
    assert MQFaultStrategy(enabled=True).compute_not_available_duration(latency) == penalty


def test_failure_counts_as_30s_and_expires_after_600s() -> None:
    clock = ManualClock()
    strategy = MQFaultStrategy(clock, enabled=True)
    strategy.update_fault_item("broker-a", 5, isolation=True)
    assert not strategy.tolerance.is_available("broker-a")
    clock.advance(599_999)
    assert not strategy.tolerance.is_available("broker-a")
    clock.advance(1)
    assert strategy.tolerance.is_available("broker-a")


def test_slow_send_penalised_fast_send_not() -> None:
    clock = ManualClock()
    strategy = MQFaultStrategy(clock, enabled=True)
    strategy.update_fault_item("broker-a", 20, isolation=False)
    assert strategy.tolerance.is_available("broker-a")
    strategy.update_fault_item("broker-a", 1200, isolation=False)
    assert not strategy.tolerance.is_available("broker-a")
    clock.advance(60_000)
    assert strategy.tolerance.is_available("broker-a")


def test_disabled_strategy_records_nothing_and_round_robins() -> None:
    strategy = MQFaultStrategy(ManualClock(), enabled=False)
    strategy.update_fault_item("broker-a", 0, isolation=True)
    assert strategy.tolerance.snapshot() == {}
    info = to_publish_info("T", two_brokers())
    for _ in range(10):
        assert strategy.select_one_message_queue(info, "broker-a").broker_name == "broker-b"


def test_selection_skips_broker_in_penalty() -> None:
    clock = ManualClock()
    strategy = MQFaultStrategy(clock, enabled=True)
    info = to_publish_info("T", two_brokers())
    strategy.update_fault_item("broker-a", 100, isolation=True)
    picks = {strategy.select_one_message_queue(info, None).broker_name for _ in range(50)}
    assert picks == {"broker-b"}
    clock.advance(600_000)
    picks = {strategy.select_one_message_queue(info, None).broker_name for _ in range(50)}
    assert picks == {"broker-a", "broker-b"}


def test_retry_prefers_other_available_broker() -> None:
    strategy = MQFaultStrategy(ManualClock(), enabled=True)
    info = to_publish_info("T", two_brokers())
    for _ in range(20):
        assert strategy.select_one_message_queue(info, "broker-b").broker_name == "broker-a"


def test_all_unavailable_picks_least_bad() -> None:
    clock = ManualClock()
    strategy = MQFaultStrategy(clock, enabled=True)
    info = to_publish_info("T", two_brokers())
    strategy.update_fault_item("broker-a", 600, isolation=False)  # 30 s
    strategy.update_fault_item("broker-b", 100, isolation=True)  # 600 s
    mq = strategy.select_one_message_queue(info, None)
    assert mq.broker_name in {"broker-a", "broker-b"}
    assert 0 <= mq.queue_id < 4


def test_all_unavailable_rotates_through_every_queue_of_the_least_bad_broker() -> None:
    # Java moves the index three times a call here (the loop, selectOneMessageQueue, the queue id), so
    # the queue ids cycle over all 4 queues of the picked broker; moving it twice landed on 2 of them only.
    clock = ManualClock()
    strategy = MQFaultStrategy(clock, enabled=True)
    info = to_publish_info("T", two_brokers())
    strategy.update_fault_item("broker-a", 600, isolation=False)  # 30 s
    strategy.update_fault_item("broker-b", 100, isolation=True)  # 600 s, but the lower latency sorts first
    picks = [strategy.select_one_message_queue(info, None) for _ in range(8)]
    assert {mq.broker_name for mq in picks} == {"broker-b"}  # two items: half = 1, always the first
    assert {mq.queue_id for mq in picks} == {0, 1, 2, 3}


def test_worst_item_rotation_starts_at_a_random_point() -> None:
    starts = set()
    for _ in range(20):
        tol = LatencyFaultTolerance(ManualClock())
        for i, name in enumerate(("a", "b", "c", "d")):
            tol.update_fault_item(name, 1000 + i, 600_000)
        starts.add(tol.pick_one_at_least())  # one of the better half: a or b, by a random start
    assert starts == {"a", "b"}


def test_pick_one_at_least_orders_like_java() -> None:
    clock = ManualClock()
    tol = LatencyFaultTolerance(clock)
    assert tol.pick_one_at_least() is None
    tol.update_fault_item("slow", 3000, 180_000)
    assert tol.pick_one_at_least() == "slow"
    tol.update_fault_item("ok", 10, 0)  # available sorts first
    assert tol.pick_one_at_least() == "ok"
    tol.remove("ok")
    tol.remove(None)
    assert set(tol.snapshot()) == {"slow"}


def test_unknown_broker_of_not_best_is_removed() -> None:
    strategy = MQFaultStrategy(ManualClock(), enabled=True)
    info = to_publish_info("T", two_brokers())
    for name in ("broker-a", "broker-b"):
        strategy.update_fault_item(name, 100, isolation=True)
    strategy.tolerance.update_fault_item("gone", 0, 10**9)  # least bad, but not in this route
    mq = strategy.select_one_message_queue(info, None)
    assert mq in info.message_queues
    assert "gone" not in strategy.tolerance.snapshot()


def test_table_lengths_must_match() -> None:
    with pytest.raises(ValueError):
        MQFaultStrategy(latency_max_ms=(1, 2), not_available_duration_ms=(1,))
