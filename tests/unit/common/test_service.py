import asyncio

import pytest

from rocketq.common.service import PeriodicService, Service, ServiceState, spawn


async def test_periodic_service_runs_at_start_and_on_wakeup_and_survives_errors() -> None:
    calls: list[int] = []
    ran = asyncio.Event()

    async def run_once() -> None:
        calls.append(len(calls))
        ran.set()
        if len(calls) == 2:
            raise RuntimeError("a failing round is logged, not fatal")

    svc = PeriodicService("test", interval_s=3600, run_once=run_once)
    await svc.start()
    await asyncio.wait_for(ran.wait(), 5)
    for expected in (2, 3):
        ran.clear()
        svc.wakeup()
        await asyncio.wait_for(ran.wait(), 5)
        assert len(calls) == expected
    await svc.stop()
    assert svc.state is ServiceState.SHUTDOWN_ALREADY
    await svc.stop()  # idempotent


async def test_service_cannot_restart_after_stop() -> None:
    svc = Service()
    await svc.start()
    assert svc.running
    await svc.stop()
    with pytest.raises(RuntimeError):
        await svc.start()


async def test_spawn_names_the_task() -> None:
    async def work() -> int:
        return 7

    task = spawn("named-task", work())
    assert task.get_name() == "named-task"
    assert await task == 7
