"""Eagerly started jobs that await one shared future (puts sharing a group-commit round) all resume."""

from __future__ import annotations

import asyncio

from rocketq.remoting.transport.dispatch import Executor


async def test_jobs_awaiting_the_same_future_all_get_its_result() -> None:
    loop = asyncio.get_running_loop()
    shared: asyncio.Future[str] = loop.create_future()
    results: list[str] = []
    errors: list[BaseException] = []

    async def job() -> None:
        try:
            results.append(await shared)
        except Exception as exc:  # the bug: RuntimeError("await wasn't used with future")
            errors.append(exc)

    executor = Executor("shared", workers=8)
    for _ in range(4):
        assert executor.submit(job)
    assert executor.running == 4  # all four suspended on the same future
    loop.call_soon(shared.set_result, "flushed")
    await asyncio.wait_for(executor.shutdown(5), 5)
    assert errors == []
    assert results == ["flushed"] * 4
