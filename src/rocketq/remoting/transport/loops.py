"""Event loop factories by name: "auto" (uvloop when installed), "asyncio", "uvloop".

Port of uvicorn's LOOP_FACTORIES / loops/auto.py (no Java counterpart: Netty picks NIO or epoll by
`useEpollNativeSelector`). Everything in rocketq runs on plain asyncio too (uvloop is optional, and
absent on Windows); uvloop is only a speed-up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from rocketq.common.errors import ConfigError

T = TypeVar("T")

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def _asyncio_factory() -> LoopFactory:
    return asyncio.SelectorEventLoop if hasattr(asyncio, "SelectorEventLoop") else asyncio.new_event_loop


def _uvloop_factory() -> LoopFactory:
    try:
        import uvloop
    except ImportError:
        raise ConfigError("event loop 'uvloop' requested but uvloop is not installed") from None
    return uvloop.new_event_loop


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def _auto_factory() -> LoopFactory:
    return _uvloop_factory() if uvloop_available() else _asyncio_factory()


LOOP_FACTORIES: dict[str, Callable[[], LoopFactory]] = {
    "auto": _auto_factory,
    "asyncio": _asyncio_factory,
    "uvloop": _uvloop_factory,
}


def loop_factory(name: str = "auto") -> LoopFactory:
    """The factory of new event loops for `name`; ConfigError for an unknown or unavailable name."""
    try:
        resolve = LOOP_FACTORIES[name]
    except KeyError:
        raise ConfigError(f"unknown event loop {name!r}; choose one of {sorted(LOOP_FACTORIES)}") from None
    return resolve()


def new_event_loop(name: str = "auto") -> asyncio.AbstractEventLoop:
    return loop_factory(name)()


def run(main: Coroutine[Any, Any, T], loop: str = "auto") -> T:
    """asyncio.run(main) on the named loop implementation (what daemons and benchmarks call)."""
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main)
