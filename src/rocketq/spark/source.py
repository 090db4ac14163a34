"""`format("rocketq")`: a PySpark Python data source reading rocketq / RocketMQ topics, batch and streaming.

No Java counterpart (RocketMQ has connectors outside its main repository); modelled on Spark's Kafka
source: one input partition per message queue and offset range, offsets as sorted JSON
(rocketq.spark.offsets), the read limit maxMessagesPerTrigger, Trigger.AvailableNow, failOnDataLoss.
Process model (docs/spark.md, Process model): the stream reader lives in Spark's source-runner process and is
pickled to the planner and the executors, so it holds no socket when pickled (the client is created
lazily and dropped by __getstate__); `read()` runs in executor Python workers and opens its own
connection (rocketq.spark.client.SyncClient). Exactly-once comes from Spark's checkpoint: a batch's
offsets are logged before it runs and `read()` returns exactly the logged range again on a replay.
The resolved initial offsets are cached on the reader, so both initialOffset() calls of a first run
agree (Python sources get no sources/0 log, so a query that dies before its first batch is logged
resolves startingOffsets again when restarted; the default `earliest` is stable).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from rocketq.common.errors import RocketQError
from rocketq.common.record.lazy import scan_records
from rocketq.remoting.errors import RemotingConnectError
from rocketq.spark.client import DEFAULT_PULL_DEPTH, QueueRoute, RouteError, SyncClient
from rocketq.spark.offsets import (
    Offsets,
    OffsetSpec,
    OffsetSpecError,
    QueueKey,
    advance,
    cap,
    count,
    pack,
    plan,
    split,
    to_offsets,
)
from rocketq.spark.options import SourceOptions

log = logging.getLogger("rocketq.spark")

FORMAT_NAME = "rocketq"
SCHEMA_DDL = (
    "topic string, broker_name string, queue_id int, queue_offset bigint, msg_id string, tags string, "
    "keys string, properties map<string,string>, body binary, born_timestamp timestamp, store_timestamp timestamp"
)
# includeHeaders=true adds Kafka's headers column: the properties as (key, UTF-8 value) pairs.
HEADERS_DDL = "headers array<struct<key:string,value:binary>>"
ROWS_PER_ARROW_BATCH = 4096
_HEAP_FROZEN: list[bool] = []  # non-empty once this process froze its heap (_freeze_worker_heap)


# -- partitions and reading (executors) -------------------------------------------------------------
@dataclass
class QueueRange(InputPartition):
    """One Spark task: the offsets [start, end) of one queue, and all `read()` needs to fetch them."""

    namesrv: str
    group: str
    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int
    addr: str  # the master's address when planned ("" = ask the NameServer)
    fail_on_data_loss: bool = True
    pull_batch_size: int = 32
    pull_depth: int = DEFAULT_PULL_DEPTH
    timeout_ms: int = 10_000


@dataclass
class QueueRanges(InputPartition):
    """One Spark task reading several QueueRanges one after the other on one connection (maxPartitions)."""

    ranges: list[QueueRange]


def read_partition(p: QueueRange | QueueRanges, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of a partition as Arrow batches (runs in an executor; opens its own connection)."""
    # Imported here: pyarrow.compute costs ~0.1-0.3 s of CPU to import, and the stream reader's own
    # process (Spark's source runner, started with each query) plans and never reads.
    from rocketq.spark.arrow_batches import PulledRecords, batch_of_pulls

    _freeze_worker_heap()
    ranges = p.ranges if isinstance(p, QueueRanges) else [p]
    with SyncClient(ranges[0].namesrv, group=ranges[0].group, timeout_ms=ranges[0].timeout_ms) as client:
        pending: list[PulledRecords] = []
        rows = 0
        for r in ranges:
            pulls = _pulls(client, QueueRoute(r.topic, r.broker_name, r.queue_id, r.addr), r)
            try:
                for body, records in pulls:
                    pending.append(PulledRecords(body, records, r.broker_name))
                    rows += len(records)
                    if rows >= ROWS_PER_ARROW_BATCH:
                        yield batch_of_pulls(pending, schema)
                        pending = []
                        rows = 0
            finally:
                pulls.close()  # pulls still in flight are cancelled while the client's loop is open
        if pending:
            yield batch_of_pulls(pending, schema)


def _freeze_worker_heap() -> None:
    """Once per Python worker: move what it holds now (pyspark, pyarrow and rocketq's modules, ~75,000
    objects) out of the garbage collector's sight (gc.freeze).

    PySpark's worker daemon runs a full gc.collect() after every task of a reused worker
    (pyspark/daemon.py), and the reads' own allocations trigger full collections too: each one walks
    every tracked object, 40 ms of CPU per task at local[2] for a collection that finds nothing among
    the imported modules. Frozen, they are skipped (0.2 ms). What the freeze costs: a reference cycle
    among objects alive now is never collected, the trade gc.freeze documents for pre-forked workers.
    """
    if not _HEAP_FROZEN:
        gc.freeze()
        _HEAP_FROZEN.append(True)


def _pulls(
    client: SyncClient, route: QueueRoute, p: QueueRange
) -> Generator[tuple[bytes, list[tuple[Any, ...]]], None, None]:
    """Each pull answer of the range: its body and its records' scanned fields (no message decoded)."""
    from rocketq.spark.arrow_batches import queue_offset_of

    def read(r: QueueRoute) -> Iterator[tuple[bytes, list[tuple[Any, ...]]]]:
        return client.read_records(
            r,
            p.start,
            p.end,
            scan_records,
            queue_offset_of,
            batch=p.pull_batch_size,
            depth=p.pull_depth,
            fail_on_data_loss=p.fail_on_data_loss,
        )

    if route.addr:
        chunks = read(route)
        try:
            first = next(chunks)
        except StopIteration:
            return
        except RemotingConnectError:
            log.info(
                "broker %s at %s unreachable; asking the NameServer again", route.broker_name, route.addr
            )
        else:
            yield first
            yield from chunks
            return
    # No address planned, or it went away before anything was read: the route knows where it is now.
    for r in client.routes(route.topic):
        if (r.broker_name, r.queue_id) == (route.broker_name, route.queue_id):
            yield from read(r)
            return
    raise RouteError(f"queue {route.broker_name}:{route.queue_id} of {route.topic} is in no route")


# -- planning (driver side) -------------------------------------------------------------------------
class _Planner:
    """Routes and offsets of the source's topics, through a lazily created client (never pickled)."""

    def __init__(self, options: SourceOptions) -> None:
        self.opts = options
        self._client: SyncClient | None = None
        self.routes: dict[QueueKey, QueueRoute] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> SyncClient:
        if self._client is None:
            self._client = SyncClient(
                self.opts.namesrv, group=self.opts.group, timeout_ms=self.opts.timeout_ms
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def topics(self) -> list[str]:
        """The topics read now: as named, or those of the NameServer's list the pattern matches."""
        sub = self.opts.subscription
        if sub.kind == "subscribePattern":
            return [t for t in self.client.topic_list() if sub.matches(t)]
        return list(self.opts.topics)

    def refresh(self) -> dict[QueueKey, tuple[int, int]]:
        """Every queue read, with its (min, max) offsets, the routes refreshed."""
        sub = self.opts.subscription
        routes: dict[QueueKey, QueueRoute] = {}
        for topic in self.topics():
            try:
                found = self.client.routes(topic)
            except RouteError:
                if sub.kind != "subscribePattern":
                    raise
                log.info("topic %s matches subscribePattern but has no route (yet); not read", topic)
                continue
            for r in found:
                queue = QueueKey(topic, r.broker_name, r.queue_id)
                if sub.keeps(queue):
                    routes[queue] = r
        if sub.kind == "assign":
            for topic, key in sub.assigned:
                if not any(q.topic == topic and (q.key == key or key == f"*:{q.queue_id}") for q in routes):
                    raise OffsetSpecError(f"assign: topic {topic} has no queue {key.removeprefix('*:')}")
        self.routes = routes
        keys = sorted(routes)
        bounds = self.client.bounds([routes[k] for k in keys])
        return dict(zip(keys, bounds, strict=True))

    def resolve(
        self, spec: OffsetSpec, bounds: dict[QueueKey, tuple[int, int]] | None = None
    ) -> dict[QueueKey, int]:
        """`spec` resolved for every queue (against `bounds` when given, else fresh ones)."""
        if bounds is None:
            bounds = self.refresh()
        spec.check_covers(bounds)
        out = {}
        for queue, (low, high) in bounds.items():
            by_time = (
                self.client.offset_by_time(self.routes[queue], spec.timestamp_of(queue))
                if spec.by_time
                else None
            )
            out[queue] = spec.resolve(queue, low, high, by_time)
        return out

    def latest(self) -> Offsets:
        return to_offsets({q: high for q, (_low, high) in self.refresh().items()})

    def partitions(self, ranges: list[tuple[QueueKey, int, int]]) -> list[QueueRange | QueueRanges]:
        """One Spark partition per range, large ranges cut up when minPartitions asks for more, and
        ranges packed together when there are more than maxPartitions."""
        out: list[QueueRange | QueueRanges] = []
        for group in pack(split(ranges, self.opts.min_partitions), self.opts.max_partitions):
            parts = [self.partition(q, since, until) for q, since, until in group]
            out.append(parts[0] if len(parts) == 1 else QueueRanges(parts))
        return out

    def partition(self, queue: QueueKey, start: int, end: int) -> QueueRange:
        o = self.opts
        route = self.routes.get(queue)
        return QueueRange(
            o.namesrv, o.group, queue.topic, queue.broker_name, queue.queue_id, start, end,
            route.addr if route else "", o.fail_on_data_loss, o.pull_batch_size, o.pull_depth, o.timeout_ms,
        )  # fmt: skip


class RocketqBatchReader(DataSourceReader):
    """spark.read: startingOffsets (default earliest) to endingOffsets (default latest), resolved at planning."""

    def __init__(self, schema: StructType, options: SourceOptions) -> None:
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.planner = _Planner(options)

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.planner.opts
        assert opts.ending is not None
        try:
            bounds = self.planner.refresh()
            starts = self.planner.resolve(opts.starting, bounds)
            ends = self.planner.resolve(opts.ending, bounds)
        finally:
            self.planner.close()
        ranges = []
        for q in sorted(starts):
            if starts[q] > ends[q]:  # as Kafka's KafkaRelation: a range must not run backwards
                raise OffsetSpecError(
                    f"{opts.starting.option} of {q.topic} {q.key} ({starts[q]}) is after its "
                    f"{opts.ending.option} ({ends[q]})"
                )
            # An end beyond what is stored would read nothing but a data-loss error: stop at the end.
            end = min(ends[q], bounds[q][1])
            if end > starts[q]:
                ranges.append((q, starts[q], end))
        return self.planner.partitions(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, QueueRange | QueueRanges):  # Spark's stand-in partition of an empty plan
            return iter(())
        return read_partition(partition, self.arrow_schema)


class RocketqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """spark.readStream: offsets per queue, maxMessagesPerTrigger, AvailableNow, progress commits."""

    def __init__(self, schema: StructType, options: SourceOptions) -> None:
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.planner = _Planner(options)
        self._initial: Offsets | None = None
        self._target: Offsets | None = None
        self._latest: Offsets | None = None
        self._last_trigger_ms = (
            0  # minOffsetsPerTrigger / maxTriggerDelay, as KafkaMicroBatchStream#delayBatch
        )

    def initialOffset(self) -> dict[str, Any]:
        if self._initial is None:  # cached: Spark asks twice at a first start
            self._initial = to_offsets(self.planner.resolve(self.planner.opts.starting))
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.planner.latest()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.planner.opts.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        latest = self._target if self._target is not None else self.planner.latest()
        self._latest = latest
        if start is None:  # Spark 4.0 / 4.1 call it without arguments
            return latest
        if self._target is None and self._delay_batch(start, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            return cap(start, latest, limit.max_rows)
        return advance(start, latest)

    def _delay_batch(self, start: Offsets, latest: Offsets) -> bool:
        """minOffsetsPerTrigger: wait for that many new messages, but never longer than maxTriggerDelay."""
        opts = self.planner.opts
        if opts.min_offsets_per_trigger is None:
            return False
        now = int(time.time() * 1000)
        if now - self._last_trigger_ms >= opts.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        if count(start, advance(start, latest)) < opts.min_offsets_per_trigger:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = plan(start, end)
        if any(q not in self.planner.routes for q, _s, _e in ranges):
            try:
                self.planner.refresh()
            except RocketQError as exc:  # read() asks the NameServer itself
                log.warning("refreshing routes for planning failed: %s", exc)
        return self.planner.partitions(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, QueueRange | QueueRanges):  # Spark's stand-in partition of an empty plan
            return iter(())
        return read_partition(partition, self.arrow_schema)

    def commit(self, end: dict[str, Any]) -> None:
        """Best effort: the checkpoint is the truth; the broker's copy only shows the query's lag."""
        if not self.planner.opts.commit_offsets:
            return
        commits = [
            (queue, self.planner.routes[queue], offset)
            for queue, _since, offset in plan({}, end)
            if queue in self.planner.routes
        ]
        errors = self.planner.client.commit_offsets([(route, offset) for _q, route, offset in commits])
        for (queue, _route, offset), exc in zip(commits, errors, strict=True):
            if exc is not None:
                log.warning("committing %s offset %d to the broker failed: %s", queue, offset, exc)

    def stop(self) -> None:
        self.planner.close()


class RocketqDataSource(DataSource):
    """`spark.read.format("rocketq")` / `spark.readStream.format("rocketq")` (docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return f"{SCHEMA_DDL}, {HEADERS_DDL}" if include else SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketqBatchReader(schema, SourceOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RocketqStreamReader(schema, SourceOptions.parse(self.options, streaming=True))

    # The sink is imported when a write asks for it: it needs the SDK's producer, which every process
    # that unpickles this class (the planner, each executor worker, the stream runner) would else import.
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rocketq.spark.sink import RocketqBatchWriter, SinkOptions

        return RocketqBatchWriter(schema, SinkOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rocketq.spark.sink import RocketqStreamWriter, SinkOptions

        return RocketqStreamWriter(schema, SinkOptions.parse(self.options))
