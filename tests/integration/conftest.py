"""Integration tests run the real daemons as subprocesses through one fixture, `cluster_factory`.

`await cluster_factory(namesrv_count=1, broker_count=1, broker_overrides=..., namesrv_overrides=...)`
returns a started rocketq.testing.cluster.LocalCluster (free ports, temporary directories, READY
lines awaited with a deadline); everything it started is stopped when the test ends, and a failed
test prints each daemon's log tail. `cluster` is the one-NameServer, one-broker default.
"""

from rocketq.testing.fixtures import cluster, cluster_factory, pytest_runtest_makereport

__all__ = ["cluster", "cluster_factory", "pytest_runtest_makereport"]
