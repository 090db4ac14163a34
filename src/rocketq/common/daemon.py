"""What the `rocketq namesrv` and `rocketq broker` processes share besides their logs (common.logs).

The daemon contract (docs/deploy.md): a port that cannot be bound is reported in one line naming the
address and the cause; once serving, a `METRICS <role> <addr>` line (with metrics on) and a
`READY <role> <addr>` line go to stdout, the line a supervisor or the test harness waits for; SIGTERM
or SIGINT shuts down, bounded in time. Java's NamesrvStartup / BrokerStartup do the same with a
shutdown hook.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import signal
from collections.abc import Awaitable, Callable


def listen_problem(exc: BaseException, where: str) -> str:
    """One line for an operator: why nothing listens on `where` (the OSError behind `exc`, if any)."""
    cause = exc.__cause__
    if isinstance(cause, OSError) and cause.errno == errno.EADDRINUSE:
        return f"cannot listen on {where}: the port is already in use"
    if isinstance(cause, OSError) and cause.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: the address is not available on this host"
    return f"cannot listen on {where}: {exc}"


def tune_collector(freeze: bool, gen0_threshold: int) -> None:
    """The cyclic garbage collector for a daemon that has started: with `freeze`, what start-up made is
    collected once and then frozen (gc.freeze: moved to the permanent generation, which no collection
    walks again); a `gen0_threshold` > 0 replaces the generation-0 threshold, keeping the other two."""
    if freeze:
        gc.collect()
        gc.freeze()
    if gen0_threshold > 0:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(gen0_threshold, gen1, gen2)


async def serve_until_signalled(
    role: str,
    addr: str,
    metrics_addr: str | None,
    shutdown: Callable[[], Awaitable[None]],
    timeout_s: float,
    log: logging.Logger,
    what: str,
) -> None:
    """Announce the daemon (METRICS, READY), wait for SIGTERM/SIGINT, then run `shutdown` within `timeout_s`."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if metrics_addr is not None:  # before READY: the harness reads stdout up to that line
        print(f"METRICS {role} {metrics_addr}", flush=True)
    print(f"READY {role} {addr}", flush=True)
    await stop.wait()
    log.info("shutting down the %s", what)
    try:
        await asyncio.wait_for(shutdown(), timeout_s)
    except TimeoutError:
        log.warning("shutdown took longer than %.0fs; stopping anyway", timeout_s)
