from typing import Any

from broker_fakes import FakeConnection

from rocketq.broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager
from rocketq.common.clock import ManualClock
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)

PUSH, CLUSTERING, LAST = (
    ConsumeType.CONSUME_PASSIVELY,
    MessageModel.CLUSTERING,
    ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
)


def sub(topic: str, expr: str = "*", version: int = 1) -> SubscriptionData:
    return SubscriptionData(topic=topic, sub_string=expr, sub_version=version)


def setup() -> tuple[ConsumerManager, ManualClock, list[tuple[str, list[Any]]]]:
    clock = ManualClock()
    events: list[tuple[str, list[Any]]] = []
    m = ConsumerManager(lambda g, conns: events.append((g, conns)), clock)
    return m, clock, events


def register(
    m: ConsumerManager, clock: ManualClock, conn: FakeConnection, cid: str, subs: list[SubscriptionData]
) -> bool:
    info = ClientChannelInfo(conn, cid, "JAVA", 409, clock.monotonic_ms())
    return m.register_consumer("g", info, PUSH, CLUSTERING, LAST, subs)


def test_new_member_and_new_topic_notify_the_group() -> None:
    m, clock, events = setup()
    c1, c2 = FakeConnection(), FakeConnection()
    assert register(m, clock, c1, "c1", [sub("T")])
    assert events == [("g", [c1])]
    assert not register(m, clock, c1, "c1", [sub("T")])  # same heartbeat again: nothing changes
    assert register(m, clock, c2, "c2", [sub("T")])
    assert events[-1] == ("g", [c1, c2])
    assert sorted(m.get_consumer_group_info("g").all_client_ids()) == ["c1", "c2"]  # type: ignore[union-attr]
    assert register(m, clock, c1, "c1", [sub("T"), sub("U")])  # a topic added
    assert m.find_subscription_data("g", "U") is not None
    assert register(m, clock, c1, "c1", [sub("U")])  # a topic removed
    assert m.find_subscription_data("g", "T") is None


def test_only_a_newer_sub_version_replaces() -> None:
    m, clock, _ = setup()
    c1 = FakeConnection()
    register(m, clock, c1, "c1", [sub("T", "A", 5)])
    register(m, clock, c1, "c1", [sub("T", "B", 4)])
    assert m.find_subscription_data("g", "T").sub_string == "A"  # type: ignore[union-attr]
    register(m, clock, c1, "c1", [sub("T", "B", 6)])
    assert m.find_subscription_data("g", "T").sub_string == "B"  # type: ignore[union-attr]


def test_close_and_unregister_notify_the_rest() -> None:
    m, clock, events = setup()
    c1, c2 = FakeConnection(), FakeConnection()
    register(m, clock, c1, "c1", [sub("T")])
    register(m, clock, c2, "c2", [sub("T")])
    m.do_channel_close_event(c1.id)
    assert events[-1] == ("g", [c2])
    m.unregister_consumer("g", c2.id)
    assert m.get_consumer_group_info("g") is None
    assert events[-1] == ("g", [])


def test_silent_clients_expire() -> None:
    m, clock, _ = setup()
    c1, c2 = FakeConnection(), FakeConnection()
    register(m, clock, c1, "c1", [sub("T")])
    clock.advance(100_000)
    register(m, clock, c2, "c2", [sub("T")])
    clock.advance(30_000)
    assert m.scan_not_active_channel() == [c1]
    assert m.get_consumer_group_info("g").all_client_ids() == ["c2"]  # type: ignore[union-attr]
    assert m.query_topic_consume_by_who("T") == {"g"}


def test_producer_manager() -> None:
    clock = ManualClock()
    p = ProducerManager(clock)
    c1, c2 = FakeConnection(), FakeConnection()
    p.register_producer("pg", ClientChannelInfo(c1, "c1", "JAVA", 409, clock.monotonic_ms()))
    clock.advance(100_000)
    p.register_producer("pg", ClientChannelInfo(c2, "c2", "JAVA", 409, clock.monotonic_ms()))
    assert p.find_channel("c1") is c1
    assert p.get_available_channel("pg") in (c1, c2)
    clock.advance(30_000)
    assert p.scan_not_active_channel() == [c1]
    p.do_channel_close_event(c2.id)
    assert p.get_available_channel("pg") is None
    assert p.group_channel_table == {}
