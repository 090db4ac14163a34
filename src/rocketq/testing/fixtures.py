"""pytest fixtures over LocalCluster: `cluster_factory` (and `cluster`), with daemon logs on failure.

Import them into a conftest.py (tests/integration, tests/fault):

    from rocketq.testing.fixtures import cluster, cluster_factory, pytest_runtest_makereport

`cluster_factory` is a function-scoped async factory: `await cluster_factory(broker_count=0, ...)`
takes LocalCluster's arguments (tmp_dir aside) and returns a started cluster; every cluster it made
is stopped when the test ends. When the test failed, each daemon's log tail is printed (pytest shows
it under "Captured stdout teardown").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing.cluster import LocalCluster

ClusterFactory = Callable[..., Awaitable[LocalCluster]]
_REPORT_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item so fixtures can tell whether the test failed."""
    report = yield
    item.stash.setdefault(_REPORT_KEY, {})[report.when] = report
    return report


def _failed(node: pytest.Item) -> bool:
    reports = node.stash.get(_REPORT_KEY, {})
    return any(r.failed for r in reports.values())


@pytest.fixture
async def cluster_factory(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[ClusterFactory]:
    clusters: list[LocalCluster] = []

    async def factory(**kwargs: Any) -> LocalCluster:
        cluster = LocalCluster(tmp_path / f"cluster-{len(clusters)}", **kwargs)
        clusters.append(cluster)
        return await cluster.start()

    try:
        yield factory
    finally:
        for cluster in reversed(clusters):
            await cluster.close()
        if _failed(request.node):
            for index, cluster in enumerate(clusters):
                print(f"\n######## daemon logs of cluster {index} ({cluster.tmp_dir})")
                print(cluster.log_tails())


@pytest.fixture
async def cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    """One NameServer and one broker with default settings."""
    return await cluster_factory()
