"""RawSender: pipelined SEND_MESSAGE_V2 requests over one RawConnection, every answer kept.

Fault tests that need a broker's own answers (codes and remarks, not an SDK's exceptions and retries)
send through this: `window` sends in flight, round-robin over the queues, each body naming its sequence
number, acknowledged bodies kept by (queue, offset) for a byte-exact read-back.
"""

from __future__ import annotations

import asyncio
import time

from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.testing.broker_probe import send_request
from rocketq.testing.wire import RawConnection


class RawSender:
    def __init__(
        self, conn: RawConnection, topic: str, queues: int, *, body_size: int = 4096, keyed: bool = True
    ) -> None:
        self.conn = conn
        self.topic = topic
        self.queues = queues
        self.body_size = body_size
        self.keyed = keyed
        self.acked: dict[tuple[int, int], bytes] = {}  # (queue id, queue offset) -> body
        self.acked_at: dict[tuple[int, int], float] = {}  # (queue id, queue offset) -> time.monotonic()
        self.refusals: list[RemotingCommand] = []
        self.seq = 0

    def body(self, seq: int) -> bytes:
        stamp = b"%08d-" % seq
        return (stamp * (self.body_size // len(stamp) + 1))[: self.body_size]

    async def send_one(self) -> RemotingCommand:
        """One send; its answer (kept in `acked` or `refusals`)."""
        self.seq += 1
        seq = self.seq
        body = self.body(seq)
        properties = {"KEYS": f"key-{seq}"} if self.keyed else {}
        request = send_request(self.topic, body, properties, queue_id=seq % self.queues)
        response = await self.conn.request(request, 30)
        if response.code == ResponseCode.SUCCESS:
            ext = response.ext_fields or {}
            key = (int(ext["queueId"]), int(ext["queueOffset"]))
            self.acked[key] = body
            self.acked_at[key] = time.monotonic()
        else:
            self.refusals.append(response)
        return response

    async def send(
        self, count: int, *, window: int = 32, timeout_s: float = 120, until_refused: bool = False
    ) -> int:
        """Up to `count` sends, `window` at a time, within `timeout_s` (stopping at the first refusal with
        `until_refused`); returns how many were sent."""
        deadline = time.monotonic() + timeout_s
        sent = 0
        while sent < count and time.monotonic() < deadline and not (until_refused and self.refusals):
            batch = min(window, count - sent)
            await asyncio.gather(*(self.send_one() for _ in range(batch)))
            sent += batch
        return sent
