"""`rocketq bench produce|consume|latency`: throughput and latency of a cluster through this SDK.

    rocketq bench produce --namesrv-addr 127.0.0.1:9876 --mode pipelined --inflight 256 --count 100000
    rocketq bench consume --namesrv-addr 127.0.0.1:9876 --count 100000
    rocketq bench latency --local --rate 2000 --duration-s 10

produce: `sync` (1 in flight), `pipelined` (--inflight sends outstanding) or `batch` (--batch messages per
request, --inflight batches outstanding). consume: a push consumer from the first offset. latency: a
producer paced at --rate and a consumer in the same process; latency = receive time - the send time
written into the body. Every run is bounded by --count and --duration-s; a progress line goes to stderr
each second and one summary line (or JSON with --json) to stdout. --local starts a throw-away
NameServer and broker (subprocesses) for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rocketq.client.admin import Admin
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.consumer.push import PushConsumer
from rocketq.client.model import ConsumeResult
from rocketq.client.producer.producer import Producer
from rocketq.common.message import Message, MessageExt

HEADER = struct.Struct(">qq")  # send time (monotonic ns), sequence


def percentiles(values_ns: list[int]) -> dict[str, float]:
    if not values_ns:
        return {}
    v = sorted(values_ns)

    def pct(q: float) -> float:
        return v[max(0, min(len(v) - 1, math.ceil(q * len(v)) - 1))] / 1000

    return {
        "p50_us": pct(0.5),
        "p90_us": pct(0.9),
        "p99_us": pct(0.99),
        "p999_us": pct(0.999),
        "max_us": v[-1] / 1000,
    }


def body_of(seq: int, pad: bytes) -> bytes:
    return HEADER.pack(time.monotonic_ns(), seq) + pad


class Progress:
    """Prints `what: n (rate/s)` to stderr at most once a second."""

    def __init__(self, what: str, quiet: bool) -> None:
        self.what, self.quiet = what, quiet
        self.start = self.last = time.monotonic()
        self.last_n = 0

    def tick(self, n: int) -> None:
        now = time.monotonic()
        if self.quiet or now - self.last < 1.0:
            return
        rate = (n - self.last_n) / (now - self.last)
        print(f"\r{self.what}: {n:,} ({rate:,.0f}/s)   ", end="", file=sys.stderr, flush=True)
        self.last, self.last_n = now, n

    def done(self) -> None:
        if not self.quiet:
            print(file=sys.stderr)


def security_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """ACL credentials and TLS of the run (docs/security.md), as client keyword arguments."""
    return {
        "access_key": args.access_key,
        "secret_key": args.secret_key,
        "use_tls": args.use_tls,
        "tls_ca_file": args.tls_ca_file,
    }


async def produce(args: argparse.Namespace) -> dict[str, Any]:
    pad = b"x" * max(0, args.size - HEADER.size)
    latencies: list[int] = []
    deadline = time.monotonic() + args.duration_s
    progress = Progress(f"produce/{args.mode}", args.quiet)
    sent = 0
    async with Producer(
        args.group or "bench_producer",
        namesrv_addr=args.namesrv_addr,
        header_codec=args.header_codec,
        **security_kwargs(args),
    ) as producer:
        await producer.send(Message(args.topic, body_of(-1, pad)))  # route + connection warm-up
        started = time.monotonic()

        async def worker(per_request: int) -> None:
            nonlocal sent
            while sent < args.count and time.monotonic() < deadline:
                n = min(per_request, args.count - sent)
                sent += n
                t0 = time.perf_counter_ns()
                if per_request == 1:
                    await producer.send(Message(args.topic, body_of(sent, pad)))
                else:
                    await producer.send_batch([Message(args.topic, body_of(sent + i, pad)) for i in range(n)])
                latencies.append(time.perf_counter_ns() - t0)
                progress.tick(sent)

        inflight = 1 if args.mode == "sync" else args.inflight
        per_request = args.batch if args.mode == "batch" else 1
        await asyncio.gather(*(worker(per_request) for _ in range(inflight)))
        elapsed = time.monotonic() - started
    progress.done()
    return {
        "mode": args.mode,
        "messages": sent,
        "seconds": round(elapsed, 3),
        "msgs_per_s": round(sent / elapsed),
        "mb_per_s": round(sent * args.size / elapsed / 1e6, 2),
        "request_latency": percentiles(latencies),
    }


async def consume(args: argparse.Namespace) -> dict[str, Any]:
    got = 0
    done = asyncio.Event()
    progress = Progress("consume", args.quiet)

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal got
        got += len(msgs)
        progress.tick(got)
        if got >= args.count:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        args.group or "bench_consumer",
        namesrv_addr=args.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        header_codec=args.header_codec,
        consume_message_batch_max_size=args.batch,
        **security_kwargs(args),
    )
    consumer.subscribe(args.topic, "*")
    consumer.register_listener(listener)
    started = time.monotonic()
    async with consumer:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), args.duration_s)
        elapsed = time.monotonic() - started
    progress.done()
    return {"messages": got, "seconds": round(elapsed, 3), "msgs_per_s": round(got / elapsed)}


async def latency(args: argparse.Namespace) -> dict[str, Any]:
    pad = b"x" * max(0, args.size - HEADER.size)
    e2e: list[int] = []
    total = int(min(args.count, args.rate * args.duration_s))
    all_in = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        now = time.monotonic_ns()
        for m in msgs:
            sent_ns, seq = HEADER.unpack_from(m.body)
            if seq >= 0:
                e2e.append(now - sent_ns)
        if len(e2e) >= total:
            all_in.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        args.group or "bench_latency",
        namesrv_addr=args.namesrv_addr,
        header_codec=args.header_codec,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    )
    consumer.subscribe(args.topic, "*")
    consumer.register_listener(listener)
    async with Producer(
        "bench_latency_producer", namesrv_addr=args.namesrv_addr, header_codec=args.header_codec
    ) as producer:
        await producer.send(Message(args.topic, body_of(-1, pad)))
        async with consumer:
            await asyncio.sleep(1.0)  # let the consumer take its queues before timing starts
            started = time.monotonic()
            sem = asyncio.Semaphore(256)
            tasks = []
            for seq in range(total):
                delay = started + seq / args.rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(max(delay, 0.001))
                await sem.acquire()
                task = asyncio.ensure_future(producer.send(Message(args.topic, body_of(seq, pad))))
                task.add_done_callback(lambda _t: sem.release())
                tasks.append(task)
            await asyncio.gather(*tasks)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_in.wait(), 10)
    warm = int(args.rate * 0.5)
    return {
        "sent": total,
        "received": len(e2e),
        "rate": args.rate,
        "e2e_latency": percentiles(e2e[warm:] or e2e),
    }


# `rocketq cluster up` (the console command, run as `python -m rocketq`) prints this once its NameServer
# and broker are ready. The SDK starts the cluster through that command rather than importing the
# test harness behind it, so the client package depends on no test code.
_CLUSTER_READY = "READY cluster namesrv="
_CLUSTER_START_S = 60.0
_CLUSTER_STOP_S = 30.0


def _tail(path: Path, lines: int = 10) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-lines:])


def _wait_ready(proc: subprocess.Popen[bytes], out: Path, err: Path) -> str:
    """The NameServer address from the READY line of `rocketq cluster up` (its stdout, a file: polled)."""
    deadline = time.monotonic() + _CLUSTER_START_S
    while time.monotonic() < deadline:
        for line in out.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(_CLUSTER_READY):
                return line[len(_CLUSTER_READY) :].split()[0]
        if proc.poll() is not None:
            raise RuntimeError(f"the local cluster exited with {proc.returncode}:\n{_tail(err)}")
        time.sleep(0.05)
    raise RuntimeError(f"the local cluster was not ready after {_CLUSTER_START_S:.0f}s:\n{_tail(err)}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the command stops its broker and NameServer cleanly), SIGKILL after a bound."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(_CLUSTER_STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def _local_cluster(args: argparse.Namespace) -> Iterator[None]:
    """With --local: a throw-away NameServer and broker for the run (before the event loop starts)."""
    if not args.local:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-") as tmp:
        out, err = Path(tmp, "cluster.out"), Path(tmp, "cluster.err")
        argv = [
            sys.executable,
            "-m",
            "rocketq",
            "cluster",
            "up",
            "--namesrv-port",
            "0",
            "--dir",
            str(Path(tmp, "data")),
        ]
        with open(out, "wb") as out_file, open(err, "wb") as err_file:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_file, stderr=err_file)
        try:
            args.namesrv_addr = _wait_ready(proc, out, err)
            yield
        finally:
            _stop(proc)


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    if args.local:
        async with Admin(namesrv_addr=args.namesrv_addr) as admin:
            await admin.create_topic(args.topic, read_queues=8, write_queues=8)
    if args.command == "produce":
        return await produce(args)
    if args.command == "consume":
        return await consume(args)
    return await latency(args)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rocketq bench", description="Benchmark a cluster through the Python SDK."
    )
    p.add_argument("command", choices=["produce", "consume", "latency"])
    p.add_argument("--namesrv-addr", default="127.0.0.1:9876")
    p.add_argument(
        "--local", action="store_true", help="start a throw-away NameServer and broker for this run"
    )
    p.add_argument("--topic", default="BenchTopic")
    p.add_argument("--group", default="")
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--count", type=int, default=100_000, help="messages at most")
    p.add_argument("--duration-s", type=float, default=60.0, help="seconds at most")
    p.add_argument("--mode", choices=["sync", "pipelined", "batch"], default="pipelined")
    p.add_argument("--inflight", type=int, default=256, help="requests in flight (pipelined / batch)")
    p.add_argument(
        "--batch", type=int, default=100, help="messages per batch (produce) or per listener call (consume)"
    )
    p.add_argument("--rate", type=float, default=2000, help="latency: messages per second")
    p.add_argument("--header-codec", choices=["auto", "json", "msgpack", "rocketmq"], default="auto")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--access-key", help="ACL access key to sign requests with")
    p.add_argument("--secret-key", help="ACL secret key")
    p.add_argument("--use-tls", action="store_true", help="connect with TLS")
    p.add_argument("--tls-ca-file", help="CA the servers' certificates must chain to")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "consume" and args.batch == 100:
        args.batch = 1
    try:
        from rocketq.remoting.transport.loops import run as run_on_loop

        with _local_cluster(args):
            summary = run_on_loop(_main(args), "auto")
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one clear line, not a traceback
        print(f"rocketq bench {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"command": args.command, **summary}))
    else:
        print(f"{args.command}: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
