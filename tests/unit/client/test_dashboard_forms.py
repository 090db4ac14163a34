"""The dashboard's form checks and chart scaling (no server, no network)."""

from __future__ import annotations

import datetime as dt

import pytest

from rocketq.dashboard.app import FormError, _group_name, _int, _system_topic, _timestamp, _topic_name
from rocketq.dashboard.history import History


def test_names_are_checked_as_the_broker_checks_them() -> None:
    assert _topic_name("Orders_1") == "Orders_1"
    with pytest.raises(FormError, match="characters other than"):
        _topic_name("bad topic")
    with pytest.raises(FormError, match="longer than 127"):
        _topic_name("t" * 128)
    with pytest.raises(FormError, match="empty"):
        _group_name("")


def test_numbers_and_times() -> None:
    assert _int({"read_queues": "8"}, "read_queues", 4, 1, 1024) == 8
    assert _int({}, "read_queues", 4, 1, 1024) == 4
    with pytest.raises(FormError, match=r"outside 1\.\.1024"):
        _int({"read_queues": "0"}, "read_queues", 4, 1, 1024)
    with pytest.raises(FormError, match="not a number"):
        _int({"perm": "rw"}, "perm", 6, 0, 7)
    assert _timestamp("0") == 0 and _timestamp("1700000000000") == 1700000000000
    assert _timestamp("2026-01-02T03:04") == int(dt.datetime(2026, 1, 2, 3, 4).timestamp() * 1000)
    with pytest.raises(FormError, match="not a time"):
        _timestamp("yesterday")


def test_system_topics_are_told_apart() -> None:
    assert (
        _system_topic("TBW102") and _system_topic("%RETRY%g") and _system_topic("rmq_sys_broker_stats_topic")
    )
    assert not _system_topic("Orders")


def test_chart_points_fit_the_box() -> None:
    history = History()
    history.add("put:a", 10.0, at=1000.0)
    history.add("put:a", 5.0, at=1000.0 + 1800)
    chart = history.svg(["put:a"], width=600, height=100)
    assert chart["peak"] == 10.0
    points = [tuple(map(float, p.split(","))) for p in chart["lines"]["put:a"].split()]
    assert all(0 <= y <= 100 for _, y in points) and points[0][1] == 0.0 and points[1][1] == 50.0
