"""The messages of a pull as views that get the properties the SDK adds when their properties are read.

Java's PullAPIWrapper.processPullResult puts MIN_OFFSET and MAX_OFFSET (the queue's offsets when the
broker answered) into the properties of every pulled message, and ConsumeMessageConcurrentlyService puts
CONSUME_START_TIME into each message it hands to the listener, so decoding each message's properties
just to add those entries was a fifth of the SDK's CPU per pulled message. A PulledMessageExt is a
LazyMessageExt (rocketq.common.record.lazy) with one field more: the entries added before its properties
were read, applied in order when they are first decoded, so whoever reads them sees what Java's consumer
sees, and a listener that reads only the body never decodes them.
"""

from __future__ import annotations

from typing import Any

from rocketq.common.message import Message, MessageExt
from rocketq.common.record.accel import compiled
from rocketq.common.record.lazy import UNSET, LazyMessageExt, decode_view_properties, lazy_field, views_of

# The properties slot itself, past the lazy descriptor: UNSET until decoded.
peek_properties = Message.__dict__["properties"].__get__


def _properties_with_later(msg: PulledMessageExt) -> dict[str, str]:
    props = decode_view_properties(msg)
    try:
        later = msg._later
    except AttributeError:  # a view nothing was added to
        return props
    # A loop over the few pairs: fewer instructions than dict.update(zip(it, it)) (callgrind, 2 or 3 pairs)
    for i in range(0, len(later), 2):
        props[later[i]] = later[i + 1]
    return props


class PulledMessageExt(LazyMessageExt):
    """A pulled message view whose properties, when decoded, get the entries added while they were not."""

    __slots__ = ("_later",)
    _later: tuple[str, ...]  # name, value, name, value ... in the order they were added

    properties = lazy_field(
        Message.__dict__["properties"],
        _properties_with_later if compiled is None else compiled.lazy_properties_later,
    )


decode_pulled: Any = views_of(PulledMessageExt)


def add_properties(msgs: list[MessageExt], *entries: str) -> None:
    """`msg.properties[name] = value` for each (name, value) of `entries` and each message, in that order;
    a view whose properties were not read yet keeps them for its first read instead of decoding now."""
    peek = peek_properties
    pairs = list(zip(entries[::2], entries[1::2], strict=True))
    for msg in msgs:
        if type(msg) is PulledMessageExt and peek(msg) is UNSET:
            try:
                msg._later += entries
            except AttributeError:
                msg._later = entries
            continue
        props = msg.properties
        for name, value in pairs:
            props[name] = value
