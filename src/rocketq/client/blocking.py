"""The SDK without await: the same classes, names and arguments, for plain scripts and threads.

    from rocketq.client.blocking import Producer, PushConsumer, Message
    with Producer("pg", namesrv_addr="127.0.0.1:9876") as producer:
        result = producer.send(Message("T", b"hello"))

Every object runs its async twin (rocketq.client) on one background event-loop thread per process;
a call hands the coroutine to that loop and waits for its result, so any number of threads may use the
clients at once. Listeners run on the consumer's worker threads (sync functions) or on the loop (async
functions); a blocking call made from inside the loop thread (an async listener) raises instead of
deadlocking. `send_async` returns a concurrent.futures.Future.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

from rocketq.client import (
    Admin as AsyncAdmin,
)
from rocketq.client import (
    ConsumeFromWhere,
    ConsumeResult,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    MessageSelector,
    SendResult,
    SendStatus,
)
from rocketq.client import (
    LitePullConsumer as AsyncLitePullConsumer,
)
from rocketq.client import (
    Producer as AsyncProducer,
)
from rocketq.client import (
    PushConsumer as AsyncPushConsumer,
)
from rocketq.client import (
    SimpleConsumer as AsyncSimpleConsumer,
)
from rocketq.client import (
    TransactionProducer as AsyncTransactionProducer,
)

__all__ = [
    "Admin",
    "ConsumeFromWhere",
    "ConsumeResult",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "TransactionProducer",
]

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
        raise RuntimeError("a blocking rocketq call inside the client's event loop would deadlock; use rocketq.client")
    return asyncio.run_coroutine_threadsafe(coro, _LOOP.loop())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on the background loop and wait for its result."""
    return submit(coro).result()


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


class _Blocking:
    """Forwards every method of the wrapped async object, run on the background loop."""

    _async_cls: type[Any] = object

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._target = self._async_cls(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return run(_call(attr, *args, **kwargs))

        return call

    def __enter__(self) -> Self:
        run(_call(self._target.start))
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        run(_call(self._target.shutdown))

    @property
    def async_client(self) -> Any:
        """The async object underneath (to use from async code on the background loop)."""
        return self._target


class Producer(_Blocking):
    """Blocking twin of rocketq.client.Producer (start, send, send_batch, send_oneway, shutdown...)."""

    _async_cls: type[Any] = AsyncProducer

    def send_async(self, msg: Message, selector: Any = None, arg: Any = None, **kw: Any) -> concurrent.futures.Future[SendResult]:
        """Start a send; the returned future holds the SendResult (or the error)."""

        async def send() -> SendResult:
            result: SendResult = await self._target.send_async(msg, selector, arg, **kw)
            return result

        return submit(send())


class TransactionProducer(Producer):
    """Blocking twin of rocketq.client.TransactionProducer (send_in_transaction)."""

    _async_cls = AsyncTransactionProducer


class PushConsumer(_Blocking):
    """Blocking twin of rocketq.client.PushConsumer (subscribe, register_listener, start, shutdown)."""

    _async_cls = AsyncPushConsumer


class LitePullConsumer(_Blocking):
    """Blocking twin of rocketq.client.LitePullConsumer (subscribe/assign, poll, seek, commit)."""

    _async_cls = AsyncLitePullConsumer


class SimpleConsumer(_Blocking):
    """Blocking twin of rocketq.client.SimpleConsumer (receive, ack, change_invisible_duration)."""

    _async_cls = AsyncSimpleConsumer


class Admin(_Blocking):
    """Blocking twin of rocketq.client.Admin."""

    _async_cls = AsyncAdmin
