"""The broker's pull path in one process, without sockets: CPU per message of PULL_MESSAGE answers.

    .venv/bin/python bench/pull_path.py                             # accelerators as installed
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/pull_path.py     # pure Python
    PYTHONPATH=<older tree>/src .venv/bin/python bench/pull_path.py # an older tree, same driver

A backlog of --count 1 KiB messages (4 queues) is stored first through the send processor (batches of
100); then each round decodes msgpack-headed PULL_MESSAGE frames of --batch messages (a push consumer's
header, its subscription carried with FLAG_SUBSCRIPTION), hands them to PullMessageProcessor over the real
MessageStore and encodes the answer frames, queue by queue from the first offset. The figure is the
event-loop thread's CPU time (time.thread_time) per message pulled, best and median of the rounds (a
round is one pass over the backlog by a fresh group). The transport is left out (bench/remoting.py).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from inprocess_broker import Connection, unstarted_broker
from send_path import batch_frames

from rocketq.remoting.protocol.codes import RequestCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame
from rocketq.remoting.transport.loops import run
from rocketq.testing.waiting import wait_for

QUEUES = 4
SYS_FLAG = 0x1 | 0x2 | 0x4  # FLAG_COMMIT_OFFSET | FLAG_SUSPEND | FLAG_SUBSCRIPTION


def pull_frame(group: str, queue_id: int, offset: int, batch: int) -> memoryview:
    ext = {
        "consumerGroup": group, "topic": "BenchTopic", "queueId": str(queue_id), "queueOffset": str(offset),
        "maxMsgNums": str(batch), "sysFlag": str(SYS_FLAG), "commitOffset": str(offset),
        "suspendTimeoutMillis": "15000", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
    }  # fmt: skip
    cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, ext, serialize_type=SerializeType.MSGPACK)
    return memoryview(encode_frame(cmd))[4:]


async def main(count: int, batch: int, rounds: int) -> None:
    async with unstarted_broker() as broker:
        send = broker.processors["send"]
        pull = broker.processors["pull"]
        conn = Connection()
        for frame in batch_frames(count // 100, 100):  # queue i % 4 for the i-th batch
            resp = await send.process_request(conn, decode_frame_payload(frame))
            assert resp is not None and resp.code == 0, resp
        per_queue = count // 100 // QUEUES * 100
        store = broker.store
        await wait_for(  # the consume queues are written by the store's dispatch, after the puts
            lambda: all(store.get_max_offset_in_queue("BenchTopic", q) >= per_queue for q in range(QUEUES)),
            timeout_s=30,
            what=f"{per_queue} units in each of the {QUEUES} consume queues",
        )
        figures = []
        for r in range(rounds + 1):
            group = f"bench_pull_{r}"
            work = [
                (pull_frame(group, q, off, batch), off)
                for q in range(QUEUES)
                for off in range(0, per_queue, batch)
            ]
            gc.collect()
            got = 0
            t0 = time.thread_time()
            for frame, offset in work:
                resp = await pull.process_request(conn, decode_frame_payload(frame))
                assert resp is not None and resp.code == 0, resp
                encode_frame(resp)
                got += int(resp.ext_fields["nextBeginOffset"]) - offset
            spent = time.thread_time() - t0
            if r:  # the first pass warms up (page cache, group creation)
                figures.append(1e6 * spent / got)
        print(
            f"pull path: best {min(figures):.2f}, median {statistics.median(figures):.2f} us CPU per message "
            f"({rounds} rounds of {got} messages, {batch} a pull)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=40000, help="backlog (a multiple of 400)")
    parser.add_argument("--batch", type=int, default=32, help="maxMsgNums of each pull")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    run(main(args.count, args.batch, args.rounds))  # uvloop when installed, as the broker runs
