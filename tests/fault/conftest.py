"""Fault tests run the real daemons as subprocesses through the shared fixture, `cluster_factory`.

`await cluster_factory(namesrv_count=1, broker_count=1, broker_overrides=..., namesrv_overrides=...)`
returns a started rocketq.testing.cluster.LocalCluster (free ports, temporary directories, READY
lines awaited with a deadline); everything it started is stopped when the test ends, and a failed
test prints each daemon's log tail. `cluster` is the one-NameServer, one-broker default.

Soak variants (`@pytest.mark.soak`) run only with ROCKETQ_SOAK=1 (`make soak`); in CI they skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketq.testing.fixtures import cluster, cluster_factory, pytest_runtest_makereport

__all__ = ["cluster", "cluster_factory", "pytest_runtest_makereport"]

SOAK = os.environ.get("ROCKETQ_SOAK", "") not in ("", "0")
_HERE = Path(__file__).parent
_NOT_OURS = _HERE / "store"  # the store's fault tests keep their own rules


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if SOAK:
        return
    skip = pytest.mark.skip(reason="soak variant: runs with ROCKETQ_SOAK=1 (make soak)")
    for item in items:
        path = Path(item.path)
        if not path.is_relative_to(_HERE) or path.is_relative_to(_NOT_OURS):
            continue
        if item.get_closest_marker("soak") is not None:
            item.add_marker(skip)
