"""The options of `format("rocketq")`, parsed and checked once, with Spark's Kafka source names and meaning.

Pure. Spark hands options over as a case-insensitive dict, but `dict(options)` lower-cases the keys, so
every look-up here is by lower-cased name. A Kafka `partition` is a message queue here, named
`<brokerName>:<queueId>` (docs/spark.md has the whole mapping). The checks follow Kafka's
KafkaSourceProvider#validateBatchOptions / #validateStreamOptions: an option that cannot be honoured
fails the query before any task runs, naming the option and the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.common.constants import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_topic
from rocketq.spark.client import DEFAULT_GROUP, DEFAULT_PULL_DEPTH, DEFAULT_TIMEOUT_MS
from rocketq.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    OffsetSpecError,
    QueueKey,
    parse_bool,
    parse_positive,
    parse_spec,
    parse_timestamp,
    parse_timestamps,
    parse_topics,
)

DEFAULT_PULL_BATCH_SIZE = 32  # the broker's maxTransferCountOnMessageInMemory default
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000  # Kafka's maxTriggerDelay default, 15m

# Documented in docs/spark.md. Our first names stay as aliases of Kafka's: topic = subscribe,
# maxMessagesPerTrigger = maxOffsetsPerTrigger.
SOURCE_OPTIONS = (
    "namesrv", "topic", "subscribe", "subscribePattern", "assign",
    "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "maxOffsetsPerTrigger", "maxMessagesPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "failOnDataLoss", "includeHeaders", "minPartitions", "maxPartitions",
    "pullBatchSize", "pullPipelineDepth", "group", "commitOffsetsToBroker", "timeoutMs",
)  # fmt: skip
ENDING_OPTIONS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def lowered(options: Mapping[str, Any]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def check_known(options: Mapping[str, str], known: tuple[str, ...], what: str) -> None:
    """An option nobody reads is a typo or a Kafka option we do not have: say so instead of ignoring it."""
    names = {n.lower(): n for n in known}
    unknown = sorted(k for k in options if k not in names)
    if unknown:
        raise OffsetSpecError(f"unknown {what} option(s) {', '.join(unknown)}; known: {', '.join(known)}")


def parse_duration_ms(option: str, text: str | None, default: int) -> int:
    """Kafka's maxTriggerDelay form: a number with an optional unit (ms, s, m, h, d; none = ms)."""
    if text is None or not text.strip():
        return default
    m = _DURATION.match(text)
    if not m:
        raise OffsetSpecError(f"{option}: expected a duration such as 15m, 30s or 500ms, got {text!r}")
    return int(m.group(1)) * _DURATION_MS[(m.group(2) or "ms").lower()]


@dataclass(frozen=True, slots=True)
class Subscription:
    """What is read: topics by name (subscribe), by pattern (subscribePattern) or queues (assign)."""

    kind: str  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[tuple[str, str], ...] = ()  # (topic, "<brokerName>:<queueId>" or "*:<queueId>")

    def matches(self, topic: str) -> bool:
        """subscribePattern: Java's Pattern#matches (the whole name), system and retry/DLQ topics left out."""
        if is_system_topic(topic) or topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            return False
        return re.fullmatch(self.pattern, topic) is not None

    def keeps(self, queue: QueueKey) -> bool:
        """assign: whether `queue` is one of the assigned ones (a bare queue id means that id on every broker)."""
        if self.kind != "assign":
            return True
        return (queue.topic, queue.key) in self.assigned or (
            queue.topic,
            f"*:{queue.queue_id}",
        ) in self.assigned

    @property
    def assigned_topics(self) -> tuple[str, ...]:
        return tuple(sorted({t for t, _k in self.assigned}))


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    given = [
        name for name in ("topic", "subscribe", "subscribePattern", "assign") if options.get(name.lower())
    ]
    if len(given) != 1:
        raise OffsetSpecError(
            "exactly one of the options 'subscribe' (or its alias 'topic'), 'subscribePattern' or 'assign' is "
            "required" + (f", got {', '.join(given)}" if given else "")
        )
    name = given[0]
    value = options[name.lower()]
    if name in ("topic", "subscribe"):
        return Subscription("subscribe", topics=tuple(parse_topics(value)))
    if name == "subscribePattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise OffsetSpecError(f"subscribePattern: {value!r} is not a regular expression: {exc}") from None
        return Subscription("subscribePattern", pattern=value)
    return Subscription("assign", assigned=_parse_assign(value))


def _parse_assign(text: str) -> tuple[tuple[str, str], ...]:
    """assign: {"topic": ["broker-a:0", "broker-b:1", 2]}; a bare integer is that queue id on every broker."""
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if (
        not isinstance(parsed, dict)
        or not parsed
        or not all(isinstance(v, list) and v for v in parsed.values())
    ):
        raise OffsetSpecError(
            f'assign: expected JSON like {{"topicA": ["broker-a:0", "broker-b:1"], "topicB": [0]}}, got {text!r}'
        )
    out = set()
    for topic, queues in parsed.items():
        for q in queues:
            if isinstance(q, int) and not isinstance(q, bool) and q >= 0:
                out.add((str(topic), f"*:{q}"))
            elif isinstance(q, str):
                out.add((str(topic), QueueKey.parse(str(topic), q).key))
            else:
                raise OffsetSpecError(
                    f"assign: queue {q!r} of topic {topic!r} is not '<brokerName>:<queueId>' or an id"
                )
    return tuple(sorted(out))


def _starting(options: Mapping[str, str]) -> OffsetSpec:
    """Kafka's precedence: startingTimestamp > startingOffsetsByTimestamp > startingOffsets."""
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OffsetSpecError(
            f"startingOffsetsByTimestampStrategy: expected error or latest, got {strategy!r}"
        )
    strict = strategy == "error"
    if "startingtimestamp" in options:
        return parse_timestamp("startingTimestamp", options["startingtimestamp"], strict=strict)
    if "startingoffsetsbytimestamp" in options:
        return parse_timestamps(
            "startingOffsetsByTimestamp", options["startingoffsetsbytimestamp"], strict=strict
        )
    return parse_spec("startingOffsets", options.get("startingoffsets"), "earliest")


def _ending(options: Mapping[str, str]) -> OffsetSpec:
    """endingTimestamp > endingOffsetsByTimestamp > endingOffsets; a time without a later message = the end."""
    if "endingtimestamp" in options:
        return parse_timestamp("endingTimestamp", options["endingtimestamp"], strict=False)
    if "endingoffsetsbytimestamp" in options:
        return parse_timestamps("endingOffsetsByTimestamp", options["endingoffsetsbytimestamp"], strict=False)
    return parse_spec("endingOffsets", options.get("endingoffsets"), "latest")


def _check_batch(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest" or (
        starting.kind == "offsets" and LATEST in (starting.offsets or {}).values()
    ):
        raise OffsetSpecError(
            "startingOffsets: 'latest' (-1) is not valid for batch queries (the read would be empty)"
        )
    if ending.kind == "earliest" or (
        ending.kind == "offsets" and EARLIEST in (ending.offsets or {}).values()
    ):
        raise OffsetSpecError("endingOffsets: 'earliest' (-2) is not valid for batch queries")


@dataclass(frozen=True, slots=True)
class SourceOptions:
    namesrv: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None  # None for streaming queries
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_partitions: int | None
    pull_batch_size: int
    pull_depth: int
    group: str
    commit_offsets: bool
    timeout_ms: int

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics named by subscribe or assign (empty for a pattern: they come from the NameServer)."""
        return self.subscription.topics or self.subscription.assigned_topics

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, streaming: bool = False) -> SourceOptions:
        opts = lowered(options)
        check_known(opts, SOURCE_OPTIONS, "source")
        namesrv = opts.get("namesrv", "").strip()
        if not namesrv:
            raise OffsetSpecError("option 'namesrv' is required: 'host:port' or 'host:port;host:port'")
        if "maxoffsetspertrigger" in opts and "maxmessagespertrigger" in opts:
            raise OffsetSpecError("give maxOffsetsPerTrigger or its alias maxMessagesPerTrigger, not both")
        max_name = "maxOffsetsPerTrigger" if "maxoffsetspertrigger" in opts else "maxMessagesPerTrigger"
        starting = _starting(opts)
        ending: OffsetSpec | None = None
        if streaming:
            given = [n for n in ENDING_OPTIONS if n.lower() in opts]
            if given:
                raise OffsetSpecError(f"{given[0]} is not valid in streaming queries (a stream has no end)")
        else:
            ending = _ending(opts)
            _check_batch(starting, ending)
        max_per = parse_positive(max_name, opts.get(max_name.lower()), None)
        min_per = parse_positive("minOffsetsPerTrigger", opts.get("minoffsetspertrigger"), None)
        if max_per is not None and min_per is not None and min_per > max_per:
            raise OffsetSpecError(
                f"minOffsetsPerTrigger ({min_per}) is greater than maxOffsetsPerTrigger ({max_per})"
            )
        min_parts = parse_positive("minPartitions", opts.get("minpartitions"), None)
        max_parts = parse_positive("maxPartitions", opts.get("maxpartitions"), None)
        if min_parts is not None and max_parts is not None and min_parts > max_parts:
            raise OffsetSpecError(f"minPartitions ({min_parts}) is greater than maxPartitions ({max_parts})")
        return cls(
            namesrv=namesrv,
            subscription=parse_subscription(opts),
            starting=starting,
            ending=ending,
            max_offsets_per_trigger=max_per,
            min_offsets_per_trigger=min_per,
            max_trigger_delay_ms=parse_duration_ms(
                "maxTriggerDelay", opts.get("maxtriggerdelay"), DEFAULT_MAX_TRIGGER_DELAY_MS
            ),
            fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failondataloss"), True),
            include_headers=parse_bool("includeHeaders", opts.get("includeheaders"), False),
            min_partitions=min_parts,
            max_partitions=max_parts,
            pull_batch_size=parse_positive(
                "pullBatchSize", opts.get("pullbatchsize"), DEFAULT_PULL_BATCH_SIZE
            )
            or DEFAULT_PULL_BATCH_SIZE,
            pull_depth=parse_positive("pullPipelineDepth", opts.get("pullpipelinedepth"), DEFAULT_PULL_DEPTH)
            or DEFAULT_PULL_DEPTH,
            group=(opts.get("group") or DEFAULT_GROUP).strip(),
            commit_offsets=parse_bool("commitOffsetsToBroker", opts.get("commitoffsetstobroker"), False),
            timeout_ms=parse_positive("timeoutMs", opts.get("timeoutms"), DEFAULT_TIMEOUT_MS)
            or DEFAULT_TIMEOUT_MS,
        )
