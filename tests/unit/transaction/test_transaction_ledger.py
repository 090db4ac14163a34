"""HalfOffsetLedger: a bit per offset, growing as offsets grow."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.transaction.ledger import HalfOffsetLedger


def test_add_contains_discard() -> None:
    ledger = HalfOffsetLedger()
    assert 0 not in ledger and -1 not in ledger and "x" not in ledger
    assert ledger.add(0) and not ledger.add(0) and not ledger.add(-5)
    assert ledger.add(1_000_003) and 1_000_003 in ledger and 1_000_002 not in ledger
    assert len(ledger) == 2
    ledger.discard(0)
    ledger.discard(0)
    ledger.discard(99_999_999)
    assert 0 not in ledger and len(ledger) == 1


@given(
    st.sets(st.integers(min_value=0, max_value=50_000), max_size=200),
    st.integers(min_value=0, max_value=50_000),
)
def test_matches_a_set(offsets: set[int], probe: int) -> None:
    ledger = HalfOffsetLedger()
    for offset in offsets:
        ledger.add(offset)
    assert len(ledger) == len(offsets)
    assert (probe in ledger) == (probe in offsets)
    assert all(offset in ledger for offset in offsets)
