"""Lifecycle unit-test fixtures: a small real store in tmp_path on a ManualClock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lifecycle_helpers import SMALL

from rocketq.common.clock import ManualClock
from rocketq.store.config import MessageStoreConfig
from rocketq.store.message_store import MessageStore


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_700_000_000_000)


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[MessageStore]:
    config = MessageStoreConfig.build({"storePathRootDir": str(tmp_path / "store"), **SMALL})
    opened = MessageStore(config, clock)
    opened.open()
    yield opened
    if opened.is_open:
        opened.close()
