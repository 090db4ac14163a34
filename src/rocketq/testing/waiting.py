"""Wait on a condition with a deadline (tests never sleep-and-hope)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """The condition did not hold before the deadline; the message says what was awaited."""


# A condition may answer None for "not yet": the value returned is the first truthy one, never None.
@overload
async def wait_for(
    condition: Callable[[], Awaitable[T | None]],
    *,
    timeout_s: float = ...,
    interval_s: float = ...,
    what: str = ...,
) -> T: ...


@overload
async def wait_for(
    condition: Callable[[], T | None], *, timeout_s: float = ..., interval_s: float = ..., what: str = ...
) -> T: ...


async def wait_for(
    condition: Callable[[], T | Awaitable[T | None] | None],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll `condition` (sync or async) until it returns a truthy value, which is returned.

    Exceptions raised by the condition count as "not yet" and the last one is reported on timeout.
    """
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    last_value: object = None
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            last_value = value
        except (AssertionError, Exception) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            detail = (
                f"last error: {last_error!r}" if last_error is not None else f"last value: {last_value!r}"
            )
            raise WaitTimeoutError(f"timed out after {timeout_s:.1f}s waiting for {what} ({detail})")
        await asyncio.sleep(interval_s)
