"""The put side of timer messages: read the requested delivery time, park the message in the timer topic.

Port of RocketMQ 5 HookUtils.checkIfTimerMessage / transformTimerMessage. A message asks for a time with
TIMER_DELAY_SEC, TIMER_DELAY_MS (relative) or TIMER_DELIVER_MS / __STARTDELIVERTIME (absolute epoch ms,
the SDK's `deliver_time_ms`). A message that also has a delay level is a delay message (its timer
properties are dropped, as in RocketMQ 5); one already parked (TIMER_OUT_MS) is not parked again; a time
not in the future means "deliver now" (stored as is); a time more than the maximum delay away is
refused. Deviation: the time is not rounded down to timerPrecisionMs (see service.py).
"""

from __future__ import annotations

from typing import Final

from rocketq.common import constants as C
from rocketq.common.errors import RocketQError
from rocketq.store.message import BrokerMessage

TIMER_TOPIC: Final = C.RMQ_SYS_WHEEL_TIMER
PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
PROPERTY_TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
REQUEST_PROPERTIES: Final = (
    C.PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELAY_MS,
    C.PROPERTY_TIMER_DELIVER_MS,
    C.PROPERTY_START_DELIVER_TIME,
)


class TimerMessageIllegal(RocketQError, ValueError):
    """A timer message the broker refuses (answered MESSAGE_ILLEGAL with this text)."""


def is_timer_request(properties: dict[str, str]) -> bool:
    return not properties.keys().isdisjoint(REQUEST_PROPERTIES)  # every put asks: one C-level test


def requested_deliver_ms(properties: dict[str, str], now_ms: int) -> int | None:
    """The absolute delivery time a message asks for, or None when it asks for none."""
    try:
        if C.PROPERTY_TIMER_DELAY_SEC in properties:
            return now_ms + int(properties[C.PROPERTY_TIMER_DELAY_SEC]) * 1000
        if PROPERTY_TIMER_DELAY_MS in properties:
            return now_ms + int(properties[PROPERTY_TIMER_DELAY_MS])
        for name in (C.PROPERTY_TIMER_DELIVER_MS, C.PROPERTY_START_DELIVER_TIME):
            if name in properties:
                return int(properties[name])
    except ValueError:
        raw = {k: properties[k] for k in REQUEST_PROPERTIES if k in properties}
        raise TimerMessageIllegal(f"timer message illegal: the delivery time {raw} is not a number") from None
    return None


def drop_timer_request(properties: dict[str, str]) -> None:
    """A delay level wins over a timer (RocketMQ 5): forget the timer properties."""
    for name in REQUEST_PROPERTIES:
        properties.pop(name, None)


def redirect_to_timer(msg: BrokerMessage, now_ms: int, max_delay_ms: int) -> bool:
    """Park `msg` (in place) in the timer topic when it asks for a future time; False when it is not parked.

    Raises TimerMessageIllegal for a time that is not a number or further away than `max_delay_ms`.
    """
    props = msg.properties
    if msg.topic == TIMER_TOPIC or PROPERTY_TIMER_OUT_MS in props:
        return False
    deliver_ms = requested_deliver_ms(props, now_ms)
    if deliver_ms is None or deliver_ms <= now_ms:
        return False
    if deliver_ms - now_ms > max_delay_ms:
        raise TimerMessageIllegal(
            f"timer message illegal: the delivery time is {deliver_ms - now_ms} ms away, more than the maximum "
            f"delay of {max_delay_ms} ms (timerMaxDelaySec {max_delay_ms // 1000})"
        )
    props[PROPERTY_TIMER_OUT_MS] = str(deliver_ms)
    props[C.PROPERTY_REAL_TOPIC] = msg.topic
    props[C.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.topic = TIMER_TOPIC
    msg.queue_id = 0
    msg.tags_code = deliver_ms
    return True
