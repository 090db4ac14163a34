"""The blocking facade forwards to its async twin on the background loop, from any thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from rocketq.client import blocking
from rocketq.client._blocking_base import _BlockingProducer, in_loop, run


class FakeAsync:
    def __init__(self, group: str, *, flag: int = 0) -> None:
        self.group, self.flag = group, flag
        self.started = self.stopped = False
        self.loop_threads: set[str] = set()

    async def start(self) -> None:
        self.started = True

    async def shutdown(self) -> None:
        self.stopped = True

    async def send(self, value: int) -> int:
        self.loop_threads.add(threading.current_thread().name)
        await asyncio.sleep(0)
        return value * 2

    def send_async(self, value: int, selector=None, arg=None) -> asyncio.Future[int]:
        return asyncio.ensure_future(self.send(value))

    def subscribe(self, topic: str) -> str:
        asyncio.get_running_loop()  # only works on the loop
        return topic.upper()

    async def boom(self) -> None:
        raise ValueError("bad input")


class FakeBlocking(_BlockingProducer):
    """Written as blocking_gen writes the real twins."""

    def __init__(self, group: str, *, flag: int = 0) -> None:
        self._target = FakeAsync(group, flag=flag)

    def send(self, value: int) -> int:
        return run(self._target.send(value))

    def subscribe(self, topic: str) -> str:
        return in_loop(self._target.subscribe, topic)

    def boom(self) -> None:
        return run(self._target.boom())


def test_calls_run_on_the_loop_thread_and_return_results() -> None:
    with FakeBlocking("g", flag=3) as client:
        assert (
            client.async_client.started and client.async_client.flag == 3 and client.async_client.group == "g"
        )
        assert client.send(21) == 42
        assert client.subscribe("t") == "T"
        fut = client.send_async(5)  # type: ignore[arg-type]  # FakeAsync sends ints
        assert isinstance(fut, concurrent.futures.Future) and fut.result(timeout=5) == 10  # type: ignore[comparison-overlap]
        with pytest.raises(ValueError, match="bad input"):
            client.boom()
        assert client.async_client.loop_threads == {"rocketq-blocking-loop"}
    assert client.async_client.stopped


def test_safe_from_many_threads() -> None:
    client = FakeBlocking("g")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(client.send, range(50))) == [2 * i for i in range(50)]


def test_blocking_call_inside_the_loop_refuses_to_deadlock() -> None:
    client = FakeBlocking("g")

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="deadlock"):
            client.send(1)

    blocking.run(inside())


def test_same_names_as_the_async_api() -> None:
    assert blocking.Message is __import__("rocketq.client", fromlist=["Message"]).Message
    assert {
        "Producer",
        "PushConsumer",
        "LitePullConsumer",
        "SimpleConsumer",
        "Admin",
        "TransactionProducer",
    } <= set(blocking.__all__)


def test_generated_twins_are_in_step_with_the_async_classes() -> None:
    from rocketq.client import blocking_gen

    assert blocking_gen.TARGET.read_text(encoding="utf-8") == blocking_gen.render(), (
        "run python -m rocketq.client.blocking_gen"
    )


def test_twins_have_real_signatures_and_no_catch_all() -> None:
    import inspect

    from rocketq.client import Admin as AsyncAdmin
    from rocketq.client import Producer as AsyncProducer

    for twin, original in ((blocking.Producer, AsyncProducer), (blocking.Admin, AsyncAdmin)):
        for name in (
            ("send", "request", "reply")
            if twin is blocking.Producer
            else ("reset_offset_by_time", "topic_route")
        ):
            assert inspect.signature(getattr(twin, name)) == inspect.signature(getattr(original, name)), name
            assert inspect.getdoc(getattr(twin, name)) == inspect.getdoc(getattr(original, name))
    producer = blocking.Producer("pg-typo", namesrv_addr="127.0.0.1:9876")
    with pytest.raises(AttributeError):
        producer.sned  # type: ignore[attr-defined]  # noqa: B018  (a typo is an error, not a forwarded call)
