import asyncio
import logging

import pytest

from rocketq.common.service import PeriodicService, Service, ServiceState, lifecycle_step, spawn, wait_event


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


@pytest.mark.parametrize("turns", [0, 1, 2])
async def test_wait_event_never_drops_a_cancellation_that_comes_with_the_event(turns: int) -> None:
    # On Python 3.11 asyncio.wait_for(event.wait(), t) returns True here instead of raising, so a
    # background loop cancelled right after a wake-up ran on and its stop() waited forever.
    event = asyncio.Event()
    task = asyncio.ensure_future(wait_event(event, 60))
    await asyncio.sleep(0)
    event.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    if task.done():
        assert task.result() is True  # it saw the event before the cancel: nothing to lose
        return
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wait_event_returns_false_on_timeout_and_true_when_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.001) is False
    event.set()
    assert await wait_event(event, 60) is True


@pytest.mark.parametrize("turns", [0, 1, 2])
async def test_periodic_service_stops_right_after_a_wakeup(turns: int) -> None:
    # A consumer leaving wakes its instance's rebalance service and stops it a turn later: with
    # wait_for in the service's wait, stop() waited forever for a loop that had lost its cancel.
    ran = asyncio.Event()

    async def run_once() -> None:
        ran.set()

    svc = PeriodicService("test", interval_s=3600, run_once=run_once)
    await svc.start()
    await asyncio.wait_for(ran.wait(), 5)
    svc.wakeup()
    for _ in range(turns):
        await asyncio.sleep(0)
    stopping = asyncio.ensure_future(svc.stop())
    done, _ = await asyncio.wait([stopping], timeout=5)
    assert stopping in done, "stop() hung: the periodic loop swallowed its cancellation"
    assert svc.state is ServiceState.SHUTDOWN_ALREADY


async def test_a_round_that_returns_zero_is_followed_at_once_and_none_waits_the_interval() -> None:
    # interval 3600 s: a second and third round can only come from the rounds' own answers.
    answers: list[float | None] = [0.0, 0.0, None]
    calls = 0
    third = asyncio.Event()

    async def run_once() -> float | None:
        nonlocal calls
        calls += 1
        if calls == 3:
            third.set()
        return answers[min(calls, 3) - 1]

    svc = PeriodicService("test", interval_s=3600, run_once=run_once)
    await svc.start()
    await asyncio.wait_for(third.wait(), 5)
    for _ in range(5):
        await asyncio.sleep(0)
    assert calls == 3  # None: the interval, not at once
    await svc.stop()


async def test_a_failing_round_waits_the_failure_pause() -> None:
    calls = 0
    second = asyncio.Event()

    async def run_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("logged; the next round follows after failure_pause_s")
        second.set()

    svc = PeriodicService("test", interval_s=3600, run_once=run_once, failure_pause_s=0.0)
    await svc.start()
    await asyncio.wait_for(second.wait(), 5)
    await svc.stop()
    assert svc.state is ServiceState.SHUTDOWN_ALREADY


@pytest.mark.parametrize(
    ("level", "traceback"), [(logging.ERROR, True), (logging.DEBUG, False)], ids=["default", "debug"]
)
async def test_a_failing_round_is_logged_at_the_failure_log_level(
    level: int, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    second = asyncio.Event()
    calls = 0

    async def run_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("cluster down")
        second.set()

    caplog.set_level(logging.DEBUG, logger="rocketq.service")
    svc = PeriodicService(
        "sampler", interval_s=3600, run_once=run_once, failure_pause_s=0.0, failure_log_level=level
    )
    await svc.start()
    await asyncio.wait_for(second.wait(), 5)
    await svc.stop()
    [record] = [r for r in caplog.records if "periodic run failed" in r.getMessage()]
    assert record.levelno == level
    assert "sampler" in record.getMessage()
    assert (record.exc_info is not None) is traceback
    assert traceback or "cluster down" in record.getMessage()


async def test_a_stop_during_a_stop_waits_for_nothing_and_keeps_stopping() -> None:
    release = asyncio.Event()

    class Slow(Service):
        async def _on_stop(self) -> None:
            await release.wait()

    svc = Slow()
    await svc.start()
    first = asyncio.ensure_future(svc.stop())
    await asyncio.sleep(0)
    assert svc.state is ServiceState.STOPPING
    await svc.stop()  # returns at once: the first stop() is under way
    assert svc.state is ServiceState.STOPPING
    release.set()
    await first
    assert svc.state is ServiceState.SHUTDOWN_ALREADY  # type: ignore[comparison-overlap]  # mypy keeps the narrowing over the await


async def test_lifecycle_steps_run_one_at_a_time_and_a_cancelled_waiter_cancels_nothing() -> None:
    class Client:
        def __init__(self) -> None:
            self.log: list[str] = []
            self.entered, self.gate = asyncio.Event(), asyncio.Event()

        @lifecycle_step
        async def start(self) -> None:
            self.log.append("start")
            self.entered.set()
            await self.gate.wait()
            self.log.append("started")

        @lifecycle_step
        async def shutdown(self) -> None:
            self.log.append("shutdown")

    client = Client()
    starting = asyncio.ensure_future(client.start())
    cancelled = asyncio.ensure_future(client.start())
    stopping = asyncio.ensure_future(client.shutdown())
    await client.entered.wait()
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    assert client.log == ["start"] and not starting.done() and not stopping.done()
    client.gate.set()
    await asyncio.gather(starting, stopping)
    assert client.log == ["start", "started", "shutdown"]
