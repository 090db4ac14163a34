"""rocketq.testing.procinfo.process_cpu_seconds / children_of: what bench/spark_ingest.py reads per process kind."""

from __future__ import annotations

import os

import pytest

from rocketq.testing.procinfo import children_of, process_cpu_seconds


def test_own_and_reaped_cpu_agree_with_the_kernels_times() -> None:
    sum(i * i for i in range(200_000))
    own, reaped = process_cpu_seconds(os.getpid())
    times = os.times()  # the same tick counts, read through times(2)
    assert own == pytest.approx(times.user + times.system, abs=0.05)
    assert reaped == pytest.approx(times.children_user + times.children_system, abs=0.05)
    assert own > 0


def test_children_of_lists_this_process_under_its_parent() -> None:
    assert os.getpid() in children_of()[os.getppid()]


def test_a_process_that_is_gone_raises() -> None:
    with pytest.raises(OSError):
        process_cpu_seconds(2**22 + 12345)  # above any pid_max: no such process
