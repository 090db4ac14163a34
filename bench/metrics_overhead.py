"""Broker CPU per message with Prometheus metrics off and on, measured in one run.

Starts one NameServer and three brokers (rocketq.testing.LocalCluster): two with metrics off (the
second one is a control: the difference between the two "off" brokers is the noise of the machine)
and one with metricsExporterType=PROM, each the only host of its topic. The same pipelined send load
goes to each in turn, round after round, so all see the same machine noise; each broker's CPU time is
read from /proc/<pid>/stat (Linux) around every round. The PROM broker is scraped between rounds, its
CPU for that measured apart (a scrape is a cost per scrape interval, not per message). Prints CPU
microseconds per message for each, the differences in percent, and the CPU of one scrape.

    .venv/bin/python bench/metrics_overhead.py --count 5000 --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import urllib.request
from pathlib import Path

from rocketq.client import Admin, Message, Producer
from rocketq.testing.cluster import LocalCluster


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


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
            cpu = {"off": 0.0, "control": 0.0, "on": 0.0}
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
                    shift = round_no % len(order)  # each broker takes each place in the rounds in turn
                    for name, broker, topic in order[shift:] + order[:shift]:
                        before = cpu_seconds(broker.pid)
                        started = time.monotonic()
                        await send_round(producer, topic, args.count, args.inflight)
                        cpu[name] += cpu_seconds(broker.pid) - before
                        print(f"{name:7s} {args.count} msgs in {time.monotonic() - started:.2f}s", flush=True)
                    # A scrape, as Prometheus does every scrape_interval: measured apart from the sends.
                    before = cpu_seconds(on.pid)
                    for _ in range(10):
                        await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
                    scrape_cpu += (cpu_seconds(on.pid) - before) / 10
    total = args.count * args.rounds
    per = {name: seconds / total * 1e6 for name, seconds in cpu.items()}
    off_mean = (per["off"] + per["control"]) / 2
    print(
        f"broker CPU per message: metrics off {per['off']:.1f} us and {per['control']:.1f} us "
        f"(noise {100 * (per['control'] - per['off']) / per['off']:+.1f} %), on {per['on']:.1f} us: "
        f"overhead {100 * (per['on'] - off_mean) / off_mean:+.1f} % against the mean of the two; "
        f"one scrape costs the broker {scrape_cpu / args.rounds * 1000:.1f} ms of CPU"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="messages per round and broker")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument(
        "--prom-index",
        type=int,
        default=2,
        choices=[0, 1, 2],
        help="which of the three brokers (in start order) has metrics on",
    )
    asyncio.run(main(parser.parse_args()))
