"""SDK CPU per send: Producer.send pipelined against a real broker, or against canned answers.

    .venv/bin/python bench/send_cpu.py                          # throw-away NameServer + broker, 256 in flight
    .venv/bin/python bench/send_cpu.py --canned --count 20000   # no network: producer, API and header codecs only
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/send_cpu.py --canned --count 2000
    .venv/bin/python bench/send_cpu.py --canned --header-codec msgpack   # requests as after the msgpack agreement
    .venv/bin/python bench/send_cpu.py --canned --sign          # ACL: every request signed (AclClientRPCHook)
    # ... and again with --count 6000: (difference of the two "I refs") / 4000 = instructions per send

The peers harness measures the SDK's pipelined send with the harness's own loop around it; this one times
the send alone. "cpu us" is this process's CPU time (time.process_time) per send, best of `--rounds`; the
broker runs in its own processes. With `--canned` the route comes from the real cluster, then the
transport is replaced by one that encodes each request frame and answers it with one pre-encoded
SEND_OK frame, decoded anew each time (what the real transport does with a broker's answer, without the
socket): the figure is then the SDK's own work per send, steady enough on a busy machine to compare two
trees, and deterministic as an instruction count under callgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from typing import Any

from rocketq.client import Admin, Message, Producer
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame
from rocketq.remoting.transport.loops import loop_factory
from rocketq.testing.cluster import LocalCluster

TOPIC = "bench_send_cpu"
ANSWER = RemotingCommand(
    0,
    flag=1,
    serialize_type=SerializeType.MSGPACK,
    ext_fields={
        "msgId": "7F00000100002A9F0000000000000000",
        "queueId": "1",
        "queueOffset": "123",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    },
)


class CannedTransport:
    """Encodes each request frame and answers it with ANSWER's frame, decoded (RemotingClient's interface)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.frame = encode_frame(ANSWER)[4:]

    def _answer(self, cmd: RemotingCommand) -> RemotingCommand:
        for hook in self.real.rpc_hooks:  # ACL's signing (--sign), as the real transport's _send_sync
            hook.do_before_request("127.0.0.1:0", cmd)
        encode_frame(cmd)
        answer = decode_frame_payload(self.frame)
        answer.opaque = cmd.opaque
        return answer

    async def invoke_sync(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        return self._answer(cmd)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> None:
        encode_frame(cmd)

    def start_sync(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand]:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(self._answer(cmd))
        return fut


async def pipelined(producer: Producer, count: int, inflight: int, body: bytes) -> None:
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while sent < count:
            sent += 1
            await producer.send(Message(TOPIC, body))

    await asyncio.gather(*(worker() for _ in range(inflight)))


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-") as tmp:
        async with LocalCluster(tmp) as cluster:
            async with Admin(namesrv_addr=cluster.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, read_queues=8, write_queues=8)
            # --sign: credentials make the producer sign every request; the broker (ACL off) ignores them
            credentials = {"access_key": "benchUser", "secret_key": "benchUserSecret"} if args.sign else {}
            async with Producer(
                "bench_send_cpu", namesrv_addr=cluster.namesrv_addr, **credentials
            ) as producer:
                body = b"x" * args.size
                await producer.send(Message(TOPIC, body))  # the route and the connection
                inflight = args.inflight
                if args.canned:
                    api = producer._running().api
                    api.transport = CannedTransport(api.transport)
                    if args.header_codec == "msgpack":  # what a connection to our broker agrees on
                        api.serialize_type = SerializeType.MSGPACK
                    inflight = 1  # answers are there at once: one sender is a closed loop
                best = float("inf")
                for _ in range(args.rounds):
                    started = time.process_time()
                    await pipelined(producer, args.count, inflight, body)
                    best = min(best, (time.process_time() - started) * 1e6 / args.count)
                what = "canned answers" if args.canned else f"{inflight} in flight"
                print(f"send, {what}: {args.count} x {args.rounds} rounds, best cpu {best:6.2f} us/send "
                      f"(load average {os.getloadavg()[0]:.1f})")  # fmt: skip


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=20_000, help="sends per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--inflight", type=int, default=256)
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--canned", action="store_true", help="answer from a canned frame instead of the broker")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    p.add_argument(
        "--header-codec", choices=["json", "msgpack"], default="json",
        help="--canned: the requests' header codec (json, as to Apache's broker; msgpack, as to ours)",
    )  # fmt: skip
    p.add_argument("--sign", action="store_true", help="sign every request (ACL credentials)")
    args = p.parse_args()
    with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
        runner.run(main(args))
