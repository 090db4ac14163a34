"""1,000 topics x 8 queues in a process whose soft open-file limit is 1,024 (the usual default).

Each consume queue has a file; mapped files used to cost two descriptors each, so 8,000 queues needed
16,000. Now a mapped file costs one at most and the consume-queue files mapped at once stay within a
budget (half the soft limit), so the store works, and stays well below the limit, in a child process
(many_queues_child.py) that lowers its own limit.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("many_queues_child.py")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
@pytest.mark.skipif(
    0 <= resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1024,
    reason="the hard open-file limit is below 1,024",
)
@pytest.mark.timeout(180)
def test_eight_thousand_queues_under_a_soft_limit_of_1024(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path / "store")], capture_output=True, text=True, timeout=170
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["queues"] == 8_000 and report["read_back"] == 8_000
    assert report["fds_peak"] < 1_024 * 3 // 4, report
