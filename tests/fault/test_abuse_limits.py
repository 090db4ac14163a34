"""One client against everyone else: the broker's memory bound and the bystander it keeps serving.

Each abuse pattern runs against a real broker daemon on loopback while a bystander (its own
connection, opened first) keeps doing sync sends. Asserted: the broker's anonymous memory
(RssAnon from /proc, so the store's mapped pages do not count) stays under a bound, the abuser is
paused or closed with a log line that names the limit, and the bystander is answered throughout.
Printed, never asserted (timing is noisy): the memory peak and the bystander's send p99.

The abusers run in a child process (forked, on their own event loop), so the bystander's figures
measure the broker, not the test process writing hundreds of megabytes. CI sizes are small; the sizes of the
original probes run with ROCKETQ_SOAK=1.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import struct
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH, encode_frame
from rocketq.testing.broker_probe import SMALL_STORE_OVERRIDES, BrokerProbe, pull_request, send_request
from rocketq.testing.cluster import BrokerProcess
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.procinfo import anon_kib, status_kib
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection

MIB = 1 << 20
BIG_BODY = 4_000_000  # "a 4 MB message": under the 4 MiB maxMessageSize
CHUNK = MIB  # abusers write big frames in chunks, so the test process holds one copy of each frame


@dataclass
class Figures:
    """What one abuse run measured."""

    baseline_kib: int = 0
    peak_kib: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def growth_mib(self) -> float:
        return (self.peak_kib - self.baseline_kib) / 1024

    def p99_ms(self) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")

    def report(self, name: str, broker: BrokerProcess) -> str:
        line = (
            f"{name}: broker RssAnon {self.baseline_kib / 1024:.0f} MiB -> peak {self.peak_kib / 1024:.0f} MiB "
            f"(+{self.growth_mib:.0f} MiB), VmHWM {status_kib(broker.pid, 'VmHWM') / 1024:.0f} MiB; bystander "
            f"{len(self.latencies_ms)} sync sends, p50 {sorted(self.latencies_ms)[len(self.latencies_ms) // 2]:.1f} ms, "
            f"p99 {self.p99_ms():.1f} ms, max {max(self.latencies_ms):.1f} ms, "
            f"{sum(t > 50 for t in self.latencies_ms)} over 50 ms"
        )
        print(line)
        return line


async def _bystander(probe: BrokerProbe, stop: asyncio.Event, figures: Figures) -> None:
    body = b"b" * 256
    while not stop.is_set():
        started = time.perf_counter()
        try:
            await probe.send("Bystander", body)
        except Exception as exc:  # recorded, and the test fails on it
            figures.errors.append(repr(exc))
            return
        figures.latencies_ms.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0.01)


async def _sample_memory(pid: int, stop: asyncio.Event, figures: Figures) -> None:
    while not stop.is_set():
        figures.peak_kib = max(figures.peak_kib, anon_kib(pid))
        await asyncio.sleep(0.02)


def _abuser_main(abuse: Callable[..., Coroutine[Any, Any, None]], args: tuple[Any, ...]) -> None:
    asyncio.run(abuse(*args))


async def _run_in_child(
    abuse: Callable[..., Coroutine[Any, Any, None]], args: tuple[Any, ...], timeout_s: float
) -> None:
    child = multiprocessing.get_context("fork").Process(target=_abuser_main, args=(abuse, args), daemon=True)
    child.start()
    try:
        await wait_for(
            lambda: not child.is_alive(), timeout_s=timeout_s, interval_s=0.1, what="the abuser to finish"
        )
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
    assert child.exitcode == 0, f"the abuser process failed (exit code {child.exitcode})"


async def run_abuse(
    broker: BrokerProcess, abuse: Callable[..., Coroutine[Any, Any, None]], *args: Any, timeout_s: float = 120
) -> Figures:
    """Run `abuse(*args)` in a child process while a bystander sends and the broker's memory is sampled."""
    probe = await BrokerProbe.open(broker.addr, topic="Bystander")
    figures = Figures()
    try:
        await probe.roundtrip()
        figures.baseline_kib = figures.peak_kib = anon_kib(broker.pid)
        stop = asyncio.Event()
        tasks = [
            asyncio.ensure_future(_bystander(probe, stop, figures)),
            asyncio.ensure_future(_sample_memory(broker.pid, stop, figures)),
        ]
        try:
            await _run_in_child(abuse, args, timeout_s)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        assert not figures.errors, f"the bystander was not served: {figures.errors}"
        assert figures.latencies_ms, "the bystander sent nothing"
        await probe.roundtrip()  # still served, byte for byte, on the same connection
    finally:
        await probe.close()
    return figures


async def _open(addr: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, _, port = addr.rpartition(":")
    return await asyncio.open_connection(host, int(port))


async def _write_chunked(writer: asyncio.StreamWriter, data: bytes | memoryview, deadline: float) -> None:
    """Write `data` in chunks until done or `deadline` (the broker may stop reading us: that is the point)."""
    view = memoryview(data)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ConnectionError, TimeoutError, OSError):
        for start in range(0, len(view), CHUNK):
            writer.write(view[start : start + CHUNK])
            await asyncio.wait_for(writer.drain(), max(deadline - loop.time(), 0.01))


def _abort_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.transport.abort()


# -- unread pipelined pulls ---------------------------------------------------------------------------------
async def _pulls_unread(addr: str, connections: int, pulls: int, hold_s: float) -> None:
    batch = b"".join(encode_frame(pull_request("Big", 0, 0, max_msgs=1)) for _ in range(pulls))
    writers = []
    try:
        for _ in range(connections):
            _reader, writer = await _open(addr)  # the reader is never read
            writer.write(batch)
            writers.append(writer)
        await asyncio.sleep(hold_s)  # the broker now holds what it holds for us
    finally:
        _abort_all(writers)


async def _broker_with_big_message(cluster_factory: ClusterFactory, **overrides: object) -> BrokerProcess:
    cluster = await cluster_factory(namesrv_count=0, broker_overrides={**SMALL_STORE_OVERRIDES, **overrides})
    broker = cluster.brokers[0]
    probe = await BrokerProbe.open(broker.addr)
    try:
        await probe.send("Big", b"m" * BIG_BODY, queue_id=0)
    finally:
        await probe.close()
    return broker


@pytest.mark.parametrize(
    ("connections", "pulls"),
    [
        pytest.param(1, 100, id="1x100"),
        pytest.param(20, 5, id="20x5"),
        pytest.param(1, 500, id="soak-1x500", marks=pytest.mark.soak),
        pytest.param(20, 500, id="soak-20x500", marks=pytest.mark.soak),
    ],
)
@pytest.mark.timeout(180)
async def test_unread_pipelined_pulls_are_paused(
    cluster_factory: ClusterFactory, connections: int, pulls: int
) -> None:
    """Pulls of a 4 MB message pipelined on connections that never read their answers: each connection
    is answered up to its high-water mark and then no longer read (or closed past its share of the
    output budget); the answers held stay bounded whatever the number of pulls."""
    broker = await _broker_with_big_message(cluster_factory, maxTotalBufferedOutputBytes=64 * MIB)
    figures = await run_abuse(broker, _pulls_unread, broker.addr, connections, pulls, 3.0)
    figures.report(f"unread pulls {connections}x{pulls} of {BIG_BODY} B", broker)
    log = broker.log_text()
    assert "paused reading" in log or "does not read what we send" in log, broker.log_tail()
    # Each connection holds about two answers above its high-water mark; the sum is capped at 64 MiB.
    bound = 64 + min(connections, 8) * 12 + 48
    assert figures.growth_mib < bound, f"{figures.growth_mib:.0f} MiB over the baseline (bound {bound})"


# -- large frames -------------------------------------------------------------------------------------------
async def _held_frames(addr: str, connections: int, hold_s: float) -> None:
    """Each connection announces the largest frame and sends all of it but the last byte."""
    frame = struct.pack(">i", MAX_FRAME_LENGTH) + bytes(MAX_FRAME_LENGTH - 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + hold_s
    writers = [(await _open(addr))[1] for _ in range(connections)]
    try:
        await asyncio.gather(*(_write_chunked(w, frame, deadline) for w in writers))
        await asyncio.sleep(max(deadline - loop.time(), 0))
    finally:
        _abort_all(writers)


async def _whole_frames(addr: str, connections: int, body_mib: int, hold_s: float) -> None:
    """Each connection sends one complete SEND_MESSAGE frame with a `body_mib` body, all at once."""
    frame = encode_frame(send_request("Huge", bytes(body_mib * MIB)))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + hold_s
    opened = [await _open(addr) for _ in range(connections)]
    answered = 0

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        await _write_chunked(writer, frame, deadline)
        with contextlib.suppress(ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            head = await asyncio.wait_for(reader.readexactly(4), max(deadline - loop.time(), 0.01))
            await reader.readexactly(struct.unpack(">i", head)[0])
            answered += 1

    try:
        await asyncio.gather(*(one(r, w) for r, w in opened))
    finally:
        _abort_all([w for _r, w in opened])


@pytest.mark.parametrize(
    "connections",
    [pytest.param(40, id="40"), pytest.param(100, id="soak-100", marks=pytest.mark.soak)],
)
@pytest.mark.timeout(180)
async def test_frames_held_open_wait_for_the_input_budget(
    cluster_factory: ClusterFactory, connections: int
) -> None:
    """Connections each sending a 16 MiB frame but its last byte: only as many frames as fit in
    maxTotalBufferedInputBytes are read; the others wait unread (their bytes stay in the kernel)."""
    cluster = await cluster_factory(
        namesrv_count=0, broker_overrides={**SMALL_STORE_OVERRIDES, "maxTotalBufferedInputBytes": 64 * MIB}
    )
    broker = cluster.brokers[0]
    figures = await run_abuse(broker, _held_frames, broker.addr, connections, 4.0)
    figures.report(f"{connections} x 16 MiB frames held open", broker)
    assert "does not fit in maxTotalBufferedInputBytes" in broker.log_text(), broker.log_tail()
    assert figures.growth_mib < 64 + 64, f"{figures.growth_mib:.0f} MiB over the baseline"


@pytest.mark.parametrize(
    "connections",
    [pytest.param(40, id="40"), pytest.param(200, id="soak-200", marks=pytest.mark.soak)],
)
@pytest.mark.timeout(240)
async def test_many_whole_large_frames_at_once_stay_in_the_input_budget(
    cluster_factory: ClusterFactory, connections: int
) -> None:
    """Connections each sending a whole 15 MiB SEND_MESSAGE at once (refused: over maxMessageSize): they
    are read a budget's worth at a time, each answered, and memory stays near the budget."""
    cluster = await cluster_factory(
        namesrv_count=0, broker_overrides={**SMALL_STORE_OVERRIDES, "maxTotalBufferedInputBytes": 64 * MIB}
    )
    broker = cluster.brokers[0]
    figures = await run_abuse(broker, _whole_frames, broker.addr, connections, 15, 60.0)
    figures.report(f"{connections} x 15 MiB frames at once", broker)
    # The budget, plus a decoded body copied out of its frame buffer and one read's worth per connection.
    assert figures.growth_mib < 64 + 2 * 15 + 64, f"{figures.growth_mib:.0f} MiB over the baseline"


# -- a trickled frame, a connection flood -------------------------------------------------------------------
@pytest.mark.timeout(60)
async def test_a_trickled_frame_is_closed_at_the_frame_deadline(cluster_factory: ClusterFactory) -> None:
    """A frame whose bytes come one at a time, each well within the idle time: the bytes do not count as
    activity, and the frame must be whole within frameReadTimeoutMillis."""
    overrides = {
        **SMALL_STORE_OVERRIDES,
        "serverChannelMaxIdleTimeSeconds": 30,
        "frameReadTimeoutMillis": 2000,
    }
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=overrides)
    broker = cluster.brokers[0]
    bystander = await BrokerProbe.open(broker.addr)
    trickler = await RawConnection.open(broker.addr)
    started = time.monotonic()
    try:
        await trickler.send_bytes(struct.pack(">i", 1000))
        with contextlib.suppress(ConnectionError):
            while not trickler.is_closed and time.monotonic() - started < 20:
                await trickler.send_bytes(b"x")
                await bystander.roundtrip()
                await asyncio.sleep(0.5)
        await trickler.wait_closed(5)
        print(f"trickled frame closed after {time.monotonic() - started:.1f}s (frameReadTimeoutMillis 2000)")
        assert "frameReadTimeoutMillis" in broker.log_text(), broker.log_tail()
        await bystander.roundtrip()
    finally:
        await trickler.close()
        await bystander.close()


@pytest.mark.timeout(60)
async def test_a_connection_flood_from_one_address_is_capped(cluster_factory: ClusterFactory) -> None:
    cap = 40
    overrides = {**SMALL_STORE_OVERRIDES, "maxConnectionsPerAddress": cap}
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=overrides)
    broker = cluster.brokers[0]
    bystander = await BrokerProbe.open(broker.addr)  # one of the `cap`: opened before the flood
    flood = [await RawConnection.open(broker.addr) for _ in range(cap + 30)]
    try:
        await wait_for(
            lambda: sum(c.is_closed for c in flood) >= 31, timeout_s=10, what="the extra connections closed"
        )
        assert sum(not c.is_closed for c in flood) == cap - 1
        assert "maxConnectionsPerAddress" in broker.log_text(), broker.log_tail()
        await bystander.roundtrip()
        kept = BrokerProbe(next(c for c in flood if not c.is_closed))
        await kept.roundtrip()  # the connections within the cap are served
        for conn in flood[:10]:
            await conn.close()
        # Fewer connections: new ones are accepted again.
        again = await BrokerProbe.open(broker.addr)
        await again.roundtrip()
        await again.close()
    finally:
        for conn in flood:
            await conn.close()
        await bystander.close()
