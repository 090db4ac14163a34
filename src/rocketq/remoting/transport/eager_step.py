"""Eager start of a coroutine: run it in place until it first suspends; only then continue it in a task.

The remoting dispatcher (rocketq.remoting.transport.dispatch: Dispatcher.dispatch and Executor) starts
each request's processor coroutine with `coro.send(None)` right where the request was decoded. Most
processors answer without ever suspending, so they finish inside that call: no Task, no done
callback, no extra turn of the event loop. A coroutine that does suspend hands over what it awaits;
`continue_in_task` then finishes it inside a Task with `resume`. On the remoting benchmark
(bench/remoting.py's echo, uvloop, msgpack) a Task per request instead costs +28 % server CPU per
round trip at 1 request in flight and +70 % at 256 (docs/architecture.md, "The dispatcher").

What this relies on beyond the coroutine protocol (send / throw / StopIteration) is asyncio's future
protocol, as asyncio.Task.__step drives it (CPython Lib/asyncio/futures.py and tasks.py):
- a Future's __await__ sets `_asyncio_future_blocking = True` and yields the future itself; a bare
  `yield` (asyncio.sleep(0)) yields None;
- the driver must set `_asyncio_future_blocking` back to False before it waits on that future: until
  then a second coroutine awaiting the same future fails with "await wasn't used with future".
This module is the only place in rocketq that touches that attribute. The import fails at once if
asyncio.Future lacks it, and `check_asyncio()` exercises every case on the running interpreter; the
unit test tests/unit/remoting/transport/test_eager_step.py runs it under every supported Python found
on the machine (`python eager_step.py` runs it alone: this file imports nothing but asyncio).

Python 3.12 added the same idea to asyncio itself (asyncio.eager_task_factory, Task(eager_start=True)),
but it still builds a Task and its callbacks per request; the supported range starts at 3.11, which
has neither, so the dispatcher keeps this module.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

BLOCKING_FLAG = "_asyncio_future_blocking"


class EagerStepUnsupported(RuntimeError):
    """The running asyncio no longer behaves as this module relies on (see the module docstring)."""


if not hasattr(asyncio.Future, BLOCKING_FLAG):  # pragma: no cover - only on an asyncio that changed
    raise EagerStepUnsupported(
        f"asyncio.Future has no {BLOCKING_FLAG} attribute on Python {sys.version.split()[0]}: "
        "rocketq.remoting.transport.eager_step must be updated before rocketq runs on it"
    )


def release(awaiting: Any) -> None:
    """Clear the flag a future's __await__ set, as Task.__step does when a coroutine yields a future."""
    if awaiting is not None:
        awaiting._asyncio_future_blocking = False


async def resume(coro: Coroutine[Any, Any, T], awaiting: Any) -> T:
    """Drive `coro`, already started and suspended on `awaiting`, to its end inside the current task.

    `awaiting` is what the coroutine yielded: an asyncio future (from an `await` deep inside it) or
    None (a bare yield, as in asyncio.sleep(0)). Once the future settles the coroutine is resumed and
    its own `await` reads the result or raises the exception, exactly as under a Task. Cancelling
    this task cancels the awaited future, so the coroutine sees CancelledError where it awaits.
    """
    while True:
        try:
            if awaiting is None:
                await asyncio.sleep(0)
            else:
                release(awaiting)
                await awaiting
        except asyncio.CancelledError as exc:
            if awaiting is None or not awaiting.cancelled():  # this task was cancelled, not the future
                try:
                    awaiting = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                continue
        except Exception:  # the coroutine's own await re-raises it, with its own traceback
            pass
        try:
            awaiting = coro.send(None)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def continue_in_task(
    job: Coroutine[Any, Any, T], awaiting: Any, name: str, loop: asyncio.AbstractEventLoop | None = None
) -> asyncio.Task[T]:
    """A task for `job`, which finishes (with `resume`) a coroutine started in place and suspended on `awaiting`.

    The flag is cleared at once, not when the task first runs: another coroutine started in place in
    the meantime may await the same future (puts sharing one group-commit round). `loop` is the running
    loop when the caller knows it (a connection's owner loop): asyncio.get_running_loop() is a getpid
    system call in CPython 3.11, one more per suspended request (each SYNC_FLUSH send).
    """
    release(awaiting)
    return (loop or asyncio.get_running_loop()).create_task(job, name=name)


# -- the guard ---------------------------------------------------------------------------------------
def _fail(case: str, detail: str) -> EagerStepUnsupported:
    return EagerStepUnsupported(
        f"eager_step no longer matches asyncio on Python {sys.version.split()[0]} ({case}: {detail}); "
        "update rocketq.remoting.transport.eager_step (see its docstring) or make the dispatcher use "
        "plain tasks"
    )


def _start(coro: Coroutine[Any, Any, T], name: str) -> tuple[bool, Any]:
    """(True, result) if `coro` finished in place, else (False, task finishing it)."""
    try:
        awaiting = coro.send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, continue_in_task(resume(coro, awaiting), awaiting, name)


async def _cases() -> None:
    loop = asyncio.get_running_loop()

    async def immediate() -> str:
        return "now"

    done, value = _start(immediate(), "immediate")
    if not done or value != "now":
        raise _fail("a coroutine that never suspends", f"did not finish in place: {done}, {value!r}")

    # Two coroutines started in place awaiting one future (a group commit), then its result.
    shared: asyncio.Future[int] = loop.create_future()

    async def wait_shared(add: int) -> int:
        return await shared + add

    first, second = _start(wait_shared(1), "shared-1"), _start(wait_shared(2), "shared-2")
    if first[0] or second[0]:
        raise _fail("a coroutine awaiting a pending future", "finished without suspending")
    if getattr(shared, BLOCKING_FLAG) is not False:
        raise _fail("continue_in_task", f"{BLOCKING_FLAG} still set on the awaited future")
    shared.set_result(40)
    if (await first[1], await second[1]) != (41, 42):
        raise _fail("resume after a result", "the coroutines did not read the future's result")

    # An exception set on the awaited future is raised where the coroutine awaits it.
    failing: asyncio.Future[int] = loop.create_future()

    async def catch() -> str:
        try:
            await failing
        except KeyError as exc:
            return f"caught {exc.args[0]}"
        return "not raised"

    _done, task = _start(catch(), "exception")
    failing.set_exception(KeyError("k"))
    if await task != "caught k":
        raise _fail("resume after an exception", "the coroutine did not see the future's exception")

    # A bare yield (asyncio.sleep(0)) and an await on a task in the middle.
    async def several() -> int:
        await asyncio.sleep(0)
        inner = asyncio.ensure_future(asyncio.sleep(0, 5))
        return await inner + 1

    _done, task = _start(several(), "bare-yield")
    if await task != 6:
        raise _fail("a bare yield, then a task", "wrong result")

    # Cancelling the continuing task cancels the coroutine where it awaits.
    blocked: asyncio.Future[None] = loop.create_future()
    seen: list[str] = []

    async def cancellable() -> None:
        try:
            await blocked
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    _done, task = _start(cancellable(), "cancel")
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    if seen != ["cancelled"] or not blocked.cancelled():
        raise _fail("cancellation", f"the coroutine saw {seen}, the future cancelled: {blocked.cancelled()}")


def check_asyncio() -> None:
    """Run every case this module relies on against the running asyncio; EagerStepUnsupported if one fails."""
    try:
        asyncio.run(_cases())
    except EagerStepUnsupported:
        raise
    except Exception as exc:  # asyncio refused what this module does (e.g. "await wasn't used with future")
        raise _fail("running the cases", f"{type(exc).__name__}: {exc}") from exc


if __name__ == "__main__":  # `python eager_step.py`: the guard alone, on whichever interpreter runs it
    try:
        check_asyncio()
    except EagerStepUnsupported as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"eager_step matches asyncio on Python {sys.version.split()[0]}")
