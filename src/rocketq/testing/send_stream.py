"""A steady stream of sends through the SDK Producer, and reading a topic back from its first offset.

`SendStream` runs `concurrency` sender tasks on the test's loop; each sends `make_body` bodies with
increasing sequence numbers and records every outcome in a Ledger (an acknowledgement with its broker,
queue and offset, or the exception). A failed send backs off briefly, so a dead broker does not turn
the stream into a busy loop. `AttemptLog` records the broker of every send attempt, retries included,
by wrapping the producer's queue selection (the fault strategy picks one queue per attempt).
`read_back` consumes every queue of a topic from its first offset with a LitePullConsumer and returns
position -> body.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

from rocketq.client import Admin, LitePullConsumer, Message, MessageQueue, Producer
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.model import SendStatus
from rocketq.client.route import to_subscribe_queues
from rocketq.common.service import ServiceState, spawn
from rocketq.testing.ledger import Ledger, Position, make_body

FAILURE_BACKOFF_S = 0.02


class SendStream:
    """Sender tasks feeding a Ledger until `stop()`; `cycle` labels what is sent from now on.

    Args:
        producer: a started Producer.
        topic: where to send.
        ledger: where outcomes go.
        concurrency: sends in flight at a time.
        body_size: average body size (make_body varies it).
        max_messages: stop after this many sends in total (a bound for every test).
        pace_s: pause of each sender between sends (0: as fast as the broker answers).
    """

    def __init__(
        self,
        producer: Producer,
        topic: str,
        ledger: Ledger,
        *,
        concurrency: int = 8,
        body_size: int = 200,
        max_messages: int = 1_000_000,
        pace_s: float = 0.0,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.ledger = ledger
        self.concurrency = concurrency
        self.body_size = body_size
        self.max_messages = max_messages
        self.pace_s = pace_s
        self.cycle = 0
        self._seqs = itertools.count()
        self._tasks: list[asyncio.Task[None]] = []
        # Not a Service: start() is synchronous and may follow stop() (a test pauses and resumes its
        # load), which ServiceState models as SHUTDOWN_ALREADY -> RUNNING for this test-only helper.
        self._state = ServiceState.CREATE_JUST
        self._progress = asyncio.Event()
        self.last_ack_time = 0.0

    @property
    def running(self) -> bool:
        return bool(self._tasks) and self._state is ServiceState.RUNNING

    def start(self) -> None:
        self._state = ServiceState.RUNNING
        self._tasks = [spawn(f"send-stream-{i}", self._sender()) for i in range(self.concurrency)]

    async def stop(self) -> None:
        """Let the sends in flight finish (each is bounded by the producer's timeout), start no more."""
        self._state = ServiceState.STOPPING
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self._state = ServiceState.SHUTDOWN_ALREADY

    async def _sender(self) -> None:
        ledger = self.ledger
        while self._state is ServiceState.RUNNING:
            seq = next(self._seqs)
            if seq >= self.max_messages:
                return
            cycle = self.cycle
            body = make_body(seq, cycle, self.body_size)
            ledger.sent[cycle] += 1
            try:
                result = await self.producer.send(Message(self.topic, body))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # every failure is an outcome to record, not a test error
                ledger.record_failure(seq, cycle, exc)
                await asyncio.sleep(FAILURE_BACKOFF_S)
                continue
            if result.status is SendStatus.SEND_OK:
                ledger.record_ack(
                    seq, cycle, (result.queue.broker_name, result.queue.queue_id, result.queue_offset), body
                )
                self.last_ack_time = time.monotonic()
                self._progress.set()
            else:
                ledger.record_failure(seq, cycle, RuntimeError(result.status.name))
            if self.pace_s:
                await asyncio.sleep(self.pace_s)

    async def wait_acked(self, count: int, timeout_s: float, *, cycle: int | None = None) -> None:
        """Until `count` sends of `cycle` (default: any) were acknowledged; TimeoutError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s

        def reached() -> bool:
            if cycle is None:
                return self.ledger.acked_count >= count
            return sum(1 for a in self.ledger.acks.values() if a.cycle == cycle) >= count

        while not reached():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._tasks:
                raise TimeoutError(
                    f"{count} acknowledgements (cycle {cycle}) did not come within {timeout_s:.0f}s"
                )
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), min(remaining, 0.5))


class AttemptLog:
    """(monotonic time, broker name) of every send attempt of `producer`, retries included.

    Wraps `producer.fault_strategy.select_one_message_queue`, which the producer calls once per
    attempt; `close()` restores it.
    """

    def __init__(self, producer: Producer) -> None:
        self.attempts: list[tuple[float, str]] = []
        self._strategy = producer.fault_strategy
        self._original: Callable[..., MessageQueue] = self._strategy.select_one_message_queue

        def recording(*args: Any, **kwargs: Any) -> MessageQueue:
            mq = self._original(*args, **kwargs)
            self.attempts.append((time.monotonic(), mq.broker_name))
            return mq

        self._strategy.select_one_message_queue = recording  # type: ignore[method-assign]

    def close(self) -> None:
        self._strategy.select_one_message_queue = self._original  # type: ignore[method-assign]

    def last_to(self, broker: str, since: float = 0.0) -> float | None:
        """Time of the last attempt to `broker` at or after `since`."""
        times = [t for t, b in self.attempts if b == broker and t >= since]
        return max(times) if times else None

    def first_to(self, broker: str, since: float) -> float | None:
        return next((t for t, b in self.attempts if b == broker and t >= since), None)

    def count_to(self, broker: str, since: float = 0.0, until: float = float("inf")) -> int:
        return sum(1 for t, b in self.attempts if b == broker and since <= t < until)


async def queue_ends(namesrv_addr: str, topic: str) -> dict[MessageQueue, int]:
    """Every readable queue of `topic` with its max offset (the end a read-back must reach)."""
    async with Admin(namesrv_addr=namesrv_addr, instance_name=f"ends-{time.monotonic_ns()}") as admin:
        status = await admin.topic_status(topic)
    return {mq: offsets.max_offset for mq, offsets in status.items()}


async def read_back(
    namesrv_addr: str, topic: str, group: str, *, timeout_s: float = 60.0, **settings: Any
) -> dict[Position, bytes]:
    """Every message of every queue of `topic`, from the first offset to the end at call time.

    A LitePullConsumer of a fresh `group` is assigned all queues; AssertionError names the queues
    that did not reach their end within `timeout_s`.
    """
    ends = await queue_ends(namesrv_addr, topic)
    async with Admin(namesrv_addr=namesrv_addr, instance_name=f"route-{time.monotonic_ns()}") as admin:
        route = await admin.topic_route(topic)
    queues = sorted(to_subscribe_queues(topic, route))
    consumer = LitePullConsumer(
        group,
        namesrv_addr=namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_batch_size=settings.pop("pull_batch_size", 256),
        instance_name=f"readback-{group}",
        **settings,
    )
    consumer.assign(queues)
    got: dict[Position, bytes] = {}
    reached: dict[MessageQueue, int] = dict.fromkeys(queues, 0)
    deadline = time.monotonic() + timeout_s
    await consumer.start()
    try:
        while any(reached[mq] < ends.get(mq, 0) for mq in queues):
            if time.monotonic() >= deadline:
                behind = {
                    str(mq): (reached[mq], ends.get(mq, 0)) for mq in queues if reached[mq] < ends.get(mq, 0)
                }
                raise AssertionError(f"read-back of {topic} stopped short (queue: (reached, end)): {behind}")
            for msg in await consumer.poll(timeout_ms=500):
                mq = MessageQueue(msg.topic, msg.broker_name, msg.queue_id)
                got[(msg.broker_name, msg.queue_id, msg.queue_offset)] = msg.body
                if mq in reached:
                    reached[mq] = max(reached[mq], msg.queue_offset + 1)
    finally:
        await consumer.shutdown()
    return got
