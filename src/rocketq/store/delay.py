"""Delay levels and the redirect of a delayed put into SCHEDULE_TOPIC_XXXX (docs/protocol.md 4.8.4).

Port of ScheduleMessageService.parseDelayLevel/computeDeliverTimestamp and of the redirect in
CommitLog.putMessage (4.9.8): topic -> SCHEDULE_TOPIC_XXXX, queue id = level - 1, the real topic and
queue kept in REAL_TOPIC / REAL_QID, consume-queue tags code = delivery time. The broker performs the
redirect (this module gives it the helper); the store only passes the tags code through, and recomputes
it from DELAY and STORETIMESTAMP when it rebuilds a schedule queue from the commit log.
"""

from __future__ import annotations

from rocketq.common import constants as C
from rocketq.store.message import BrokerMessage

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class DelayLevels:
    """messageDelayLevel parsed: level n (1-based) -> delay in ms."""

    def __init__(self, spec: str = C.DEFAULT_DELAY_LEVELS) -> None:
        self.delays_ms: list[int] = []
        for word in spec.split():
            unit = word[-1:]
            if unit not in _UNIT_MS or not word[:-1].isdigit():
                raise ValueError(f"messageDelayLevel: {word!r} is not <number><s|m|h|d>")
            self.delays_ms.append(int(word[:-1]) * _UNIT_MS[unit])
        if not self.delays_ms:
            raise ValueError("messageDelayLevel has no level")

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def clamp(self, level: int) -> int:
        """A level above the maximum means the maximum (Java clamps the same way)."""
        return min(max(level, 1), self.max_level)

    def delay_ms(self, level: int) -> int:
        return self.delays_ms[self.clamp(level) - 1]

    def deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        return store_timestamp + self.delay_ms(level)

    def tags_code_from_properties(self, properties: dict[str, str], store_timestamp: int) -> int:
        """The schedule queue's tags code of a stored record (recomputed on rebuild)."""
        raw = properties.get(C.PROPERTY_DELAY_TIME_LEVEL)
        try:
            level = int(raw) if raw else 0
        except ValueError:
            level = 0
        return self.deliver_timestamp(level, store_timestamp) if level > 0 else store_timestamp


def redirect_to_schedule(msg: BrokerMessage, level: int, levels: DelayLevels, now_ms: int) -> BrokerMessage:
    """Rewrite `msg` (in place) into its delay queue; returns it.

    The original topic and queue go to REAL_TOPIC / REAL_QID, DELAY holds the clamped level, the queue
    is level - 1 of SCHEDULE_TOPIC_XXXX and the tags code is the delivery time.
    """
    level = levels.clamp(level)
    msg.properties[C.PROPERTY_REAL_TOPIC] = msg.topic
    msg.properties[C.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties[C.PROPERTY_DELAY_TIME_LEVEL] = str(level)
    msg.topic = C.RMQ_SYS_SCHEDULE_TOPIC
    msg.queue_id = level - 1
    msg.tags_code = levels.deliver_timestamp(level, now_ms)
    return msg
