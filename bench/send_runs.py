"""The broker's send path in one process, one request at a time against runs of requests taken together.

    .venv/bin/python bench/send_runs.py                  # runs of 64 (a read of 64 pipelined sends)
    .venv/bin/python bench/send_runs.py --run 16
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/send_runs.py
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/send_runs.py --runs-only 1088  # and 3136
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/send_runs.py --reads-only 1000  # and 3000

bench/send_path.py's work (decode each SEND_MESSAGE_V2 frame, the send processor over a real
MessageStore, encode each answer), measured two ways in alternating rounds on the same store: each
request alone through process_request, as the dispatcher hands a lone request over, and --run requests
at a time through process_requests, as it hands over the consecutive sends of one read. The figure is
the event-loop thread's CPU time (time.thread_time) per message: best and median of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time

from inprocess_broker import Connection, unstarted_broker
from send_path import WARM_UP, frames

from rocketq.remoting.protocol.frame import FrameDecoder, decode_frame_payload, encode_frame


async def main(round_size: int, run: int, rounds: int) -> None:
    async with unstarted_broker() as broker:
        proc = broker.processors["send"]
        conn = Connection()
        work = frames(WARM_UP + round_size * rounds * 2)

        async def alone(part: list[memoryview]) -> None:
            for frame in part:
                resp = await proc.process_request(conn, decode_frame_payload(frame))
                assert resp is not None and resp.code == 0, resp
                encode_frame(resp)

        async def together(part: list[memoryview]) -> None:
            for i in range(0, len(part), run):
                for resp in await proc.process_requests(
                    conn, [decode_frame_payload(f) for f in part[i : i + run]]
                ):
                    assert resp is not None and resp.code == 0, resp
                    encode_frame(resp)

        await alone(work[:WARM_UP])
        await asyncio.sleep(0.5)  # the allocator's first reservations
        gc.collect()
        figures: dict[str, list[float]] = {"alone": [], f"runs of {run}": []}
        at = WARM_UP
        for i in range(rounds * 2):
            name, fn = (f"runs of {run}", together) if i % 2 else ("alone", alone)
            t0 = time.thread_time()
            await fn(work[at : at + round_size])
            figures[name].append(1e6 * (time.thread_time() - t0) / round_size)
            at += round_size
        load = os.getloadavg()[0]
        for name, values in figures.items():
            print(
                f"{name:>11}: best {min(values):.2f}, median {statistics.median(values):.2f} us CPU per message "
                f"({len(values)} rounds of {round_size}, load {load:.1f})"
            )


async def runs_only(count: int, run: int) -> None:
    """The first `count` of 3,200 prebuilt frames in runs of `run`, untimed: for an instruction count
    (callgrind), the difference of two counts divided by the difference of the messages."""
    async with unstarted_broker() as broker:
        proc = broker.processors["send"]
        conn = Connection()
        work = frames(3200)[:count]
        await asyncio.sleep(0.3)  # the allocator's first reservations
        await proc.process_requests(conn, [decode_frame_payload(f) for f in work[:run]])  # warm-up
        for i in range(0, len(work), run):
            for resp in await proc.process_requests(
                conn, [decode_frame_payload(f) for f in work[i : i + run]]
            ):
                encode_frame(resp)  # type: ignore[arg-type]


async def reads_only(count: int) -> None:
    """`count` frames (after 64 for the warm-up), length-prefixed and fed to a FrameDecoder in 64 KiB reads, each
    read's commands through process_requests (as the transport hands over a read of pipelined sends), each
    answer encoded; untimed, for an instruction count that includes the frame decoder."""
    async with unstarted_broker() as broker:
        proc = broker.processors["send"]
        conn = Connection()
        stream = b"".join(len(f).to_bytes(4, "big") + bytes(f) for f in frames(count + 64))
        await asyncio.sleep(0.3)  # the allocator's first reservations
        decoder = FrameDecoder()
        for at in range(0, len(stream), 65536):
            requests = decoder.feed(stream[at : at + 65536])
            if requests:
                for resp in await proc.process_requests(conn, requests):
                    encode_frame(resp)  # type: ignore[arg-type]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=int, default=64, help="requests taken together")
    parser.add_argument("--round", type=int, default=2560, dest="round_size")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of each way")
    parser.add_argument("--runs-only", type=int, metavar="N", help="only send N (<= 3200) in runs, untimed")
    parser.add_argument("--reads-only", type=int, metavar="N", help="only N frames in 64 KiB reads, untimed")
    args = parser.parse_args()
    if args.reads_only:
        work = reads_only(args.reads_only)
    elif args.runs_only:
        work = runs_only(args.runs_only, args.run)
    else:
        work = main(args.round_size, args.run, args.rounds)
    try:
        import uvloop

        uvloop.run(work)
    except ImportError:
        asyncio.run(work)
