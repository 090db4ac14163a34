"""SDK CPU per consumed message: PushConsumer (async listener) and LitePullConsumer over the same backlog.

    .venv/bin/python bench/consume_cpu.py                  # throw-away NameServer + broker, 50000 x 1 KiB
    .venv/bin/python bench/consume_cpu.py --count 100000 --pull-batch-size 32
    .venv/bin/python bench/consume_cpu.py --consumers lite --rounds 3   # lite pull only, three groups

The peers harness measures the push consumer only; this adds LitePullConsumer.poll. A backlog of
`--count` messages is sent in batches first, then each consumer (its own group, from the first
offset) takes all of it; "cpu us" is this process's CPU time (time.process_time) from the first message
received to the last, divided by the count: the SDK's cost, the broker runs in its own processes.
With --broker-cpu the broker's process CPU over the same span is printed too (all its threads, and the
busiest one, from /proc/<pid>/task/*/stat, 10 ms ticks), with the broker's pid for a profiler:

    .venv/bin/python bench/consume_cpu.py --consumers push --rounds 5 --count 100000 --broker-cpu
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketq.remoting.transport.loops import loop_factory
from rocketq.testing.cluster import LocalCluster

TOPIC = "bench_consume_cpu"


async def backlog(namesrv: str, count: int, size: int) -> None:
    async with Admin(namesrv_addr=namesrv) as admin:
        await admin.create_topic(TOPIC, read_queues=8, write_queues=8)
    async with Producer("bench_consume_cpu_producer", namesrv_addr=namesrv) as producer:
        body = b"x" * size
        for start in range(0, count, 100):
            await producer.send_batch([Message(TOPIC, body) for _ in range(min(100, count - start))])


def thread_ticks(pid: int) -> dict[str, int]:
    """utime + stime of each thread of `pid` (clock ticks)."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # ended while we looked
        fields = stat[stat.rindex(b")") + 2 :].split()
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


class BrokerCpu:
    """The broker's thread ticks at the first message and at the last (set by the consumers)."""

    pid = 0
    first: dict[str, int] | None = None

    @classmethod
    def start(cls) -> None:
        if cls.pid and cls.first is None:
            cls.first = thread_ticks(cls.pid)

    @classmethod
    def report(cls, count: int) -> str:
        if not cls.pid or cls.first is None:
            return ""
        last = thread_ticks(cls.pid)
        first, cls.first = cls.first, None
        spent = {tid: ticks - first.get(tid, 0) for tid, ticks in last.items()}
        tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
        busiest = max(spent.values())
        return (
            f"  broker {sum(spent.values()) * tick_us / count:5.2f} us/msg"
            f" (busiest thread {busiest * tick_us / count:5.2f})"
        )


async def push(namesrv: str, count: int, batch: int, round_no: int = 0) -> float:
    got = 0
    first: float | None = None
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal got, first
        if first is None:
            BrokerCpu.start()
            first = time.process_time()
        for msg in msgs:
            _ = msg.body
        got += len(msgs)
        if got >= count:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        f"bench_cpu_push_{round_no}",  # a group per round: each round takes the whole backlog
        namesrv_addr=namesrv,
        consume_message_batch_max_size=batch,
        pull_batch_size=batch,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 300)
        assert first is not None
        return time.process_time() - first
    finally:
        await consumer.shutdown()


async def lite(namesrv: str, count: int, batch: int, round_no: int = 0) -> float:
    consumer = LitePullConsumer(
        f"bench_cpu_lite_{round_no}",
        namesrv_addr=namesrv,
        pull_batch_size=batch,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(TOPIC, "*")
    await consumer.start()
    try:
        got = 0
        first: float | None = None
        deadline = time.monotonic() + 300
        while got < count and time.monotonic() < deadline:
            msgs = await consumer.poll(3000)
            if msgs and first is None:
                BrokerCpu.start()
                first = time.process_time()
            for msg in msgs:
                _ = msg.body
            got += len(msgs)
        assert first is not None and got >= count, f"got {got} of {count}"
        return time.process_time() - first
    finally:
        await consumer.shutdown()


CONSUMERS = {"push": push, "lite": lite}


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-") as tmp:
        async with LocalCluster(tmp) as cluster:
            await backlog(cluster.namesrv_addr, args.count, args.size)
            if args.broker_cpu:
                BrokerCpu.pid = cluster.brokers[0].pid
                print(f"broker pid {BrokerCpu.pid}", flush=True)
            for round_no in range(args.rounds):
                for name in args.consumers.split(","):
                    run = CONSUMERS[name]
                    cpu = await run(cluster.namesrv_addr, args.count, args.pull_batch_size, round_no)
                    broker = BrokerCpu.report(args.count)
                    print(
                        f"{name:5} {args.count} msgs  cpu {cpu * 1e6 / args.count:6.1f} us/msg{broker}",
                        flush=True,
                    )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=50_000)
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--pull-batch-size", type=int, default=32, help="also the push listener's batch")
    p.add_argument("--consumers", default="push,lite", help="which consumers, in order: push, lite or both")
    p.add_argument(
        "--rounds", type=int, default=1, help="times each consumer takes the backlog (a new group each)"
    )
    p.add_argument("--broker-cpu", action="store_true", help="also the broker's CPU per message")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    args = p.parse_args()
    with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
        runner.run(main(args))
