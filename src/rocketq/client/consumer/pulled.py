"""The messages of a pull as views that get the pull's MIN_OFFSET / MAX_OFFSET when their properties are read.

Java's PullAPIWrapper.processPullResult puts MIN_OFFSET and MAX_OFFSET (the queue's offsets when the
broker answered) into the properties of every pulled message, so decoding each message's properties
just to add two entries was a fifth of the SDK's CPU per pulled message. A PulledMessageExt is a
LazyMessageExt (rocketq.common.record.lazy) with one field more: the pull's two offsets, as text;
the two entries are added when its properties are first decoded, so whoever reads them sees what
Java's consumer sees, and a listener that reads only the body never decodes them.
"""

from __future__ import annotations

from typing import Any

from rocketq.common import constants as C
from rocketq.common.message import Message
from rocketq.common.record.lazy import LazyMessageExt, decode_view_properties, lazy_field, views_of

_MIN, _MAX = C.PROPERTY_MIN_OFFSET, C.PROPERTY_MAX_OFFSET
# The properties slot itself, past the lazy descriptor: UNSET (rocketq.common.record.lazy) until decoded.
peek_properties = Message.__dict__["properties"].__get__


def _properties_with_offsets(msg: PulledMessageExt) -> dict[str, str]:
    props = decode_view_properties(msg)
    try:
        props[_MIN], props[_MAX] = msg._offsets
    except AttributeError:  # a view PullAPIWrapper.process did not see
        pass
    return props


class PulledMessageExt(LazyMessageExt):
    """A pulled message view whose properties, when decoded, hold the pull's MIN_OFFSET and MAX_OFFSET."""

    __slots__ = ("_offsets",)
    _offsets: tuple[str, str]  # (MIN_OFFSET, MAX_OFFSET) of the pull, set by PullAPIWrapper.process

    properties = lazy_field(Message.__dict__["properties"], _properties_with_offsets)


decode_pulled: Any = views_of(PulledMessageExt)
