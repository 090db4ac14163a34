"""The test harness's cluster: rocketq.cluster's LocalCluster and daemons, under their harness names.

The implementation ships in rocketq.cluster because `rocketq cluster up` (rocketq.launcher) uses it;
tests keep importing it from here.
"""

from __future__ import annotations

from rocketq.cluster import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    READY_LINE,
    TEST_COMMIT_LOG_FILE_BYTES,
    BrokerProcess,
    DaemonProcess,
    DaemonStartError,
    LocalCluster,
    NamesrvProcess,
)

__all__ = [
    "DEFAULT_READY_TIMEOUT_S",
    "DEFAULT_STOP_TIMEOUT_S",
    "READY_LINE",
    "TEST_COMMIT_LOG_FILE_BYTES",
    "BrokerProcess",
    "DaemonProcess",
    "DaemonStartError",
    "LocalCluster",
    "NamesrvProcess",
]
