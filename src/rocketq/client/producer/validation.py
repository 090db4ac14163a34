"""Checks a message must pass before any network call, and the body/properties a send puts on the wire.

Port of org.apache.rocketmq.client.Validators.checkMessage / checkTopic and of the compression step of
DefaultMQProducerImpl.sendKernelImpl (4.9.8). Deviations: tags are checked too (a tag holding "||" or
the property separators U+0001/U+0002 could never be matched by a subscription, so it is refused here
rather than lost silently), and a compressed body is used only when it is smaller than the original.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from rocketq.client.errors import MessageIllegalError
from rocketq.common import constants as C
from rocketq.common.message import Message
from rocketq.common.record.layout import MAX_PROPERTIES_BYTES
from rocketq.common.record.properties import encode_properties

_WAIT = C.PROPERTY_WAIT_STORE_MSG_OK
_DELAY_PROPERTIES = frozenset(
    {C.PROPERTY_DELAY_TIME_LEVEL, C.PROPERTY_TIMER_DELIVER_MS, C.PROPERTY_START_DELIVER_TIME}
)
_FORBIDDEN_CHARS = (C.NAME_VALUE_SEPARATOR, C.PROPERTY_SEPARATOR)


_VALID_TOPICS: set[str] = set()  # names already checked (a producer sends to few topics, many times)


def check_topic(topic: str) -> None:
    if topic in _VALID_TOPICS:
        return
    problem = C.topic_name_problem(topic)
    if problem is not None:
        raise MessageIllegalError(problem)
    if topic in C.NOT_ALLOWED_SEND_TOPICS:
        raise MessageIllegalError(f"sending to the system topic {topic!r} is not allowed")
    if len(_VALID_TOPICS) < 10_000:
        _VALID_TOPICS.add(topic)


def check_message(msg: Message, max_body_bytes: int) -> None:
    """MessageIllegalError naming what is wrong: topic, body (empty or too large), tag, properties."""
    if not isinstance(msg, Message):
        raise MessageIllegalError(f"a Message is needed, not {type(msg).__name__}")
    check_topic(msg.topic)
    if not isinstance(msg.body, (bytes, bytearray, memoryview)):
        raise MessageIllegalError(f"the message body must be bytes, not {type(msg.body).__name__}")
    if len(msg.body) == 0:
        raise MessageIllegalError("the message body length is zero")
    if len(msg.body) > max_body_bytes:
        raise MessageIllegalError(
            f"the message body size {len(msg.body)} is over the maximum {max_body_bytes}"
        )
    tag = msg.tags
    if tag is not None:
        if not tag.strip():
            raise MessageIllegalError("the tag is blank")
        if "||" in tag:
            raise MessageIllegalError(f"the tag {tag!r} contains '||', the subscription separator")
    props = msg.properties
    if props:
        for key, value in props.items():
            if (
                _FORBIDDEN_CHARS[0] in key
                or _FORBIDDEN_CHARS[0] in value
                or _FORBIDDEN_CHARS[1] in key
                or _FORBIDDEN_CHARS[1] in value
            ):
                raise MessageIllegalError(f"the property {key!r} contains a control character U+0001/U+0002")
        if C.PROPERTY_DELAY_TIME_LEVEL in props and msg.delay_level < 0:
            raise MessageIllegalError(f"the delay level {msg.delay_level} is negative")


def check_batch(msgs: Sequence[Message], max_body_bytes: int) -> str:
    """The common topic of a batch after checking every message (same topic and WAIT, no delay)."""
    if not msgs:
        raise MessageIllegalError("a batch needs at least one message")
    topic = msgs[0].topic
    wait = msgs[0].properties.get(_WAIT, "true") != "false"
    for msg in msgs:
        check_message(msg, max_body_bytes)
        if msg.topic != topic:
            raise MessageIllegalError(f"a batch holds one topic; found {topic!r} and {msg.topic!r}")
        if msg.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
            raise MessageIllegalError("retry topics cannot be sent in a batch")
        props = msg.properties
        # Only a message carrying one of these properties can be delayed (one C-level test per message).
        if not props.keys().isdisjoint(_DELAY_PROPERTIES) and (msg.delay_level > 0 or msg.deliver_time_ms):
            raise MessageIllegalError("delayed messages cannot be sent in a batch")
        if (props.get(_WAIT, "true") != "false") != wait:
            raise MessageIllegalError("all messages of a batch need the same wait_store_msg_ok")
    return topic


def properties_string(props: dict[str, str]) -> str:
    text = encode_properties(props)
    # A character takes at most 3 UTF-8 bytes here (U+FFFF and below; 4 for a surrogate pair of 2 chars).
    if len(text) * 3 > MAX_PROPERTIES_BYTES and len(text.encode("utf-8")) > MAX_PROPERTIES_BYTES:
        raise MessageIllegalError(f"the properties are longer than {MAX_PROPERTIES_BYTES} bytes")
    return text


def maybe_compress(body: bytes, threshold: int, level: int) -> tuple[bytes, int]:
    """(body to send, sys flag bits): zlib (COMPRESSED | ZLIB type) for bodies >= threshold when smaller."""
    if len(body) < threshold:
        return body, 0
    packed = zlib.compress(body, level)
    if len(packed) >= len(body):
        return body, 0
    return packed, C.MessageSysFlag.COMPRESSED_FLAG | C.MessageSysFlag.COMPRESSION_ZLIB_TYPE
