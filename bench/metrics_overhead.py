"""Broker CPU per message with Prometheus metrics off and on, measured in one run.

Starts one NameServer and three brokers (rocketq.testing.LocalCluster): two with metrics off (the
second one is a control: the difference between the two "off" brokers is the noise of the machine)
and one with metricsExporterType=PROM, each the only host of its topic. In each round the same
pipelined send load goes to the three at once, so all work through the same seconds of a shared
machine (--in-turn: one after the other, each taking each place in turn); each broker's CPU time is
read from /proc/<pid>/task/*/schedstat (Linux, in nanoseconds: /proc/<pid>/stat counts 10 ms ticks,
a tenth of a round's figure) around every round. The PROM broker is scraped between rounds, its CPU
for that measured apart (a scrape is a cost per scrape interval, not per message). Before each round
the three brokers' idle CPU is sampled together over IDLE_SAMPLE_S and taken off each send at that
rate (background work costs by the second, not by the message, as bench/security.py does). Prints,
per broker, CPU microseconds per message as the median and the min..max over the rounds, the
overhead of each round (on against the mean of the two off brokers in the same round) as its median
and min..max, and the CPU of one scrape. bench/metrics_hot_path.py measures the same cost in one
process, without sockets, and can count its instructions.

    .venv/bin/python bench/metrics_overhead.py --count 5000 --rounds 20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from rocketq.client import Admin, Message, Producer
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.procinfo import cpu_ns

IDLE_SAMPLE_S = 1.0


def cpu_seconds(pid: int) -> float:
    return cpu_ns(pid) / 1e9


async def send_round(producer: Producer, topic: str, count: int, inflight: int) -> None:
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while sent < count:
            sent += 1
            await producer.send(Message(topic, b"x" * 128))

    await asyncio.gather(*(worker() for _ in range(inflight)))


async def main(args: argparse.Namespace) -> None:
    prom = {"metricsExporterType": "PROM", "metricsPromExporterPort": 0}
    with tempfile.TemporaryDirectory() as tmp:
        overrides: list[dict[str, object]] = [{}, {}, {}]
        overrides[args.prom_index] = prom
        async with LocalCluster(Path(tmp), broker_count=3, broker_overrides=overrides) as cluster:
            on = cluster.brokers[args.prom_index]
            off, control = (b for i, b in enumerate(cluster.brokers) if i != args.prom_index)
            metrics_line = next(line for line in on.stdout_text().splitlines() if line.startswith("METRICS"))
            url = f"http://{metrics_line.split()[2]}/metrics"
            async with Admin(namesrv_addr=cluster.namesrv_addr) as admin:
                await admin.create_topic("BenchOff", broker_addr=off.addr)
                await admin.create_topic("BenchControl", broker_addr=control.addr)
                await admin.create_topic("BenchOn", broker_addr=on.addr)
            per_round: dict[str, list[float]] = {"off": [], "control": [], "on": []}
            scrape_cpu = 0.0
            async with Producer("bench-metrics", namesrv_addr=cluster.namesrv_addr) as producer:
                for topic in ("BenchOff", "BenchControl", "BenchOn"):  # warm-up: routes, connections
                    await send_round(producer, topic, 200, args.inflight)
                order = [
                    ("off", off, "BenchOff"),
                    ("control", control, "BenchControl"),
                    ("on", on, "BenchOn"),
                ]
                for round_no in range(args.rounds):
                    idle_before = {name: cpu_seconds(broker.pid) for name, broker, _ in order}
                    await asyncio.sleep(IDLE_SAMPLE_S)
                    idle = {n: (cpu_seconds(b.pid) - idle_before[n]) / IDLE_SAMPLE_S for n, b, _ in order}
                    shift = round_no % len(order)  # in turn: each broker takes each place in turn
                    groups = [order] if args.at_once else [[step] for step in order[shift:] + order[:shift]]
                    for group in groups:
                        before = {name: cpu_seconds(broker.pid) for name, broker, _ in group}
                        started = time.monotonic()
                        await asyncio.gather(
                            *(send_round(producer, topic, args.count, args.inflight) for _, _, topic in group)
                        )
                        took = time.monotonic() - started
                        for name, broker, _ in group:
                            used = max(cpu_seconds(broker.pid) - before[name] - idle[name] * took, 0.0)
                            per_round[name].append(used / args.count * 1e6)
                        print(
                            f"round {round_no}: {args.count} msgs to each in {took:.2f}s, us CPU per message "
                            + ", ".join(
                                f"{n} {per_round[n][-1]:.1f} (idle {idle[n] * 1e3:.1f} ms/s)"
                                for n, _, _ in group
                            ),
                            flush=True,
                        )
                    # A scrape, as Prometheus does every scrape_interval: measured apart from the sends.
                    before = cpu_seconds(on.pid)
                    for _ in range(10):
                        await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
                    scrape_cpu += (cpu_seconds(on.pid) - before) / 10
    overheads = [
        100 * (on_us - (off_us + control_us) / 2) / ((off_us + control_us) / 2)
        for off_us, control_us, on_us in zip(
            per_round["off"], per_round["control"], per_round["on"], strict=True
        )
    ]
    med = {name: statistics.median(values) for name, values in per_round.items()}
    for name, values in per_round.items():
        print(
            f"broker CPU per message, {name:7s}: median {med[name]:.1f} us, {min(values):.1f}..{max(values):.1f}"
        )
    off_mean = (med["off"] + med["control"]) / 2
    print(
        f"noise (control against off, medians) {100 * (med['control'] - med['off']) / med['off']:+.1f} %; "
        f"overhead of metrics on: medians {100 * (med['on'] - off_mean) / off_mean:+.1f} %, per round median "
        f"{statistics.median(overheads):+.1f} %, {min(overheads):+.1f}..{max(overheads):+.1f} %; "
        f"one scrape costs the broker {scrape_cpu / args.rounds * 1000:.1f} ms of CPU; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="messages per round and broker")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument(
        "--in-turn",
        dest="at_once",
        action="store_false",
        help="send to one broker after the other in each round (by default all three at once)",
    )
    parser.add_argument(
        "--prom-index",
        type=int,
        default=2,
        choices=[0, 1, 2],
        help="which of the three brokers (in start order) has metrics on",
    )
    asyncio.run(main(parser.parse_args()))
