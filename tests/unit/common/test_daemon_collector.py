"""tune_collector: the daemon's garbage-collector settings once it serves (docs/performance-log.md, Session 7)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.common.daemon import tune_collector


@pytest.fixture
def collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("collector")
def test_freeze_and_threshold() -> None:
    gc.set_threshold(700, 11, 12)
    kept = [[i] for i in range(100)]  # containers made at start-up
    tune_collector(True, 5_000)
    assert gc.get_threshold() == (5_000, 11, 12)
    assert gc.get_freeze_count() >= len(kept)
    assert all(o is not kept[0] for o in gc.get_objects())  # frozen: no generation holds it any more


@pytest.mark.usefixtures("collector")
def test_off_leaves_the_interpreter_as_it_was() -> None:
    gc.set_threshold(700, 10, 10)
    before = gc.get_freeze_count()
    tune_collector(False, 0)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == before


def test_broker_settings() -> None:
    cfg = BrokerConfig()
    assert (cfg.gc_freeze_after_start, cfg.gc_gen0_threshold) == (True, 10_000)
    cfg = BrokerConfig.model_validate({"gcFreezeAfterStart": "false", "gcGen0Threshold": "0"})
    assert (cfg.gc_freeze_after_start, cfg.gc_gen0_threshold) == (False, 0)
    with pytest.raises(ValueError, match="gcGen0Threshold"):
        BrokerConfig.model_validate({"gcGen0Threshold": "-1"})
