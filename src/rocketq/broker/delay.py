"""Delay levels and the redirect of a delayed message into SCHEDULE_TOPIC_XXXX.

Port of the put-side half of Java's delay handling: CommitLog.asyncPutMessage's redirect (level capped
at the maximum, topic SCHEDULE_TOPIC_XXXX, queue level-1, REAL_TOPIC / REAL_QID kept in the properties)
and ScheduleMessageService.parseDelayLevel / computeDeliverTimestamp (the consume-queue tag code of a
scheduled message is its delivery time). Delivery back to the real topic is the store's schedule
service (a later issue); `DelayLevelTable` is what both sides agree on. Deviation: Java computes the
tag code at dispatch from the store time; the broker computes it at put time from its own clock, which
is the same instant within the append's latency.
"""

from __future__ import annotations

from rocketq.common import constants as C
from rocketq.store.message import BrokerMessage

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> list[int]:
    """Delay of each level in ms ("1s 5s 10s ..." -> [1000, 5000, 10000, ...]); ValueError names the bad one."""
    delays: list[int] = []
    for token in spec.split():
        unit = _UNIT_MS.get(token[-1:])
        number = token[:-1]
        if unit is None or not number.isdigit():
            raise ValueError(f"delay level {token!r} is not a number followed by s, m, h or d")
        delays.append(int(number) * unit)
    if not delays:
        raise ValueError("messageDelayLevel has no levels")
    return delays


class DelayLevelTable:
    """Levels 1..max and their delays."""

    __slots__ = ("_delays",)

    def __init__(self, spec: str = C.DEFAULT_DELAY_LEVELS) -> None:
        self._delays = parse_delay_levels(spec)

    @property
    def max_level(self) -> int:
        return len(self._delays)

    def delay_ms(self, level: int) -> int:
        return self._delays[min(max(level, 1), self.max_level) - 1]

    def deliver_timestamp(self, level: int, store_timestamp_ms: int) -> int:
        return store_timestamp_ms + self.delay_ms(level)


def redirect_to_schedule_topic(msg: BrokerMessage, level: int, table: DelayLevelTable, now_ms: int) -> None:
    """Turn `msg` into its scheduled form in place (level already known to be > 0)."""
    if level > table.max_level:
        level = table.max_level
        msg.properties[C.PROPERTY_DELAY_TIME_LEVEL] = str(level)
    msg.properties[C.PROPERTY_REAL_TOPIC] = msg.topic
    msg.properties[C.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.topic = C.RMQ_SYS_SCHEDULE_TOPIC
    msg.queue_id = level - 1
    msg.tags_code = table.deliver_timestamp(level, now_ms)


def delay_level_of(properties: dict[str, str]) -> int:
    """The DELAY property as an int; 0 when absent or not a number (Java: Integer.parseInt fails -> 0)."""
    raw = properties.get(C.PROPERTY_DELAY_TIME_LEVEL)
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0
