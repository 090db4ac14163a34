from rocketq.broker.rebalance_lock import RebalanceLockManager
from rocketq.common.clock import ManualClock
from rocketq.common.message import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


def test_lock_is_exclusive_until_the_lease_expires() -> None:
    clock = ManualClock()
    m = RebalanceLockManager(60_000, clock)
    assert m.try_lock_batch("g", [Q0, Q1], "c1") == {Q0, Q1}
    assert m.try_lock_batch("g", [Q0], "c2") == set()
    assert m.holder("g", Q0) == "c1"
    clock.advance(60_001)
    assert m.holder("g", Q0) is None
    assert m.try_lock_batch("g", [Q0], "c2") == {Q0}
    assert m.is_locked("g", Q0, "c2")
    assert not m.is_locked("g", Q0, "c1")


def test_holder_renews_and_groups_are_separate() -> None:
    clock = ManualClock()
    m = RebalanceLockManager(60_000, clock)
    m.try_lock("g", Q0, "c1")
    clock.advance(50_000)
    assert m.try_lock("g", Q0, "c1")
    clock.advance(50_000)
    assert not m.try_lock("g", Q0, "c2")  # renewed 50 s ago
    assert m.try_lock("other", Q0, "c2")


def test_unlock_only_by_the_holder() -> None:
    m = RebalanceLockManager(60_000, ManualClock())
    m.try_lock("g", Q0, "c1")
    m.unlock_batch("g", [Q0], "c2")
    assert m.holder("g", Q0) == "c1"
    m.unlock_batch("g", [Q0], "c1")
    assert m.holder("g", Q0) is None
    assert m.try_lock("g", Q0, "c2")
