"""The machinery under rocketq.client.blocking: one background event loop per process, and the base of
the generated twins (_blocking_classes.py, written by blocking_gen.py)."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import inspect
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

from rocketq.client.model import SendResult
from rocketq.common.message import Message, MessageExt

T = TypeVar("T")


class _LoopThread:
    """The process's background event loop, started on first use, stopped at interpreter exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="rocketq-blocking-loop", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def stop(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)


_LOOP = _LoopThread()
atexit.register(_LOOP.stop)


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule a coroutine on the background loop."""
    if _LOOP.in_loop_thread():
        coro.close()
        raise RuntimeError(
            "a blocking rocketq call inside the client's event loop would deadlock; use rocketq.client"
        )
    return asyncio.run_coroutine_threadsafe(coro, _LOOP.loop())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on the background loop and wait for its result."""
    return submit(coro).result()


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def in_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a plain method of an async object on the background loop (they are not thread-safe)."""
    return run(_call(fn, *args, **kwargs))  # type: ignore[no-any-return]


class _Blocking:
    """Base of the blocking twins: start/shutdown and `with`; the generated subclasses add the rest."""

    _async_cls: type[Any] = object
    _target: Any

    def start(self) -> None:
        """Start the client (connect, register, begin its background work)."""
        run(_call(self._target.start))

    def shutdown(self) -> None:
        """Stop the client cleanly (persist, unregister, close connections)."""
        run(_call(self._target.shutdown))

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    @property
    def async_client(self) -> Any:
        """The async object underneath (to use from async code on the background loop)."""
        return self._target


class _BlockingProducer(_Blocking):
    """The producer twins' hand-written part: calls that return futures instead of waiting."""

    def send_async(
        self, msg: Message, selector: Any = None, arg: Any = None, **kw: Any
    ) -> concurrent.futures.Future[SendResult]:
        """Start a send; the returned future holds the SendResult (or the error)."""

        async def send() -> SendResult:
            result: SendResult = await self._target.send_async(msg, selector, arg, **kw)
            return result

        return submit(send())

    def request_async(self, msg: Message, timeout_ms: int = 3000) -> concurrent.futures.Future[MessageExt]:
        """Start a request-reply request; the returned future holds the reply (or the error)."""
        return submit(self._target.request(msg, timeout_ms))
