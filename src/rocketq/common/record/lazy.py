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


class _DecodedOnFirstRead:
    """A field of LazyMessageExt: kept in the parent's slot once decoded (or assigned), decoded from
    the record by `decode` on the first read before that."""

    __slots__ = ("decode", "slot")

    def __init__(self, slot: Any, decode: Callable[[LazyMessageExt], Any]) -> None:
        self.slot = slot
        self.decode = decode

    def __get__(self, msg: LazyMessageExt | None, owner: type | None = None) -> Any:
        if msg is None:
            return self
        try:
            return self.slot.__get__(msg)
        except AttributeError:
            value = self.decode(msg)
            self.slot.__set__(msg, value)
            return value

    def __set__(self, msg: LazyMessageExt, value: Any) -> None:
        self.slot.__set__(msg, value)


def _where(msg: LazyMessageExt) -> str:
    return f"record at commit-log offset {msg.commit_log_offset} (byte {msg._pos} of its body)"


def _decode_body(msg: LazyMessageExt) -> bytes:
    at = msg._body_at
    body = bytes(msg._buf[at : at + msg._body_len])
    if msg.sys_flag & COMPRESSED_FLAG and body:
        try:
            body = decompress_body(body, msg.sys_flag)
        except RecordDecodeError as exc:
            raise RecordDecodeError(f"{_where(msg)}: {exc}") from None
    return body


def _decode_properties(msg: LazyMessageExt) -> dict[str, str]:
    if not msg._props_len:
        return {}
    at = msg._props_at
    try:
        text = bytes(msg._buf[at : at + msg._props_len]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordDecodeError(f"{_where(msg)}: properties are not UTF-8: {exc}") from None
    return decode_properties(text)


def _decode_born_host(msg: LazyMessageExt) -> tuple[str, int]:
    ip, port = msg._born_ip
    return unpack_host(ip), port


def _decode_store_host(msg: LazyMessageExt) -> tuple[str, int]:
    return store_host_of(*msg._store_ip)[0]


def _decode_offset_msg_id(msg: LazyMessageExt) -> str:
    return store_host_of(*msg._store_ip)[1] + f"{msg.commit_log_offset & 0xFFFFFFFFFFFFFFFF:016X}"


class LazyMessageExt(MessageExt):
    """A MessageExt whose body, properties, hosts and offset msgId are decoded from the record on first read."""

    __slots__ = ("_body_at", "_body_len", "_born_ip", "_buf", "_pos", "_props_at", "_props_len", "_store_ip")
    _buf: Any  # the pull body the record lies in
    _pos: int  # where the record starts in it
    _body_at: int
    _body_len: int
    _props_at: int
    _props_len: int
    _born_ip: tuple[bytes, int]  # BORNHOST ip bytes and port
    _store_ip: tuple[bytes, int]  # STOREHOST ip bytes and port

    body = _DecodedOnFirstRead(Message.__dict__["body"], _decode_body)  # type: ignore[assignment]
    properties = _DecodedOnFirstRead(Message.__dict__["properties"], _decode_properties)  # type: ignore[assignment]
    born_host = _DecodedOnFirstRead(MessageExt.__dict__["born_host"], _decode_born_host)  # type: ignore[assignment]
    store_host = _DecodedOnFirstRead(MessageExt.__dict__["store_host"], _decode_store_host)  # type: ignore[assignment]
    offset_msg_id = _DecodedOnFirstRead(MessageExt.__dict__["offset_msg_id"], _decode_offset_msg_id)  # type: ignore[assignment]

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickle and copy as the plain MessageExt it stands for (every field decoded), not the body it views.
        return _plain_message, ({name: getattr(self, name) for name in _FIELDS},)


_FIELDS = (*Message.__slots__, *MessageExt.__slots__)


def _plain_message(values: dict[str, Any]) -> MessageExt:
    msg = MessageExt.__new__(MessageExt)
    for name, value in values.items():
        setattr(msg, name, value)
    return msg


def _new_view(buf: Any, pos: int, f: tuple[Any, ...]) -> LazyMessageExt:
    msg = LazyMessageExt.__new__(LazyMessageExt)
    (
        msg.store_size, msg.body_crc, msg.queue_id, msg.flag, msg.queue_offset, msg.commit_log_offset,
        msg.sys_flag, msg.born_timestamp, born_ip, born_port, msg.store_timestamp, store_ip, store_port,
        msg.reconsume_times, msg.prepared_transaction_offset, msg._body_at, msg._body_len, msg.topic,
        msg._props_at, msg._props_len, _,
    ) = f  # fmt: skip
    msg._born_ip = (born_ip, born_port)
    msg._store_ip = (store_ip, store_port)
    msg._buf = buf
    msg._pos = pos
    msg.transaction_id = None
    msg.broker_name = ""
    return msg


def _decode_records_lazy(body: bytes | bytearray | memoryview) -> list[MessageExt]:
    """decode_records as views: the same messages (stopping at the same record), each field decoded on first read."""
    out: list[MessageExt] = []
    pos = 0
    end = len(body)
    while pos < end:
        try:
            f = scan_record(body, pos)
        except RecordDecodeError:
            break
        out.append(_new_view(body, pos, f))
        pos = f[20]
    return out


decode_records_lazy = _decode_records_lazy
scan_record = compiled.scan_record if compiled is not None else scan_record_py
