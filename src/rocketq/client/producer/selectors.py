"""MessageQueueSelector: a producer's choice of queue for a message (orderly messages by key).

Port of org.apache.rocketmq.client.producer.selector.{SelectMessageQueueByHash,
SelectMessageQueueByRandom}. A selector is any callable `(mqs, msg, arg) -> MessageQueue`.
Deviation: Python's hash() of a str differs per process, so the hash selector uses Java's
String.hashCode for strings (stable across processes and equal to a Java producer's choice) and the
value itself for ints.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from rocketq.common.message import Message, MessageQueue
from rocketq.common.tags import java_hash_code

MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


def stable_hash(arg: Any) -> int:
    """Java's hashCode for str / int / bytes-like keys; Python hash() for anything else."""
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        # Integer.hashCode for ints that fit, Long.hashCode otherwise
        if -(2**31) <= arg < 2**31:
            return arg
        v = arg & 0xFFFFFFFFFFFFFFFF
        h = (v ^ (v >> 32)) & 0xFFFFFFFF
        return h - 2**32 if h & 0x80000000 else h
    if isinstance(arg, str):
        return java_hash_code(arg)
    if isinstance(arg, (bytes, bytearray)):
        return java_hash_code(bytes(arg).decode("latin-1"))
    return hash(arg)


class SelectMessageQueueByHash:
    """Same key, same queue: |hashCode(arg) % len(mqs)| (Java's arithmetic, sign included)."""

    def __call__(self, mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
        # Java: abs(h % n); the remainder truncates toward zero, so its magnitude is |h| mod n.
        return mqs[abs(stable_hash(arg)) % len(mqs)]


class SelectMessageQueueByRandom:
    """Any queue, uniformly."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def __call__(self, mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
        return mqs[self._rng.randrange(len(mqs))]
