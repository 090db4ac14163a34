"""examples/sql92_filter.py against real daemons: it matches what it says on a broker with
enablePropertyFilter, and exits 2 with a clear hint on a broker without it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


async def run_example(ns: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "sql92_filter.py", "--namesrv-addr", ns,
        cwd=EXAMPLES, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 50)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


@pytest.mark.timeout(90)
async def test_the_example_filters_on_the_broker(cluster_factory: Any) -> None:
    cluster = await cluster_factory(broker_overrides={"enablePropertyFilter": "true"})
    code, text = await run_example(cluster.namesrv_addr)
    assert code == 0, text
    assert "matched 3 of 7 orders: ['order 1', 'order 3', 'order 4']" in text, text


@pytest.mark.timeout(90)
async def test_the_example_explains_a_broker_without_property_filter(cluster: Any) -> None:
    code, text = await run_example(cluster.namesrv_addr)
    assert code == 2, text
    assert (
        "does not support consumer to filter message by SQL92" in text
        and "--enablePropertyFilter true" in text
    )
