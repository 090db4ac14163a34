"""`df.write.format("rocketq")` and `writeStream.format("rocketq")`: rows sent as messages, per task in batches.

Modelled on Spark's Kafka sink (KafkaWriter / KafkaRowWriter): the topic comes from the `topic` option
(which wins) or a `topic` column; the body from `body` or `value`; optional `keys` (or Kafka's `key`),
`tags` and `properties` columns. Each task opens its own producer on a private event loop (executor
Python workers are forked and short-lived, as for the source) and sends SEND_BATCH_MESSAGE requests
of up to `batchSize` rows, a few in flight.

Delivery is at least once: a failed send fails the task and Spark runs it again, which sends the rows
of that task again. To let a consumer drop those duplicates, every row gets a deterministic UNIQ_KEY
(the message id consumers see) made of the write's identity (the streaming query id and batch id, or
for a batch write an id fixed when the write is planned), the task's partition and the row's position
in it: a retried task sends the same ids again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructType,
)

from rocketq.client import Message, Producer
from rocketq.common.constants import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from rocketq.spark.client import DEFAULT_TIMEOUT_MS
from rocketq.spark.offsets import OffsetSpecError, parse_positive
from rocketq.spark.options import check_known, lowered

log = logging.getLogger("rocketq.spark")

DEFAULT_PRODUCER_GROUP = "rocketq-spark-sink"
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_INFLIGHT = 4
MAX_BATCH_BYTES = 1024 * 1024  # well under the broker's 4 MiB maxMessageSize for a whole batch body

# Spark's own writers pass these through the options; they mean nothing to the sink.
SINK_OPTIONS = (
    "namesrv",
    "topic",
    "producerGroup",
    "batchSize",
    "maxInflight",
    "timeoutMs",
    "checkpointLocation",
    "path",
)
# Spark's streaming engine sets these local properties on every task of a micro-batch (MicroBatchExecution).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

_STRINGISH = (StringType, BinaryType)
COLUMNS: dict[str, tuple[type[DataType], ...]] = {
    "topic": (StringType,),
    "body": _STRINGISH,
    "value": _STRINGISH,
    "keys": (StringType, ArrayType),
    "key": _STRINGISH,
    "tags": (StringType,),
    "properties": (MapType,),
}


@dataclass(frozen=True, slots=True)
class SinkOptions:
    namesrv: str
    topic: str | None
    producer_group: str
    batch_size: int
    max_inflight: int
    timeout_ms: int

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> SinkOptions:
        opts = lowered(options)
        check_known(opts, SINK_OPTIONS, "sink")
        namesrv = opts.get("namesrv", "").strip()
        if not namesrv:
            raise OffsetSpecError("option 'namesrv' is required: 'host:port' or 'host:port;host:port'")
        return cls(
            namesrv=namesrv,
            topic=opts.get("topic", "").strip() or None,
            producer_group=opts.get("producergroup", "").strip() or DEFAULT_PRODUCER_GROUP,
            batch_size=parse_positive("batchSize", opts.get("batchsize"), DEFAULT_BATCH_SIZE)
            or DEFAULT_BATCH_SIZE,
            max_inflight=parse_positive("maxInflight", opts.get("maxinflight"), DEFAULT_MAX_INFLIGHT)
            or DEFAULT_MAX_INFLIGHT,
            timeout_ms=parse_positive("timeoutMs", opts.get("timeoutms"), DEFAULT_TIMEOUT_MS)
            or DEFAULT_TIMEOUT_MS,
        )


def check_schema(schema: StructType, options: SinkOptions) -> None:
    """Fail the write before any task runs when the rows cannot become messages (as KafkaWriter#validateQuery)."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    unknown = sorted(set(fields) - set(COLUMNS))
    if unknown:
        raise OffsetSpecError(
            f"the rocketq sink has no column(s) {', '.join(unknown)}; it takes {', '.join(COLUMNS)}"
        )
    for name, data_type in fields.items():
        if not isinstance(data_type, COLUMNS[name]):
            raise OffsetSpecError(
                f"column {name!r} is {data_type.simpleString()}; expected {_kinds(COLUMNS[name])}"
            )
    if "body" in fields and "value" in fields:
        raise OffsetSpecError("give the message body as a 'body' or a 'value' column, not both")
    if "body" not in fields and "value" not in fields:
        raise OffsetSpecError("the rocketq sink needs a 'body' (or 'value') column with the message bodies")
    if "keys" in fields and "key" in fields:
        raise OffsetSpecError("give the keys as a 'keys' or a 'key' column, not both")
    if options.topic is None and "topic" not in fields:
        raise OffsetSpecError("no topic: set the option 'topic' or give a 'topic' column")


def _kinds(types: tuple[type[DataType], ...]) -> str:
    return " or ".join(t.__name__.removesuffix("Type").lower() for t in types)


def unique_key(write_id: str, partition: int, row: int) -> str:
    """A message id (32 hex digits, UNIQ_KEY's length) that a retry of the same task reproduces."""
    return hashlib.md5(f"{write_id}/{partition}/{row}".encode(), usedforsecurity=False).hexdigest().upper()


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    return value.encode() if isinstance(value, str) else bytes(value)


def row_message(row: Any, default_topic: str | None, msg_id: str) -> Message:
    fields = row.asDict()
    topic = default_topic or fields.get("topic")
    if not topic:
        raise ValueError(f"row {msg_id} has no topic (null 'topic' column and no 'topic' option)")
    body = fields["body"] if "body" in fields else fields.get("value")
    keys = fields.get("keys", fields.get("key"))
    if isinstance(keys, bytes | bytearray):
        keys = keys.decode()
    props = dict(fields.get("properties") or {})
    props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = msg_id
    return Message(topic, _bytes(body), tags=fields.get("tags") or None, keys=keys or None, properties=props)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task sent: its partition and how many messages."""

    partition: int
    count: int


class _RowSender:
    """Sends one task's rows: per topic, batches of batchSize rows (and at most MAX_BATCH_BYTES), pipelined."""

    def __init__(self, options: SinkOptions) -> None:
        self.opts = options
        self.sent = 0

    async def run(self, rows: Iterator[Any], write_id: str, partition: int) -> int:
        producer = Producer(
            self.opts.producer_group, namesrv_addr=self.opts.namesrv, send_msg_timeout_ms=self.opts.timeout_ms
        )
        await producer.start()
        slots = asyncio.Semaphore(self.opts.max_inflight)
        inflight: set[asyncio.Task[None]] = set()
        pending: dict[str, tuple[list[Message], int]] = {}

        async def send(batch: list[Message]) -> None:
            try:
                await producer.send_batch(batch)
                self.sent += len(batch)
            finally:
                slots.release()

        async def flush(topic: str) -> None:
            batch, _size = pending.pop(topic)
            await slots.acquire()
            for task in [t for t in inflight if t.done()]:
                inflight.discard(task)
                task.result()  # a failed send fails the task (Spark retries it)
            inflight.add(asyncio.create_task(send(batch)))

        try:
            for position, row in enumerate(rows):
                msg = row_message(row, self.opts.topic, unique_key(write_id, partition, position))
                batch, size = pending.get(msg.topic, ([], 0))
                batch.append(msg)
                pending[msg.topic] = (batch, size + len(msg.body))
                if len(batch) >= self.opts.batch_size or size + len(msg.body) >= MAX_BATCH_BYTES:
                    await flush(msg.topic)
            for topic in list(pending):
                await flush(topic)
            await asyncio.gather(*inflight)
        finally:
            # Sends already started finish (each is bounded by timeoutMs) before the task fails: what the
            # broker stored is then known to be there, and the retry's duplicates carry the same ids.
            await asyncio.gather(*inflight, return_exceptions=True)
            await producer.shutdown()
        return self.sent


def _send_task_rows(options: SinkOptions, rows: Iterator[Any], write_id: str) -> SinkCommitMessage:
    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    count = asyncio.run(_RowSender(options).run(rows, write_id, partition))
    return SinkCommitMessage(partition, count)


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.count for m in messages if isinstance(m, SinkCommitMessage))


class RocketqBatchWriter(DataSourceWriter):
    """df.write.format("rocketq"): the write's id is fixed here, on the driver, so task retries reuse it."""

    def __init__(self, schema: StructType, options: SinkOptions) -> None:
        check_schema(schema, options)
        self.options = options
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _send_task_rows(self.options, iterator, self.write_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("rocketq sink: write %s sent %d messages", self.write_id, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "rocketq sink: write %s aborted after %d messages were sent", self.write_id, _total(messages)
        )


class RocketqStreamWriter(DataSourceStreamWriter):
    """writeStream.format("rocketq"): ids from the query id and batch id, stable when a batch is replayed."""

    def __init__(self, schema: StructType, options: SinkOptions) -> None:
        check_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        ctx = TaskContext.get()
        query = (ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx else None) or "query"
        batch = (ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx else None) or "0"
        return _send_task_rows(self.options, iterator, f"{query}/{batch}")

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("rocketq sink: batch %d sent %d messages", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("rocketq sink: batch %d aborted after %d messages were sent", batchId, _total(messages))
