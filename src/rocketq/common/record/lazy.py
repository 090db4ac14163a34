"""Records decoded lazily: the messages of a pull body as views that decode a field when it is first read.

Java's MessageDecoder.decodes builds every field of every message up front; a consumer that reads
only the body (or only the tags) pays for all of them. Here the fixed fields are read with one
unpack and every length is checked against the buffer at once (so the list stops at a truncated
record exactly where the eager decoder stops), while the body, the properties, the two hosts and
the offset msgId are decoded on first access and kept. The messages are MessageExt instances (a
subclass): code that reads or assigns any field sees what the eager decoder gives.

A field that turns out not to decode when it is read (properties that are not UTF-8, a zlib body
that does not inflate) raises RecordDecodeError naming the record by its commit-log offset and its
position in the body; no field is ever guessed. A view keeps the whole body alive until its lazy
fields are all read (or the message is dropped).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

from rocketq.common.message import Message, MessageExt
from rocketq.common.record.accel import compiled
from rocketq.common.record.codec import decompress_body
from rocketq.common.record.layout import (
    COMPRESSED_FLAG,
    INT,
    LAYOUTS,
    MAX_TOPIC_BYTES,
    SHORT,
    SYSFLAG_POS,
    V6_SHIFT,
    RecordDecodeError,
    store_host_of,
    unpack_host,
)
from rocketq.common.record.properties import decode_properties

_TOPICS: dict[bytes, str] = {}
_TOPICS_KEPT = 4096


def _topic(raw: bytes) -> str:
    topic = _TOPICS.get(raw)
    if topic is None:
        topic = raw.decode("utf-8")
        if len(_TOPICS) < _TOPICS_KEPT:
            _TOPICS[raw] = topic
    return topic


def scan_record_py(buf: Any, pos: int) -> tuple[Any, ...]:
    """The fixed fields of the record at `pos` and where its variable ones lie, every length checked.

    Returns (TOTALSIZE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP,
    born ip bytes, born port, STORETIMESTAMP, store ip bytes, store port, RECONSUMETIMES,
    PREPAREDTRANSACTIONOFFSET, body start, body length, topic, properties start, properties length,
    the position after the record). Raises RecordDecodeError where decode_record would fail.
    """
    try:
        return _scan(buf, pos)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise RecordDecodeError(f"malformed record at {pos}: {exc}") from None


def _scan(buf: Any, pos: int) -> tuple[Any, ...]:
    (sys_flag,) = INT.unpack_from(buf, pos + SYSFLAG_POS)
    layout = LAYOUTS[(sys_flag >> V6_SHIFT) & 3]
    f = layout.unpack_from(buf, pos)
    body_len = f[16]
    body_at = pos + layout.size
    p = body_at + body_len
    end = len(buf)
    if body_len < 0 or p > end:
        raise RecordDecodeError(f"record at {pos}: body length {body_len} runs past the buffer")
    topic_len = buf[p]
    if topic_len > MAX_TOPIC_BYTES:
        raise RecordDecodeError(f"record at {pos}: negative topic length")
    p += 1
    if p + topic_len > end:
        raise RecordDecodeError(f"record at {pos}: topic runs past the buffer")
    topic = _topic(bytes(buf[p : p + topic_len]))
    p += topic_len
    (props_len,) = SHORT.unpack_from(buf, p)
    p += 2
    if props_len > 0:
        if p + props_len > end:
            raise RecordDecodeError(f"record at {pos}: properties run past the buffer")
    else:
        props_len = 0
    return (
        f[0], f[2], f[3], f[4], f[5], f[6], sys_flag, f[8], f[9], f[10], f[11], f[12], f[13], f[14], f[15],
        body_at, body_len, topic, p, props_len, p + props_len,
    )  # fmt: skip


# What a view's lazy slots hold until their field is first read.
UNSET: Any = type("Unset", (), {"__slots__": (), "__repr__": lambda self: "<not decoded yet>"})()


class _DecodedOnFirstRead:
    """A field of LazyMessageExt: the parent's slot holds UNSET until the field is first read, when
    `decode` decodes it from the record; then (or once assigned) the slot holds the value."""

    __slots__ = ("decode", "get", "set")

    def __init__(self, slot: Any, decode: Callable[[Any], Any]) -> None:
        self.get = slot.__get__
        self.set = slot.__set__
        self.decode = decode

    def __get__(self, msg: Any, owner: type | None = None) -> Any:
        if msg is None:
            return self
        value = self.get(msg)
        if value is UNSET:
            value = self.decode(msg)
            self.set(msg, value)
        return value

    def __set__(self, msg: Any, value: Any) -> None:
        self.set(msg, value)


def _field(slot: Any, decode: Callable[[Any], Any], compiled_decode: str = "") -> Any:
    if compiled is not None:
        return compiled.DecodedOnFirstRead(slot, getattr(compiled, compiled_decode, decode), UNSET)
    return _DecodedOnFirstRead(slot, decode)


# A view's _raw: where its lazy fields lie. (body, record start, body start, body length,
# properties start, properties length, born ip bytes, born port, store ip bytes, store port)
_BUF, _POS, _BODY_AT, _BODY_LEN, _PROPS_AT, _PROPS_LEN, _BORN_IP, _BORN_PORT, _STORE_IP, _STORE_PORT = range(
    10
)


def _where(msg: LazyMessageExt) -> str:
    return f"record at commit-log offset {msg.commit_log_offset} (byte {msg._raw[_POS]} of its body)"


def _decode_body(msg: LazyMessageExt) -> bytes:
    raw = msg._raw
    at = raw[_BODY_AT]
    body = bytes(raw[_BUF][at : at + raw[_BODY_LEN]])
    if msg.sys_flag & COMPRESSED_FLAG and body:
        try:
            body = decompress_body(body, msg.sys_flag)
        except RecordDecodeError as exc:
            raise RecordDecodeError(f"{_where(msg)}: {exc}") from None
    return body


def _decode_properties(msg: LazyMessageExt) -> dict[str, str]:
    raw = msg._raw
    size = raw[_PROPS_LEN]
    if not size:
        return {}
    at = raw[_PROPS_AT]
    try:
        text = bytes(raw[_BUF][at : at + size]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordDecodeError(f"{_where(msg)}: properties are not UTF-8: {exc}") from None
    return decode_properties(text)


def _decode_born_host(msg: LazyMessageExt) -> tuple[str, int]:
    return unpack_host(msg._raw[_BORN_IP]), msg._raw[_BORN_PORT]


def _decode_store_host(msg: LazyMessageExt) -> tuple[str, int]:
    return store_host_of(msg._raw[_STORE_IP], msg._raw[_STORE_PORT])[0]


def _decode_offset_msg_id(msg: LazyMessageExt) -> str:
    prefix = store_host_of(msg._raw[_STORE_IP], msg._raw[_STORE_PORT])[1]
    return prefix + f"{msg.commit_log_offset & 0xFFFFFFFFFFFFFFFF:016X}"


class LazyMessageExt(MessageExt):
    """A MessageExt whose body, properties, hosts and offset msgId are decoded from the record on first read."""

    __slots__ = ("_raw",)
    _raw: tuple[Any, ...]  # where the lazy fields lie in the body (see _BUF .. _STORE_PORT)

    body = _field(Message.__dict__["body"], _decode_body, "lazy_body")
    properties = _field(Message.__dict__["properties"], _decode_properties, "lazy_properties")
    born_host = _field(MessageExt.__dict__["born_host"], _decode_born_host)
    store_host = _field(MessageExt.__dict__["store_host"], _decode_store_host)
    offset_msg_id = _field(MessageExt.__dict__["offset_msg_id"], _decode_offset_msg_id)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickle and copy as the plain MessageExt it stands for (every field decoded), not the body it views.
        return _plain_message, ({name: getattr(self, name) for name in _FIELDS},)


_FIELDS = (*Message.__slots__, *MessageExt.__slots__)
_unset_body = Message.__dict__["body"].__set__
_unset_properties = Message.__dict__["properties"].__set__
_unset_born_host = MessageExt.__dict__["born_host"].__set__
_unset_store_host = MessageExt.__dict__["store_host"].__set__
_unset_offset_msg_id = MessageExt.__dict__["offset_msg_id"].__set__


def _plain_message(values: dict[str, Any]) -> MessageExt:
    msg = MessageExt.__new__(MessageExt)
    for name, value in values.items():
        setattr(msg, name, value)
    return msg


def _new_view(
    buf: Any, pos: int, f: tuple[Any, ...], cls: type[LazyMessageExt] = LazyMessageExt
) -> LazyMessageExt:
    msg = cls.__new__(cls)
    (
        msg.store_size, msg.body_crc, msg.queue_id, msg.flag, msg.queue_offset, msg.commit_log_offset,
        msg.sys_flag, msg.born_timestamp, born_ip, born_port, msg.store_timestamp, store_ip, store_port,
        msg.reconsume_times, msg.prepared_transaction_offset, body_at, body_len, msg.topic,
        props_at, props_len, _,
    ) = f  # fmt: skip
    msg._raw = (buf, pos, body_at, body_len, props_at, props_len, born_ip, born_port, store_ip, store_port)
    _unset_body(msg, UNSET)
    _unset_properties(msg, UNSET)
    _unset_born_host(msg, UNSET)
    _unset_store_host(msg, UNSET)
    _unset_offset_msg_id(msg, UNSET)
    msg.transaction_id = None
    msg.broker_name = ""
    return msg


def _decode_records_lazy(
    body: bytes | bytearray | memoryview, cls: type[LazyMessageExt] = LazyMessageExt
) -> list[MessageExt]:
    """decode_records as views: the same messages (stopping at the same record), each field decoded on first read."""
    out: list[MessageExt] = []
    pos = 0
    end = len(body)
    while pos < end:
        try:
            f = scan_record_py(body, pos)
        except RecordDecodeError:
            break
        out.append(_new_view(body, pos, f, cls))
        pos = f[20]
    return out


scan_record = compiled.scan_record if compiled is not None else scan_record_py


def scan_records(body: bytes | bytearray | memoryview) -> list[tuple[Any, ...]]:
    """scan_record of every record of `body`, stopping where decode_records_lazy stops: the records
    as field tuples, for a reader that builds its own columns without a view per message."""
    out: list[tuple[Any, ...]] = []
    pos = 0
    end = len(body)
    scan = scan_record
    while pos < end:
        try:
            f = scan(body, pos)
        except RecordDecodeError:
            break
        out.append(f)
        pos = f[20]
    return out


def views_of(cls: type[LazyMessageExt]) -> Callable[[bytes | bytearray | memoryview], list[MessageExt]]:
    """decode_records_lazy making views of `cls`, a subclass of LazyMessageExt (with lazy fields of its
    own: lazy_field), compiled or pure as decode_records_lazy is."""
    if compiled is not None:
        return functools.partial(compiled.decode_records_lazy, cls, UNSET)
    return functools.partial(_decode_records_lazy, cls=cls)


def lazy_field(slot: Any, decode: Callable[[Any], Any]) -> Any:
    """A field of a LazyMessageExt subclass decoded on first read: `slot` (the member descriptor of the
    field's slot) holds UNSET until then, when `decode(msg)` makes the value (compiled descriptor or pure)."""
    return _field(slot, decode)


if compiled is not None:
    compiled.set_fallbacks(_decode_body, _decode_properties)
decode_records_lazy = views_of(LazyMessageExt)
# A view's properties decoded from its record (what the properties field does on first read, without
# storing them): for a subclass's own properties field that adds to them.
decode_view_properties: Callable[[Any], dict[str, str]] = (
    _decode_properties if compiled is None else compiled.lazy_properties
)
