"""The options of `format("rocketq")`, parsed once (names as Spark's Kafka source spells them where they fit).

Pure. Spark hands options over as a case-insensitive dict, but `dict(options)` lower-cases the keys
(spark-notes G4), so every look-up here tries the documented spelling and the lower-cased one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketq.spark.client import DEFAULT_GROUP, DEFAULT_TIMEOUT_MS
from rocketq.spark.offsets import (
    OffsetSpec,
    OffsetSpecError,
    parse_bool,
    parse_positive,
    parse_spec,
    parse_topics,
)

DEFAULT_PULL_BATCH_SIZE = 32  # the broker's maxTransferCountOnMessageInMemory default
DEFAULT_PULL_DEPTH = 4

# Documented in docs/spark.md; other options are ignored, as Spark's own sources do.
KNOWN_OPTIONS = frozenset(
    name.lower()
    for name in (
        "namesrv", "topic", "startingOffsets", "endingOffsets", "maxMessagesPerTrigger", "failOnDataLoss",
        "pullBatchSize", "pullPipelineDepth", "group", "commitOffsetsToBroker", "timeoutMs",
    )
)  # fmt: skip


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name)
    if value is None:
        value = options.get(name.lower())
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class SourceOptions:
    namesrv: str
    topics: tuple[str, ...]
    starting: OffsetSpec
    ending: OffsetSpec
    max_messages_per_trigger: int | None
    fail_on_data_loss: bool
    pull_batch_size: int
    pull_depth: int
    group: str
    commit_offsets: bool
    timeout_ms: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        namesrv = (_get(options, "namesrv") or "").strip()
        if not namesrv:
            raise OffsetSpecError("option 'namesrv' is required: 'host:port' or 'host:port;host:port'")
        group = (_get(options, "group") or DEFAULT_GROUP).strip()
        return cls(
            namesrv=namesrv,
            topics=tuple(parse_topics(_get(options, "topic"))),
            starting=parse_spec("startingOffsets", _get(options, "startingOffsets"), "earliest"),
            ending=parse_spec("endingOffsets", _get(options, "endingOffsets"), "latest"),
            max_messages_per_trigger=parse_positive("maxMessagesPerTrigger", _get(options, "maxMessagesPerTrigger"), None),
            fail_on_data_loss=parse_bool("failOnDataLoss", _get(options, "failOnDataLoss"), True),
            pull_batch_size=parse_positive("pullBatchSize", _get(options, "pullBatchSize"), DEFAULT_PULL_BATCH_SIZE)
            or DEFAULT_PULL_BATCH_SIZE,
            pull_depth=parse_positive("pullPipelineDepth", _get(options, "pullPipelineDepth"), DEFAULT_PULL_DEPTH)
            or DEFAULT_PULL_DEPTH,
            group=group,
            commit_offsets=parse_bool("commitOffsetsToBroker", _get(options, "commitOffsetsToBroker"), False),
            timeout_ms=parse_positive("timeoutMs", _get(options, "timeoutMs"), DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS,
        )
