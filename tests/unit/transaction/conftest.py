"""Transaction unit-test fixtures: a ManualClock and a Broker over a small real store in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from transaction_fakes import Broker, open_store

from rocketq.common.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_700_000_000_000)


@pytest.fixture
def broker(tmp_path: Path, clock: ManualClock) -> Iterator[Broker]:
    store = open_store(tmp_path / "store", clock)
    b = Broker(store, clock, tmp_path / "config", transactionCheckMax=3)
    yield b
    if store.is_open:
        store.close()
