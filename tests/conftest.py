"""Shared pytest configuration: every test has a timeout (pyproject `timeout`), markers are strict.

A test that hangs in asyncio shows only `EpollSelector.select` in pytest-timeout's thread dump, which
says nothing about what it waits for. So a few seconds before a test's timeout, and on SIGUSR1
(`kill -USR1 <pytest pid>`), every asyncio task of the running loop is printed with its stack.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

_EARLY_S = 5.0  # the task dump comes this long before pytest-timeout fails the test


def _dump_asyncio_tasks(signum: int, frame: object) -> None:
    out = sys.__stderr__
    if out is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        out.write("\n---- SIGUSR1: no asyncio loop is running\n")
        return
    tasks = asyncio.all_tasks(loop)
    out.write(f"\n---- SIGUSR1: {len(tasks)} asyncio task(s)\n")
    for task in tasks:
        task.print_stack(limit=12, file=out)
    out.flush()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(signal, "SIGUSR1") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, _dump_asyncio_tasks)


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    timeout = _timeout_of(item)
    timer = None
    if hasattr(signal, "SIGUSR1") and timeout > 2 * _EARLY_S:
        timer = threading.Timer(timeout - _EARLY_S, os.kill, (os.getpid(), signal.SIGUSR1))
        timer.daemon = True
        timer.start()
    try:
        return (yield)
    finally:
        if timer is not None:
            timer.cancel()
