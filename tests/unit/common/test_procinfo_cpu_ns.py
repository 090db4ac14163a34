"""rocketq.testing.procinfo.cpu_ns: the scheduler's nanosecond CPU count that the benchmarks read."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rocketq.testing.procinfo import cpu_ns


def _thread_ns(pid: int, tid: int) -> int:
    return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])


def test_cpu_ns_grows_with_work_and_sums_the_live_threads() -> None:
    pid = os.getpid()
    before = cpu_ns(pid)
    sum(i * i for i in range(300_000))
    after = cpu_ns(pid)
    assert after > before
    assert cpu_ns(pid) >= _thread_ns(pid, threading.get_native_id())  # this thread is one of them


def test_cpu_ns_of_a_process_that_is_gone_raises() -> None:
    with pytest.raises(FileNotFoundError):
        cpu_ns(2**22 + 12345)  # above any pid_max: no such process
