"""Timer messages: an absolute delivery time, beyond RocketMQ 4.x's delay levels.

`redirect_to_timer` (the put side, called by the broker's send path) parks a message in the timer
topic; `TimerMessageService` delivers parked messages when due, keeping pending ones on disk by window
of delivery time (`TimerBucketLog`).
"""

from rocketq.store.timer.bucket_log import TimerBucketLog, TimerEntry
from rocketq.store.timer.redirect import (
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_TOPIC,
    TimerMessageIllegal,
    drop_timer_request,
    is_timer_request,
    redirect_to_timer,
    requested_deliver_ms,
)
from rocketq.store.timer.service import TimerMessageService

__all__ = [
    "PROPERTY_TIMER_DELAY_MS",
    "PROPERTY_TIMER_DEQUEUE_MS",
    "PROPERTY_TIMER_OUT_MS",
    "TIMER_TOPIC",
    "TimerBucketLog",
    "TimerEntry",
    "TimerMessageIllegal",
    "TimerMessageService",
    "drop_timer_request",
    "is_timer_request",
    "redirect_to_timer",
    "requested_deliver_ms",
]
