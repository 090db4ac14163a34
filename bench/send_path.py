"""The broker's send path in one process, without sockets: CPU per SEND_MESSAGE_V2 of the part of the
work that the header codec, the send processor and the store do.

    .venv/bin/python bench/send_path.py                             # accelerators as installed
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/send_path.py     # pure Python
    .venv/bin/python bench/send_path.py --batch 100                 # SEND_BATCH_MESSAGE, 100 a request
    PYTHONPATH=<older tree>/src .venv/bin/python bench/send_path.py # an older tree, same driver
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/send_path.py --batch 100 --untimed 2000  # and 7000

Each message is a msgpack-headed SEND_MESSAGE_V2 frame (1 KiB body, a producer's usual properties)
built beforehand; the loop decodes the frame, hands it to SendMessageProcessor.process_request over a
real MessageStore (ASYNC_FLUSH, a temporary directory, an arrival listener as long polling adds) and
encodes the answer frame. What it leaves out is the transport: reads, the dispatcher, writes (see
bench/remoting.py for those). The figure is the event-loop thread's CPU time (time.thread_time) per
message, best and first quartile of rounds of --round messages, so that load from other processes
hits it as little as possible. The processor and its broker context are a real broker's, built but
not started (bench/inprocess_broker.py).
With --batch N each frame is a SEND_BATCH_MESSAGE of N such messages (the SDK's batch encoder, its
per-message UNIQ_KEY), and the figure is still per message.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time

from inprocess_broker import Connection, unstarted_broker

from rocketq.common.message import Message
from rocketq.common.record.codec import encode_batch
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame

BODY = b"x" * 1024
WARM_UP = 2000


def send_header(i: int) -> dict[str, str]:
    """The SEND_MESSAGE_V2 header of the i-th message, as a producer writes it (queue i % 4)."""
    return {
        "a": "pg", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": str(i % 4), "f": "0",
        "g": "1700000000000", "h": "0", "i": f"UNIQ_KEY\x017F0000010000{i:020X}\x02WAIT\x01true",
        "j": "0", "k": "false", "m": "false", "n": "broker-a",
    }  # fmt: skip


def frames(count: int) -> list[memoryview]:
    out = []
    for i in range(count):
        cmd = RemotingCommand.request(310, send_header(i), BODY, serialize_type=SerializeType.MSGPACK)
        out.append(memoryview(encode_frame(cmd))[4:])  # as the frame decoder hands them over
    return out


def batch_frames(count: int, size: int) -> list[memoryview]:
    """`count` SEND_BATCH_MESSAGE frames of `size` messages each, as the SDK's send_batch builds them."""
    out = []
    for i in range(count):
        msgs = []
        for j in range(size):
            msg = Message("BenchTopic", BODY)
            msg.properties["UNIQ_KEY"] = f"7F0000010000{i * size + j:020X}"
            msgs.append(msg)
        ext = {
            "a": "pg", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": str(i % 4), "f": "0",
            "g": "1700000000000", "h": "0", "i": "WAIT\x01true", "j": "0", "k": "false", "m": "true",
            "n": "broker-a",
        }  # fmt: skip
        cmd = RemotingCommand.request(320, ext, encode_batch(msgs), serialize_type=SerializeType.MSGPACK)
        out.append(memoryview(encode_frame(cmd))[4:])
    return out


async def main(count: int, round_size: int, batch: int) -> None:
    async with unstarted_broker() as broker:
        per = max(batch, 1)
        proc = broker.processors["send"]
        conn = Connection()
        warm_up, round_size = WARM_UP // per, max(round_size // per, 1)
        count //= per
        work = batch_frames(warm_up + count, batch) if batch else frames(warm_up + count)
        process = proc.process_request

        async def run(batch: list[memoryview]) -> None:
            for frame in batch:
                resp = await process(conn, decode_frame_payload(frame))
                assert resp is not None and resp.code == 0, resp
                encode_frame(resp)

        await run(work[:warm_up])
        await asyncio.sleep(0.5)  # the allocator's first reservations
        gc.collect()
        rounds = []
        for start in range(warm_up, warm_up + count - round_size + 1, round_size):
            t0 = time.thread_time()
            await run(work[start : start + round_size])
            rounds.append(1e6 * (time.thread_time() - t0) / (round_size * per))
        rounds.sort()
        print(
            f"{'batch' if batch else 'send'} path: {rounds[0]:.2f} us CPU per message (best of {len(rounds)} rounds), first quartile {rounds[len(rounds) // 4]:.2f}"
        )


async def untimed(count: int, batch: int) -> None:
    """The first `count` messages of 8,000 prebuilt ones (frames of `batch`), untimed: for an instruction
    count (callgrind), the difference of two counts divided by the difference of the messages."""
    async with unstarted_broker() as broker:
        per = max(batch, 1)
        proc = broker.processors["send"]
        conn = Connection()
        work = (batch_frames(8000 // per, batch) if batch else frames(8000))[: count // per]
        await asyncio.sleep(0.3)  # the allocator's first reservations
        for frame in work:
            encode_frame(await proc.process_request(conn, decode_frame_payload(frame)))  # type: ignore[arg-type]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--round", type=int, default=2500, dest="round_size")
    parser.add_argument("--batch", type=int, default=0, help="messages per SEND_BATCH_MESSAGE (0: V2 sends)")
    parser.add_argument("--untimed", type=int, metavar="N", help="only send N (<= 8000) messages, untimed")
    args = parser.parse_args()
    work = (
        untimed(args.untimed, args.batch) if args.untimed else main(args.count, args.round_size, args.batch)
    )
    try:
        import uvloop

        uvloop.run(work)
    except ImportError:
        asyncio.run(work)
