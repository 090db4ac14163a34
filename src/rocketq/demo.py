"""`make run`: start a local NameServer and broker on the default store and show messages going through.

What a new user does by hand, in one script: `rocketq namesrv`, `rocketq broker` (default ports 9876 and
10911, store, NameServer files and logs under run-data/), a Producer sending tagged messages, a PushConsumer receiving them,
a look-up by key through the index, then a clean stop (SIGTERM) of both daemons. `--keep-running` leaves
the daemons up until Ctrl-C so other scripts (examples/, `rocketq admin`) can use them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

TOPIC = "DemoTopic"
GROUP = "demo_consumer_group"


class Daemon:
    """One `rocketq <role>` child process, ready once it printed its READY line."""

    def __init__(self, role: str, args: list[str]) -> None:
        self.role = role
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketq", role, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.addr = ""

    def wait_ready(self, timeout_s: float = 30.0) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("READY "):
                self.addr = line.split()[-1]
                return self.addr
            if not line and self.proc.poll() is not None:
                break
        err = self.proc.stderr.read() if self.proc.stderr and self.proc.poll() is not None else ""
        tail = "\n".join(err.strip().splitlines()[-5:])
        raise SystemExit(f"rocketq {self.role} did not become ready:\n{tail}")

    def stop(self, timeout_s: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


async def exchange(namesrv: str, count: int) -> None:
    from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer

    run_id = uuid.uuid4().hex[:8]
    wanted = {f"{run_id}-{i}" for i in range(count)}
    got: set[str] = set()
    done = asyncio.Event()

    def on_messages(msgs: list) -> ConsumeResult:  # type: ignore[type-arg]
        for m in msgs:
            key = m.keys[0] if m.keys else ""
            if key in wanted and key not in got:
                got.add(key)
                # one write per line: listeners run on several consume threads at once
                sys.stdout.write(
                    f"  received {m.body.decode()!r:38} tags={m.tags} queue={m.queue_id} "
                    f"offset={m.queue_offset}\n"
                )
        if got >= wanted:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        GROUP, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(TOPIC, "TagA || TagB")
    consumer.register_listener(on_messages)
    async with Producer("demo_producer_group", namesrv_addr=namesrv) as producer, consumer:
        print(f"sending {count} messages to {TOPIC} (run {run_id})")
        started = time.monotonic()
        for i in range(count):
            tag = "TagA" if i % 2 == 0 else "TagB"
            msg = Message(
                TOPIC, f"hello rocketq #{i} from run {run_id}".encode(), tags=tag, keys=[f"{run_id}-{i}"]
            )
            result = await producer.send(msg)
            print(
                f"  sent     msg_id={result.msg_id} status={result.status.name} queue={result.queue.queue_id} "
                f"offset={result.queue_offset}"
            )
        await asyncio.wait_for(done.wait(), 60)
        print(f"all {count} messages consumed in {time.monotonic() - started:.2f}s")
    async with Admin(namesrv_addr=namesrv) as admin:
        found = await admin.query_message_by_key(TOPIC, f"{run_id}-0", max_num=4)
        print(f"query by key {run_id}-0 -> {[m.body.decode() for m in found]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocketq.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv-port", type=int, default=9876)
    parser.add_argument("--broker-port", type=int, default=10911)
    parser.add_argument(
        "--data-dir",
        default="run-data",
        help="where the daemons keep their files: store/, namesrv/, logs/ (default: run-data)",
    )
    parser.add_argument("--count", type=int, default=10, help="messages to send")
    parser.add_argument("--keep-running", action="store_true", help="leave the daemons up until Ctrl-C")
    args = parser.parse_args(argv)

    data = Path(args.data_dir).absolute()
    store = str(data / "store")
    namesrv = Daemon(
        "namesrv",
        [
            "--listen-port",
            str(args.namesrv_port),
            "--log-dir",
            str(data / "logs"),
            "--kv-config-path",
            str(data / "namesrv" / "kvConfig.json"),
        ],
    )
    broker: Daemon | None = None
    try:
        ns_addr = namesrv.wait_ready()
        print(f"NameServer ready on {ns_addr}")
        broker = Daemon(
            "broker",
            [
                "--namesrv-addr",
                ns_addr,
                "--listen-port",
                str(args.broker_port),
                "--store-path-root-dir",
                store,
            ],
        )
        print(f"broker ready on {broker.wait_ready()} (store {store})")
        asyncio.run(exchange(ns_addr, args.count))
        if args.keep_running:
            print(f"daemons running: NameServer {ns_addr}, broker {broker.addr}; Ctrl-C stops them")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause() if hasattr(signal, "pause") else time.sleep(1e9)
    finally:
        codes = [d.stop() for d in (broker, namesrv) if d is not None]
        print(f"daemons stopped (exit codes {codes})")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
