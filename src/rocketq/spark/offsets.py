"""Offsets of the rocketq Spark source: the JSON form, option parsing, read limits and planning.

Pure (no Spark, no sockets), so it is unit-tested alone. The JSON form follows Spark's Kafka source:
`{"<topic>": {"<brokerName>:<queueId>": <next offset>, ...}, ...}`, every level sorted by key,
because Spark stores offsets as JSON text and compares that text (a different key order would look
like a different offset). Queue keys are strings ("broker-a:3"). In a starting/ending JSON given
by the user, -2 means earliest and -1 means latest, as for Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

EARLIEST = -2
LATEST = -1

Offsets = dict[str, dict[str, int]]  # topic -> "broker:queueId" -> offset


class OffsetSpecError(ValueError):
    """An offsets option that cannot be understood; the message names the option and the value."""


@dataclass(frozen=True, slots=True, order=True)
class QueueKey:
    """One message queue: what a Spark partition reads."""

    topic: str
    broker_name: str
    queue_id: int

    @property
    def key(self) -> str:
        return f"{self.broker_name}:{self.queue_id}"

    @classmethod
    def parse(cls, topic: str, key: str) -> QueueKey:
        broker, sep, queue = key.rpartition(":")
        if not sep or not broker or not queue.lstrip("-").isdigit():
            raise OffsetSpecError(f"queue key {key!r} of topic {topic!r} is not '<brokerName>:<queueId>'")
        return cls(topic, broker, int(queue))


def normalize(offsets: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The canonical form: keys sorted at both levels, values ints."""
    return {
        topic: {key: int(offsets[topic][key]) for key in sorted(offsets[topic])} for topic in sorted(offsets)
    }


def to_offsets(values: Mapping[QueueKey, int]) -> Offsets:
    out: dict[str, dict[str, int]] = {}
    for queue, offset in values.items():
        out.setdefault(queue.topic, {})[queue.key] = offset
    return normalize(out)


def from_offsets(offsets: Mapping[str, Mapping[str, int]]) -> dict[QueueKey, int]:
    return {
        QueueKey.parse(topic, key): int(value)
        for topic, queues in offsets.items()
        for key, value in queues.items()
    }


def dumps(offsets: Mapping[str, Mapping[str, int]]) -> str:
    return json.dumps(normalize(offsets), sort_keys=True, separators=(",", ":"))


# -- option parsing ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where reading starts or ends: "earliest", "latest", a timestamp, or explicit offsets or timestamps.

    `offsets` holds offsets (kind "offsets") or epoch-ms timestamps (kind "timestamps") per queue. A
    timestamp resolves to the first message stored at or after it; `strict` makes a timestamp without
    such a message an error (Kafka's `startingOffsetsByTimestampStrategy=error`) instead of the end.
    """

    kind: str  # "earliest" | "latest" | "timestamp" | "offsets" | "timestamps"
    timestamp_ms: int = 0
    offsets: dict[QueueKey, int] | None = None
    option: str = ""
    strict: bool = False

    @property
    def by_time(self) -> bool:
        return self.kind in ("timestamp", "timestamps")

    def timestamp_of(self, queue: QueueKey) -> int:
        if self.kind == "timestamps":
            assert self.offsets is not None
            return self.offsets[queue]
        return self.timestamp_ms

    def check_covers(self, queues: Collection[QueueKey]) -> None:
        """Explicit JSON must name exactly the queues read (Kafka asks for every TopicPartition)."""
        if self.offsets is None:
            return
        named, known = set(self.offsets), set(queues)
        problems = []
        if named - known:
            problems.append("names queues that are not read: " + _keys(named - known))
        if known - named:
            problems.append("misses queues that are read: " + _keys(known - named))
        if problems:
            raise OffsetSpecError(
                f"{self.option} " + "; ".join(problems) + " (every queue of every topic is needed)"
            )

    def resolve(self, queue: QueueKey, earliest: int, latest: int, by_time: int | None = None) -> int:
        """The offset of `queue` given its current bounds (and the offset found for the timestamp)."""
        if self.kind == "earliest":
            return earliest
        if self.kind == "latest":
            return latest
        if self.by_time:
            if by_time is None or by_time >= latest:  # no message stored at or after the time
                if self.strict:
                    raise OffsetSpecError(
                        f"{self.option}: no message of {queue.topic} {queue.key} was stored at or after "
                        f"{self.timestamp_of(queue)}; set startingOffsetsByTimestampStrategy=latest to start "
                        "at the end instead"
                    )
                return latest
            return min(max(by_time, earliest), latest)
        assert self.offsets is not None
        value = self.offsets[queue]
        if value == EARLIEST:
            return earliest
        if value == LATEST:
            return latest
        return value


def _keys(queues: Collection[QueueKey]) -> str:
    return ", ".join(f"{q.topic} {q.key}" for q in sorted(queues))


def _json_per_queue(option: str, raw: str, what: str, minimum: int) -> dict[QueueKey, int]:
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        raise OffsetSpecError(
            f'{option}: expected JSON like {{"topic": {{"broker-a:0": 42}}}}, got {raw!r}'
        ) from None
    if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
        raise OffsetSpecError(
            f'{option}: the JSON must map each topic to {{"<brokerName>:<queueId>": {what}}}'
        )
    out: dict[QueueKey, int] = {}
    for topic, queues in parsed.items():
        for key, value in queues.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise OffsetSpecError(
                    f"{option}: {what} of {topic} {key} must be an integer >= {minimum}, got {value!r}"
                )
            out[QueueKey.parse(str(topic), str(key))] = value
    return out


def parse_spec(option: str, text: str | None, default: str) -> OffsetSpec:
    """`earliest`, `latest`, an epoch-ms timestamp, or the JSON form (with -2 / -1 allowed)."""
    raw = (text if text is not None else default).strip()
    lowered = raw.lower()
    if lowered in ("earliest", "latest"):
        return OffsetSpec(lowered, option=option)
    if raw.lstrip("-").isdigit():  # our shorthand, kept: lenient (no message after the time = the end)
        return parse_timestamp(option, raw, strict=False)
    if not raw.startswith(("{", "[")):
        raise OffsetSpecError(
            f"{option}: expected earliest, latest, an epoch-ms timestamp or JSON like "
            f'{{"topic": {{"broker-a:0": 42}}}}, got {raw!r}'
        )
    return OffsetSpec("offsets", offsets=_json_per_queue(option, raw, "offset", EARLIEST), option=option)


def parse_timestamp(option: str, text: str, *, strict: bool) -> OffsetSpec:
    """startingTimestamp / endingTimestamp: one epoch-ms time for every queue."""
    raw = text.strip()
    if not raw.lstrip("-").isdigit() or int(raw) < 0:
        raise OffsetSpecError(f"{option}: a timestamp must be epoch milliseconds >= 0, got {raw!r}")
    return OffsetSpec("timestamp", timestamp_ms=int(raw), option=option, strict=strict)


def parse_timestamps(option: str, text: str, *, strict: bool) -> OffsetSpec:
    """startingOffsetsByTimestamp / endingOffsetsByTimestamp: JSON of an epoch-ms time per queue."""
    return OffsetSpec(
        "timestamps",
        offsets=_json_per_queue(option, text.strip(), "timestamp", 0),
        option=option,
        strict=strict,
    )


def parse_topics(text: str | None) -> list[str]:
    topics = sorted({t.strip() for t in (text or "").split(",") if t.strip()})
    if not topics:
        raise OffsetSpecError("option 'topic' is required: one topic or several separated by ','")
    return topics


def parse_bool(option: str, text: str | None, default: bool) -> bool:
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise OffsetSpecError(f"{option}: expected true or false, got {text!r}")


def parse_positive(option: str, text: str | None, default: int | None) -> int | None:
    if text is None or not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        raise OffsetSpecError(f"{option}: expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise OffsetSpecError(f"{option}: expected a positive integer, got {value}")
    return value


# -- read limits and planning --------------------------------------------------------------------------
def advance(start: Offsets, latest: Offsets) -> Offsets:
    """Where a batch may end: every queue of `start` and of `latest`, never behind `start`.

    A queue of `start` missing from `latest` (its broker is out of the route for a moment) keeps its
    offset, so it is neither dropped from the checkpoint nor read again from 0 later. A queue new in
    `latest` counts from 0 (RocketMQ queues start at 0; the Kafka source treats a new partition alike).
    """
    begin = from_offsets(start)
    values = dict(begin)
    for queue, offset in from_offsets(latest).items():
        values[queue] = max(offset, begin.get(queue, 0))
    return to_offsets(values)


def cap(start: Offsets, latest: Offsets, max_messages: int) -> Offsets:
    """The end of a batch holding at most `max_messages`, shared in proportion to each queue's backlog.

    Kafka's rate limit does the same. The remainder of the proportional shares goes to the queues with the
    largest backlog left (ties: key order), so the batch is exactly min(max_messages, backlog) messages
    and any backlog moves by at least one message. Queues missing from `start` count from 0.
    """
    begin = from_offsets(start)
    end = from_offsets(advance(start, latest))
    backlog = {q: e - begin.get(q, 0) for q, e in end.items()}
    total = sum(backlog.values())
    if total <= max_messages:
        return to_offsets(end)
    share = {q: backlog[q] * max_messages // total for q in backlog}
    left = max_messages - sum(share.values())
    for q in sorted(backlog, key=lambda q: (-(backlog[q] - share[q]), q))[:left]:
        share[q] += 1
    return to_offsets({q: begin.get(q, 0) + share[q] for q in end})


def plan(start: Offsets, end: Offsets) -> list[tuple[QueueKey, int, int]]:
    """(queue, from, until) for every queue with messages in [start, end), sorted; missing starts are 0."""
    begin = from_offsets(start)
    return [
        (queue, begin.get(queue, 0), until)
        for queue, until in sorted(from_offsets(end).items())
        if until > begin.get(queue, 0)
    ]


def count(start: Offsets, end: Offsets) -> int:
    return sum(until - since for _q, since, until in plan(start, end))


def split(
    ranges: list[tuple[QueueKey, int, int]], min_partitions: int | None
) -> list[tuple[QueueKey, int, int]]:
    """Ranges cut into at least `min_partitions` pieces, each queue in proportion to its size.

    As Kafka's KafkaOffsetRangeCalculator: nothing changes when there are enough ranges already; else a
    range gets max(1, round(size / total * min_partitions)) pieces of nearly equal size, in order.
    """
    total = sum(until - since for _q, since, until in ranges)
    if not min_partitions or len(ranges) >= min_partitions or total == 0:
        return ranges
    out = []
    for queue, since, until in ranges:
        size = until - since
        parts = max(1, min(size, round(size * min_partitions / total)))
        for i in range(parts):
            out.append((queue, since + size * i // parts, since + size * (i + 1) // parts))
    return out


def pack(
    ranges: list[tuple[QueueKey, int, int]], max_partitions: int | None
) -> list[list[tuple[QueueKey, int, int]]]:
    """Ranges grouped into at most `max_partitions` partitions of nearly equal message counts.

    Each Spark task has a fixed cost (a Python worker round trip, the reader unpickled, a connection),
    tens of milliseconds; many small queues cost more in tasks than in reading, as small files do for
    Spark's file sources (spark.sql.files.openCostInBytes). Largest range first into the partition
    holding fewest messages (LPT); each partition keeps its ranges in their planned order.
    """
    if not max_partitions or len(ranges) <= max_partitions:
        return [[r] for r in ranges]
    bins: list[list[int]] = [[] for _ in range(max_partitions)]
    loads = [0] * max_partitions
    for i in sorted(range(len(ranges)), key=lambda i: (-(ranges[i][2] - ranges[i][1]), i)):
        least = loads.index(min(loads))
        bins[least].append(i)
        loads[least] += ranges[i][2] - ranges[i][1]
    return [[ranges[i] for i in sorted(b)] for b in bins if b]
