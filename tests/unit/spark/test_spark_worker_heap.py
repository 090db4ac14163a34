"""rocketq.spark.source._freeze_worker_heap: a Spark Python worker's heap frozen once, at its first read."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")

from rocketq.spark import source


@pytest.fixture
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(source, "_HEAP_FROZEN", [])
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process goes on collecting as before


def test_the_first_read_freezes_what_the_worker_holds_and_later_ones_do_not(fresh_worker: None) -> None:
    assert gc.get_freeze_count() == 0
    source._freeze_worker_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # the imported modules' objects, out of every later collection's walk
    made_later = [[i] for i in range(1000)]
    source._freeze_worker_heap()
    # Not frozen again: what a task makes stays collectable (frozen objects freed meanwhile leave the count).
    assert gc.get_freeze_count() <= frozen
    assert gc.is_tracked(made_later[0])
