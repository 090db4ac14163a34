"""AsyncTraceDispatcher: collects trace contexts and writes them to the trace topic in the background.

Port of org.apache.rocketmq.client.trace.AsyncTraceDispatcher (4.9.8): a bounded queue (2048
contexts; when full a context is dropped and counted, never waited for), a worker that takes up to 100
contexts or whatever arrived within 100 ms, encodes them (TraceDataEncoder), packs records into
messages of at most 128 000 bytes and sends each through its own inner producer (group
`_INNER_TRACE_PRODUCER-<group>-<type>-<n>`, instance PID_CLIENT_INNER_TRACE_PRODUCER, as Java's) to
RMQ_SYS_TRACE_TOPIC or the customised trace topic. The business send or consume never waits for any
of this and never sees its errors: a failed trace send is logged (once per run of failures) and
dropped, as Java's callback does.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from rocketq.client.trace.encoder import TraceContext, encode
from rocketq.common import constants as C
from rocketq.common.message import Message
from rocketq.common.service import PeriodicService

log = logging.getLogger("rocketq.client.trace")

QUEUE_SIZE = 2048
BATCH_SIZE = 100
MAX_MSG_SIZE = 128_000
POLLING_TIME_S = 0.1
GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"
_COUNTER = itertools.count(1)


class AsyncTraceDispatcher:
    """`append(ctx)` from the hooks; `start()` / `shutdown()` with the producer or consumer that owns it."""

    def __init__(
        self,
        group: str,
        kind: str,
        trace_topic: str | None,
        producer_factory: Callable[[str], Any],
    ) -> None:
        self.trace_topic = trace_topic or C.RMQ_SYS_TRACE_TOPIC
        self.group_name = f"{GROUP_NAME_PREFIX}-{group}-{kind}-{next(_COUNTER)}"
        self._producer_factory = producer_factory
        self._producer: Any = None
        self._queue: asyncio.Queue[TraceContext] | None = None
        self._worker: PeriodicService | None = None  # one batch a round, the next round at once
        self.dropped = 0  # contexts lost because the queue was full
        self.sent = 0  # trace messages written
        self.failed = 0  # trace messages whose send failed
        self._failing = False
        self._producer_started = False

    def is_trace_topic(self, topic: str) -> bool:
        return topic.startswith(self.trace_topic)

    async def start(self) -> None:
        self._queue = asyncio.Queue(QUEUE_SIZE)
        self._producer = self._producer_factory(self.group_name)
        self._worker = PeriodicService(f"trace-dispatcher-{self.group_name}", 0.0, self._send_round)
        await self._worker.start()

    def append(self, ctx: TraceContext) -> bool:
        """Queue a context for writing; False (and counted) when the queue is full. Never blocks."""
        queue = self._queue
        if queue is None:
            return False
        try:
            queue.put_nowait(ctx)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("trace queue full: %d trace context(s) dropped so far", self.dropped)
            return False
        return True

    async def flush(self, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until every queued context has been written or given up on."""
        if self._queue is not None:
            try:
                await asyncio.wait_for(self._queue.join(), timeout_s)
            except TimeoutError:
                log.warning("trace data not flushed within %.1f s", timeout_s)

    async def shutdown(self) -> None:
        await self.flush()
        if self._worker is not None:
            await self._worker.stop()
            self._worker = None
        if self._producer is not None and self._producer_started:
            await self._producer.shutdown()
        self._queue = None

    async def _send_round(self) -> None:
        """Write the contexts queued within POLLING_TIME_S of the first (at most BATCH_SIZE)."""
        assert self._queue is not None
        queue = self._queue
        batch = [await queue.get()]
        deadline = asyncio.get_running_loop().time() + POLLING_TIME_S
        while len(batch) < BATCH_SIZE:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                break
        try:
            await self._send_batch(batch)
        except Exception:  # logged here with the count; never let a bug stop the tracing of later messages
            log.exception("writing %d trace context(s) failed", len(batch))
        finally:
            for _ in batch:
                queue.task_done()

    async def _send_batch(self, batch: list[TraceContext]) -> None:
        data: list[str] = []
        keys: list[str] = []
        size = 0
        for ctx in batch:
            text, ctx_keys = encode(ctx)
            if data and size + len(text) > MAX_MSG_SIZE:
                await self._send(data, keys)
                data, keys, size = [], [], 0
            data.append(text)
            keys.extend(k for k in ctx_keys if k not in keys)
            size += len(text)
        if data:
            await self._send(data, keys)

    async def _send(self, data: list[str], keys: list[str]) -> None:
        msg = Message(
            self.trace_topic, "".join(data).encode(), keys=C.KEY_SEPARATOR.join(keys) if keys else None
        )
        try:
            if not self._producer_started:
                await self._producer.start()
                self._producer_started = True
            await self._producer.send(msg)
        except Exception as exc:  # Java's SendCallback.onException: log, drop
            self.failed += 1
            if not self._failing:
                log.error("sending trace data to %s failed: %s", self.trace_topic, exc)
            self._failing = True
            return
        self.sent += 1
        if self._failing:
            log.info("trace data reaches %s again", self.trace_topic)
            self._failing = False
