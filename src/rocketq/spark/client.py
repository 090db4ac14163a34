"""A small synchronous rocketq client for Spark's Python processes: routes, queue offsets, pulls.

Spark calls the data source from plain threads of short-lived or forked worker processes (the source
runner, the planner, executor workers), so this client owns a private asyncio loop and drives
rocketq.client's MQClientAPI on it with run_until_complete: no background thread survives a fork or
outlives the task, and the process's own event loop (if any) is never touched. One instance is used
by one thread. Pulls of one queue range are pipelined (several requests in flight on one connection),
because the broker answers at most maxTransferCountOnMessageInMemory (32 by default) messages a pull.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

from rocketq.client.api import MQClientAPI, pull_all_header
from rocketq.client.model import PullResult, PullStatus
from rocketq.common import constants as C
from rocketq.common.constants import PermName
from rocketq.common.errors import RocketQError
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.remoting.transport.client import RemotingClient

log = logging.getLogger("rocketq.spark")

T = TypeVar("T")
R = TypeVar("R")
_Pull = asyncio.Task[tuple[PullResult, bytes]]  # a pull in flight: its result and its body

DEFAULT_GROUP = "rocketq-spark"
DEFAULT_TIMEOUT_MS = 10_000
# Pulls of one queue in flight: 16 (512 messages of the broker's 32 per answer) let the broker answer
# several per wake-up and keep pulls arriving while the reader builds or hands on a batch. Measured
# against 4 (docs/spark.md, Performance): less CPU per message in the reader and the broker, shorter reads.
DEFAULT_PULL_DEPTH = 16
# Pull answers read_records takes per run of its loop, rather than one run per answer (entering and
# leaving run_until_complete was ~7 % of a Spark worker's CPU). 4 was measured best for the Arrow
# reader (16 % less CPU per message than one); 16 made the message-view reader of read_range slower
# (more answers' views alive at once), 4 did not (docs/spark.md, Performance).
ANSWERS_PER_LOOP_RUN = 4


def _queue_offset_of_message(m: MessageExt) -> int:
    return m.queue_offset


class DataLossError(RocketQError):
    """Messages a query was to read are gone (retention deleted them, or the queue was reset)."""


class RouteError(RocketQError):
    """No NameServer knows the topic, or none answered."""


@dataclass(frozen=True, slots=True)
class QueueRoute:
    """A readable queue of a topic and the address of its broker's master."""

    topic: str
    broker_name: str
    queue_id: int
    addr: str

    @property
    def mq(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


class SyncClient:
    """Blocking calls to a rocketq / RocketMQ cluster, on a private event loop."""

    def __init__(
        self, namesrv: str, *, group: str = DEFAULT_GROUP, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> None:
        self.namesrvs = [a.strip() for a in namesrv.replace(",", ";").split(";") if a.strip()]
        if not self.namesrvs:
            raise RouteError("option 'namesrv' is required: 'host:port' or 'host:port;host:port'")
        self.group = group
        self.timeout_ms = timeout_ms
        self._loop = asyncio.new_event_loop()
        self._transport: RemotingClient | None = None
        self._api: MQClientAPI | None = None

    # -- plumbing ---------------------------------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T] | asyncio.Future[T]) -> T:
        return self._loop.run_until_complete(coro)

    @property
    def api(self) -> MQClientAPI:
        if self._api is None:
            self._transport = RemotingClient()  # the default settings: a 3 s connect timeout
            self._api = MQClientAPI(self._transport, timeout_ms=self.timeout_ms)
        return self._api

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            if self._transport is not None:
                self._run(self._transport.shutdown())
        finally:
            self._transport = self._api = None
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- routes and offsets ---------------------------------------------------------------------------
    def routes(self, topic: str) -> list[QueueRoute]:
        """The readable queues of `topic` on the masters of its route, sorted by broker and queue."""
        errors = []
        for namesrv in self.namesrvs:
            try:
                route = self._run(self.api.get_topic_route(namesrv, topic, self.timeout_ms))
            except RocketQError as exc:
                errors.append(f"{namesrv}: {exc}")
                continue
            masters = {b.broker_name: b.broker_addrs.get(C.MASTER_ID) for b in route.broker_datas}
            out: list[QueueRoute] = []
            for qd in route.queue_datas:
                addr = masters.get(qd.broker_name)
                if addr is None or not PermName.is_readable(qd.perm):
                    continue
                out.extend(QueueRoute(topic, qd.broker_name, q, addr) for q in range(qd.read_queue_nums))
            return sorted(out, key=lambda r: (r.broker_name, r.queue_id))
        raise RouteError(f"no route for topic {topic!r}: " + "; ".join(errors))

    def topic_list(self) -> list[str]:
        """Every topic a NameServer knows (the first that answers), sorted."""
        errors = []
        for namesrv in self.namesrvs:
            try:
                return self._run(self.api.get_all_topic_list(namesrv))
            except RocketQError as exc:
                errors.append(f"{namesrv}: {exc}")
        raise RouteError("no NameServer listed its topics: " + "; ".join(errors))

    def min_offset(self, route: QueueRoute) -> int:
        return max(self._run(self.api.get_min_offset(route.addr, route.mq)), 0)

    def max_offset(self, route: QueueRoute) -> int:
        return max(self._run(self.api.get_max_offset(route.addr, route.mq)), 0)

    def offset_by_time(self, route: QueueRoute, timestamp_ms: int) -> int:
        """The first offset whose message was stored at or after `timestamp_ms` (max offset if none).

        SEARCH_OFFSET_BY_TIMESTAMP answers the offset of the message stored closest to the time (Java),
        which may be one before the first one at or after it, or any of several stored in the same
        millisecond: its answer is checked against the store times around it and, when it is not the
        boundary, the boundary is found by bisection (one-message pulls).
        """
        low, high = self.bounds([route])[0]
        if low >= high:
            return high

        def before(offset: int) -> bool:  # stored before the time?
            stored = self._store_time(route, offset)
            return stored is not None and stored < timestamp_ms

        hint = min(max(self._run(self.api.search_offset(route.addr, route.mq, timestamp_ms)), low), high)
        if (hint == low or before(hint - 1)) and (hint == high or not before(hint)):
            return hint
        while low < high:
            mid = (low + high) // 2
            if before(mid):
                low = mid + 1
            else:
                high = mid
        return low

    def _store_time(self, route: QueueRoute, offset: int) -> int | None:
        _result, body = self._run(self._pull(route, offset, 1))
        for m in decode_records_lazy(body):
            if m.queue_offset == offset:
                return int(m.store_timestamp)
        return None

    def bounds(self, routes: list[QueueRoute]) -> list[tuple[int, int]]:
        """(min, max) offsets of each queue, asked concurrently (0 for a queue holding nothing yet:
        the broker answers -1 as the minimum of a queue it has not created)."""

        async def ask() -> list[tuple[int, int]]:
            api = self.api
            lows = [api.get_min_offset(r.addr, r.mq) for r in routes]
            highs = [api.get_max_offset(r.addr, r.mq) for r in routes]
            values = [max(v, 0) for v in await asyncio.gather(*lows, *highs)]
            return list(zip(values[: len(routes)], values[len(routes) :], strict=True))

        return self._run(ask())

    def commit_offset(self, route: QueueRoute, offset: int) -> None:
        self._run(self.api.update_consumer_offset(route.addr, self.group, route.mq, offset, oneway=False))

    def commit_offsets(self, commits: list[tuple[QueueRoute, int]]) -> list[RocketQError | None]:
        """Commit each (queue, offset) as the group's offset, concurrently (one round trip of time, not
        one per queue: a streaming query commits every queue after each trigger); each one's error or None."""

        async def commit(route: QueueRoute, offset: int) -> RocketQError | None:
            try:
                await self.api.update_consumer_offset(route.addr, self.group, route.mq, offset, oneway=False)
            except RocketQError as exc:
                return exc
            return None

        async def every() -> list[RocketQError | None]:
            return list(await asyncio.gather(*(commit(route, offset) for route, offset in commits)))

        return self._run(every())

    # -- pulling ----------------------------------------------------------------------------------------
    def _pull(self, route: QueueRoute, offset: int, max_nums: int) -> _Pull:
        header = pull_all_header(self.group, route.mq, offset, max_nums)
        return self._loop.create_task(self.api.pull_message_body(route.addr, header, self.timeout_ms))

    def read_range(
        self,
        route: QueueRoute,
        start: int,
        end: int,
        *,
        batch: int = 32,
        depth: int = DEFAULT_PULL_DEPTH,
        fail_on_data_loss: bool = True,
    ) -> Iterator[list[MessageExt]]:
        """The messages of [start, end) of one queue, in order, as lists (one per pull answer): read_records
        with each answer decoded into views (rocketq.common.record.lazy), their broker_name set."""
        pulls = self.read_records(
            route, start, end, decode_records_lazy, _queue_offset_of_message,
            batch=batch, depth=depth, fail_on_data_loss=fail_on_data_loss,
        )  # fmt: skip
        for _body, msgs in pulls:
            for m in msgs:
                m.broker_name = route.broker_name
            yield msgs

    def read_records(
        self,
        route: QueueRoute,
        start: int,
        end: int,
        decode: Callable[[bytes], list[R]],
        queue_offset_of: Callable[[R], int],
        *,
        batch: int = 32,
        depth: int = DEFAULT_PULL_DEPTH,
        fail_on_data_loss: bool = True,
    ) -> Generator[tuple[bytes, list[R]], None, None]:
        """The records of [start, end) of one queue, in order: per pull answer, its body and the records
        `decode` made of it that fall in the range (whose queue offset `queue_offset_of` reads).

        Offsets of a queue are dense, so `depth` pulls of `batch` messages each are kept in flight. An
        answer shorter than asked (the broker caps a pull at maxTransferCountOnMessageInMemory, 32 by
        default, and at a byte budget) is followed at once by a pull of the rest of its range, and later
        pulls ask no more than such an answer held. Missing data (the queue starts after `start`, or ends
        before `end`) raises DataLossError, or with fail_on_data_loss=False is logged and skipped.

        The pulls run on the client's loop as one async generator, which the loop runs once per
        ANSWERS_PER_LOOP_RUN answers rather than once per answer; the answers of one run are held
        until handed on, and no more pulls are in flight than `depth`.
        """
        answers = self._answers(route, start, end, decode, queue_offset_of, batch, depth, fail_on_data_loss)
        try:
            while True:
                got, error, done = self._run(_take(answers, ANSWERS_PER_LOOP_RUN))
                yield from got
                if error is not None:
                    raise error
                if done:
                    return
        finally:
            if not self._loop.is_closed():
                self._run(answers.aclose())  # cancels the pulls still in flight

    async def _answers(
        self, route: QueueRoute, start: int, end: int, decode: Callable[[bytes], list[R]],
        queue_offset_of: Callable[[R], int], batch: int, depth: int, fail_on_data_loss: bool,
    ) -> AsyncGenerator[tuple[bytes, list[R]], None]:  # fmt: skip
        """read_records' answers (its arguments), on the client's loop."""
        pos = ahead = start
        inflight: deque[tuple[int, int, _Pull]] = deque()  # (offset, count, pull)
        try:
            while pos < end:
                while len(inflight) < depth and ahead < end:
                    size = min(batch, end - ahead)
                    inflight.append((ahead, size, self._pull(route, ahead, size)))
                    ahead += size
                asked_at, size, task = inflight.popleft()
                result, body = await task
                until = asked_at + size
                records = (
                    [r for r in decode(body) if pos <= queue_offset_of(r) < until]
                    if asked_at == pos and body
                    else []
                )
                if records:
                    first = queue_offset_of(records[0])
                    if first != pos:
                        self._lost(route, pos, first, fail_on_data_loss)
                    yield body, records
                    pos = queue_offset_of(records[-1]) + 1
                    if pos < until:  # a short answer: the rest of its range comes next
                        batch = min(batch, len(records))
                        inflight.appendleft((pos, until - pos, self._pull(route, pos, until - pos)))
                    continue
                if asked_at == pos:
                    pos = self._no_messages(route, result, pos, end, fail_on_data_loss)
                # Off the expected path (no data where some was planned): start again from pos.
                await _cancel(inflight)
                ahead = pos
        finally:
            await _cancel(inflight)

    def _no_messages(self, route: QueueRoute, result: PullResult, pos: int, end: int, fail: bool) -> int:
        """An answer without messages at `pos`: where to go on (or DataLossError)."""
        if result.status is PullStatus.OFFSET_ILLEGAL and result.next_begin_offset > pos:
            # Below the queue's minimum: retention removed [pos, min).
            self._lost(route, pos, min(result.next_begin_offset, end), fail)
            return min(result.next_begin_offset, end)
        if result.status is PullStatus.NO_MATCHED_MSG and result.next_begin_offset > pos:
            return min(result.next_begin_offset, end)  # the broker skipped records it could not serve
        # No message where the plan expected some: the queue is shorter than it was (truncated or reset).
        self._lost(route, pos, end, fail, f"the queue ends at {result.max_offset}")
        return end

    @staticmethod
    def _lost(route: QueueRoute, since: int, until: int, fail: bool, why: str = "") -> None:
        what = (
            f"messages {since}..{until - 1} of {route.topic} {route.broker_name}:{route.queue_id} are gone"
            f"{' (' + why + ')' if why else ' (retention deleted them)'}"
        )
        if fail:
            raise DataLossError(what + "; set failOnDataLoss=false to skip them")
        log.warning("%s; skipped (failOnDataLoss=false)", what)


async def _take(answers: AsyncIterator[T], n: int) -> tuple[list[T], BaseException | None, bool]:
    """Up to `n` items of `answers` in one run of the loop: the items, the error that ended them (after
    the items before it, which the caller hands on first) and whether `answers` is done."""
    got: list[T] = []
    try:
        while len(got) < n:
            got.append(await anext(answers))
    except StopAsyncIteration:
        return got, None, True
    except Exception as exc:  # handed to the caller after the items before it
        return got, exc, True
    return got, None, False


async def _cancel(inflight: deque[tuple[int, int, _Pull]]) -> None:
    """Cancel the pulls still in flight and wait for them to end."""
    if not inflight:
        return
    tasks = [task for _at, _size, task in inflight]
    inflight.clear()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
