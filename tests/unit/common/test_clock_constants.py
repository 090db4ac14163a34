import pytest

from rocketq.common import constants as C
from rocketq.common.clock import ManualClock


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(now_ms=1000, monotonic_ms=5)
    clock.advance(10)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1010, 15)
    with pytest.raises(ValueError):
        clock.advance(-1)


@pytest.mark.parametrize(
    ("topic", "ok"),
    [
        ("TopicTest", True),
        ("%RETRY%g", True),
        ("a|b-c_d", True),
        ("", False),
        ("bad topic", False),
        ("x" * 128, False),
    ],
)
def test_topic_name_rules(topic: str, ok: bool) -> None:
    assert (C.topic_name_problem(topic) is None) is ok


def test_version_ordinal_formula() -> None:
    assert C.version_ordinal(4, 9, 8) == 409
    assert C.version_ordinal(4, 9, 4) == 401
    assert C.version_ordinal(4, 0, 0) == 213


def test_perm_and_sysflag_helpers() -> None:
    assert C.PermName.is_readable(6) and C.PermName.is_writeable(6) and not C.PermName.is_inherited(6)
    assert C.PermName.to_string(7) == "RWX"
    assert C.MessageSysFlag.transaction_value(0x4 | 0x1) == 0x4
    assert C.MessageSysFlag.reset_transaction_value(0x5, 0x8) == 0x9
    assert C.PullSysFlag.build(True, True, False) == 3
