"""What metrics on add to the broker's send path, in one process: CPU per SEND_MESSAGE_V2 with and without.

    .venv/bin/python bench/metrics_hot_path.py --count 20000 --round 250
    .venv/bin/python bench/metrics_hot_path.py --count 20000 --round 256 --run 32

The send path of bench/send_path.py (frame decode, SendMessageProcessor over a real MessageStore, the
answer's encode), run in rounds that alternate metrics off and on in the same process: on, the
processor feeds BrokerMetrics and each request is timed as the dispatcher times it for
rocketmq_rpc_latency (a clock read at dispatch, RpcLatency.record at the answer). With --run N the
requests go N at a time through process_requests, as the dispatcher hands over the consecutive sends
of one read (pipelined producers), and a run's answers are timed once (RpcLatency.record_many). The figure is the
event-loop thread's CPU time (time.thread_time) per message; the overhead is the median over the
pairs of neighbouring rounds, so load from other processes hits both sides of a pair alike. It leaves
out the transport (bench/metrics_overhead.py measures whole brokers over sockets).

Timing figures move with the machine's load; instruction counts do not. With --side the script sends
--count messages with metrics off or on and stops, to be run under valgrind:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out .venv/bin/python bench/metrics_hot_path.py --side on --count 3000

Two counts per side (e.g. --count 1000 and 3000) give the instructions per message of each side,
start-up taken out; their difference is what metrics add to a send.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
from time import perf_counter_ns
from typing import Any

from inprocess_broker import Connection, unstarted_broker
from send_path import WARM_UP, frames  # the same frames and warm-up as the send path benchmark

from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame


async def main(count: int, round_size: int, side: str | None, run_size: int) -> None:
    async with unstarted_broker(metricsExporterType="PROM", metricsPromExporterPort=0) as broker:
        await measure(broker, count, round_size, side, run_size)


async def measure(broker: Any, count: int, round_size: int, side: str | None, run_size: int = 1) -> None:
    ctx, metrics = broker.ctx, broker.metrics  # the exporter is built, not started: nothing is scraped
    rpc = metrics.rpc
    processor = broker.processors["send"]
    process, process_run = processor.process_request, processor.process_requests
    conn = Connection()
    work = frames(WARM_UP + (count if side else 2 * count))

    async def alone(batch: list[memoryview], on: bool) -> None:
        ctx.metrics = metrics if on else None
        for frame in batch:
            cmd = decode_frame_payload(frame)
            started = perf_counter_ns() if on else 0
            resp = await process(conn, cmd)
            assert resp is not None and resp.code == 0, resp
            if on:
                rpc.record((cmd.code, resp.code, "success"), started)
            encode_frame(resp)

    async def together(batch: list[memoryview], on: bool) -> None:
        ctx.metrics = metrics if on else None
        for at in range(0, len(batch), run_size):
            cmds = [decode_frame_payload(frame) for frame in batch[at : at + run_size]]
            started = perf_counter_ns() if on else 0
            resps = await process_run(conn, cmds)
            for resp in resps:
                assert resp is not None and resp.code == 0, resp
                encode_frame(resp)
            if on:  # every answer of the run has the same codes: one record, as the dispatcher's
                rpc.record_many((cmds[0].code, 0, "success"), started, len(cmds))

    run = together if run_size > 1 else alone

    await run(work[:WARM_UP], True)
    await asyncio.sleep(0.5)  # the allocator's first reservations
    gc.collect()
    if side is not None:  # one side only, for an instruction count (valgrind --tool=callgrind)
        await run(work[WARM_UP : WARM_UP + count], side == "on")
        return
    figures: dict[bool, list[float]] = {False: [], True: []}
    start = WARM_UP
    for pair in range(count // round_size):
        for on in (False, True) if pair % 2 == 0 else (True, False):  # each side first in turn
            t0 = time.thread_time()
            await run(work[start : start + round_size], on)
            figures[on].append(1e6 * (time.thread_time() - t0) / round_size)
            start += round_size
    overheads = [100 * (on - off) / off for off, on in zip(figures[False], figures[True], strict=True)]
    off_med, on_med = statistics.median(figures[False]), statistics.median(figures[True])
    print(
        f"send path CPU per message: metrics off median {off_med:.2f} us, on {on_med:.2f} us "
        f"({on_med - off_med:+.2f} us); overhead per pair of rounds median {statistics.median(overheads):+.1f} %, "
        f"quartiles {statistics.quantiles(overheads, n=4)[0]:+.1f}..{statistics.quantiles(overheads, n=4)[2]:+.1f} % "
        f"over {len(overheads)} pairs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="messages per side")
    parser.add_argument("--round", type=int, default=250, dest="round_size")
    parser.add_argument(
        "--run", type=int, default=1, dest="run_size", help="requests taken together (process_requests)"
    )
    parser.add_argument(
        "--side",
        choices=["off", "on"],
        help="send --count messages with metrics off or on, no timing: the run to count instructions of, as "
        "valgrind --tool=callgrind does (the difference between two counts is the cost, free of load)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.count, args.round_size, args.side, args.run_size))
