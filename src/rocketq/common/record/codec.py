"""Pack and decode stored records and SEND_BATCH_MESSAGE bodies; read a record's body and properties in place.

Port of org.apache.rocketmq.common.message.MessageDecoder (decode, decodes, encode, encodeMessages,
decodeMessages, decodeProperties(ByteBuffer)) and of the record layout of store CommitLog's
MessageExtEncoder. Deviations: a body compressed with LZ4 or ZSTD (sysFlag bits 8-10 = 1 or 2) is
left as stored when no codec for it is installed (Java would fail the record); the host width
follows the address (an IPv6 host sets its sysFlag bit) as well as the sysFlag bit.
The commit log writes records itself, straight into its mapping (rocketq.store.commit_log), with
the layouts of rocketq.common.record.layout.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from typing import Any

from rocketq.common import constants as C
from rocketq.common.message import Message, MessageExt
from rocketq.common.record.accel import compiled
from rocketq.common.record.layout import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    CRC_MASK,
    FIXED_SIZE_V4,
    INT,
    LAYOUTS,
    MAX_PROPERTIES_BYTES,
    MAX_TOPIC_BYTES,
    MESSAGE_MAGIC_CODE,
    RECORD_HEADER,
    SHORT,
    STOREHOST_V6_FLAG,
    SYSFLAG_POS,
    RecordDecodeError,
    body_crc,
    header_size,
    is_ipv6,
    pack_host,
    record_size,
    store_host_of,
    unpack_host,
)
from rocketq.common.record.properties import decode_properties, encode_properties_bytes

_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
BATCH_ENTRY_FIXED_SIZE = _BATCH_HEAD.size + 2  # 22: the head and PROPERTIESLEN

COMPRESSION_ZLIB = 0
COMPRESSION_LZ4 = 1
COMPRESSION_ZSTD = 2


# --- compression --------------------------------------------------------------------------------
def compression_type(sys_flag: int) -> int:
    """Algorithm of a compressed body from sysFlag bits 8-10 (0 and 3 both mean zlib)."""
    kind = (sys_flag & C.MessageSysFlag.COMPRESSION_TYPE_MASK) >> 8
    return COMPRESSION_ZLIB if kind in (0, 3) else kind


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """The plain body of a record with COMPRESSED_FLAG set; LZ4/ZSTD bodies stay as stored."""
    if compression_type(sys_flag) != COMPRESSION_ZLIB:
        return body
    try:
        return zlib.decompress(body)
    except zlib.error as exc:
        raise RecordDecodeError(f"the compressed body does not inflate: {exc}") from None


# --- record encode -------------------------------------------------------------------------------
def encode_record(msg: MessageExt) -> bytes:
    """The full stored record of `msg`; TOTALSIZE and BODYCRC are computed.

    The body goes in as it is (already compressed when sysFlag says so, as in CHECK_TRANSACTION_STATE).
    Raises ValueError when the topic is over 127 bytes, the properties over 32767 bytes or a host
    is not an IP address.
    """
    body = msg.body or b""
    topic = msg.topic.encode("utf-8")
    props = encode_properties_bytes(msg.properties)
    if len(topic) > MAX_TOPIC_BYTES:
        raise ValueError(f"topic of {len(topic)} bytes; a record holds at most {MAX_TOPIC_BYTES}")
    if len(props) > MAX_PROPERTIES_BYTES:
        raise ValueError(f"properties of {len(props)} bytes; a record holds at most {MAX_PROPERTIES_BYTES}")
    sys_flag = msg.sys_flag
    born_ip, born_port = msg.born_host
    store_ip, store_port = msg.store_host
    born_v6 = bool(sys_flag & BORNHOST_V6_FLAG) or is_ipv6(born_ip)
    store_v6 = bool(sys_flag & STOREHOST_V6_FLAG) or is_ipv6(store_ip)
    sys_flag |= (BORNHOST_V6_FLAG if born_v6 else 0) | (STOREHOST_V6_FLAG if store_v6 else 0)
    total = record_size(len(body), len(topic), len(props), born_v6, store_v6)
    header = RECORD_HEADER[(born_v6, store_v6)].pack(
        total,
        MESSAGE_MAGIC_CODE,
        body_crc(body),
        msg.queue_id,
        msg.flag,
        msg.queue_offset,
        msg.commit_log_offset,
        sys_flag,
        msg.born_timestamp,
        pack_host(born_ip, born_v6),
        born_port,
        msg.store_timestamp,
        pack_host(store_ip, store_v6),
        store_port,
        msg.reconsume_times,
        msg.prepared_transaction_offset,
        len(body),
    )
    return b"".join((header, body, bytes((len(topic),)), topic, SHORT.pack(len(props)), props))


# --- record decode -------------------------------------------------------------------------------
def decode_record(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, decompress_body: bool = True
) -> tuple[MessageExt, int]:
    """Decode the record at `pos`; returns the message and the position after it.

    Walks the fields as Java's MessageDecoder does (MAGICCODE and BODYCRC are not checked) and sets
    `offset_msg_id` from STOREHOST and PHYSICALOFFSET. Raises RecordDecodeError on truncated or
    malformed bytes.
    """
    try:
        return _decode(buf, pos, decompress_body)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise RecordDecodeError(f"malformed record at {pos}: {exc}") from None


def _decode(buf: Any, pos: int, decompress: bool) -> tuple[MessageExt, int]:
    (sys_flag,) = INT.unpack_from(buf, pos + SYSFLAG_POS)
    layout = RECORD_HEADER[(bool(sys_flag & BORNHOST_V6_FLAG), bool(sys_flag & STOREHOST_V6_FLAG))]
    (
        total,
        _magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        phys_offset,
        _sys,
        born_ts,
        born_ip,
        born_port,
        store_ts,
        store_ip,
        store_port,
        reconsume,
        prepared,
        body_len,
    ) = layout.unpack_from(buf, pos)
    p = pos + layout.size
    if body_len < 0 or p + body_len > len(buf):
        raise RecordDecodeError(f"record at {pos}: body length {body_len} runs past the buffer")
    body = bytes(buf[p : p + body_len])
    p += body_len
    if decompress and sys_flag & COMPRESSED_FLAG and body:
        body = decompress_body(body, sys_flag)
    topic_len = buf[p]
    if topic_len > MAX_TOPIC_BYTES:
        raise RecordDecodeError(f"record at {pos}: negative topic length")
    p += 1
    if p + topic_len > len(buf):
        raise RecordDecodeError(f"record at {pos}: topic runs past the buffer")
    topic = bytes(buf[p : p + topic_len]).decode("utf-8")
    p += topic_len
    (props_len,) = SHORT.unpack_from(buf, p)
    p += 2
    if props_len > 0:
        if p + props_len > len(buf):
            raise RecordDecodeError(f"record at {pos}: properties run past the buffer")
        properties = decode_properties(bytes(buf[p : p + props_len]).decode("utf-8"))
        p += props_len
    else:
        properties = {}
    store_host, id_prefix = store_host_of(store_ip, store_port)
    msg = MessageExt.__new__(MessageExt)
    msg.topic = topic
    msg.body = body
    msg.flag = flag
    msg.properties = properties
    msg.transaction_id = None
    msg.queue_id = queue_id
    msg.queue_offset = queue_offset
    msg.commit_log_offset = phys_offset
    msg.store_size = total
    msg.sys_flag = sys_flag
    msg.body_crc = crc
    msg.born_timestamp = born_ts
    msg.store_timestamp = store_ts
    msg.born_host = (unpack_host(born_ip), born_port)
    msg.store_host = store_host
    msg.reconsume_times = reconsume
    msg.prepared_transaction_offset = prepared
    msg.offset_msg_id = id_prefix + f"{phys_offset & 0xFFFFFFFFFFFFFFFF:016X}"
    msg.broker_name = ""
    return msg, p


def decode_records(body: bytes | bytearray | memoryview, *, decompress_body: bool = True) -> list[MessageExt]:
    """All records of a pull/query body; stops silently at the first one that does not decode (Java decodes)."""
    out: list[MessageExt] = []
    pos = 0
    end = len(body)
    while pos < end:
        try:
            msg, pos = _decode(body, pos, decompress_body)
        except (RecordDecodeError, struct.error, IndexError, UnicodeDecodeError):
            break
        out.append(msg)
    return out


def iter_record_spans(body: bytes | bytearray | memoryview) -> Iterable[tuple[int, int]]:
    """(start, size) of each record of a body by TOTALSIZE, stopping at a size that does not fit."""
    pos = 0
    end = len(body)
    while pos + 4 <= end:
        (size,) = INT.unpack_from(body, pos)
        if size < FIXED_SIZE_V4 or pos + size > end:
            return
        yield pos, size
        pos += size


# --- fields read in place ------------------------------------------------------------------------
def record_body(record: bytes | bytearray | memoryview) -> bytes:
    """The body of a stored record as stored, without decoding the rest (BODYLEN ends the fixed header)."""
    (sys_flag,) = INT.unpack_from(record, SYSFLAG_POS)
    size = header_size(sys_flag)
    (body_len,) = INT.unpack_from(record, size - 4)
    return bytes(record[size : size + body_len])


def record_properties_text(record: bytes | bytearray | memoryview) -> str:
    """The properties string of a stored record; "" when the record cannot hold one."""
    try:
        (sys_flag,) = INT.unpack_from(record, SYSFLAG_POS)
        size = header_size(sys_flag)
        (body_len,) = INT.unpack_from(record, size - 4)
        pos = size + body_len
        pos += 1 + record[pos]  # topic length byte and topic
        (props_len,) = SHORT.unpack_from(record, pos)
        if props_len <= 0:
            return ""
        pos += 2
        return bytes(record[pos : pos + props_len]).decode("utf-8")
    except (struct.error, IndexError, UnicodeDecodeError):
        return ""


def record_properties(record: bytes | bytearray | memoryview) -> dict[str, str]:
    """All properties of a stored record; none when it is too short or garbled."""
    return decode_properties(record_properties_text(record))


# --- batch body (SEND_BATCH_MESSAGE) --------------------------------------------------------------
def encode_batch(entries: list[Message]) -> bytes:
    """The SEND_BATCH_MESSAGE body: one entry per message (Java MessageDecoder.encodeMessages)."""
    parts: list[bytes] = []
    for msg in entries:
        body = msg.body or b""
        props = encode_properties_bytes(msg.properties)
        if len(props) > MAX_PROPERTIES_BYTES:
            raise ValueError(
                f"properties of {len(props)} bytes; an entry holds at most {MAX_PROPERTIES_BYTES}"
            )
        parts.append(
            _BATCH_HEAD.pack(BATCH_ENTRY_FIXED_SIZE + len(body) + len(props), 0, 0, msg.flag, len(body))
        )
        parts.append(body)
        parts.append(SHORT.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def decode_batch_py(body: bytes | bytearray | memoryview) -> list[tuple[int, bytes, dict[str, str]]]:
    """(flag, body, properties) of each entry of a batch body; RecordDecodeError when malformed.

    Walks the fields like the broker's batch encoder and checks each entry's TOTALSIZE against them.
    """
    return _decode_batch_py(body, None)


def _decode_batch_py(
    body: bytes | bytearray | memoryview, raws: list[bytes] | None
) -> list[tuple[int, bytes, dict[str, str]]]:
    """decode_batch_py; with `raws`, each entry's properties bytes are appended to it as well."""
    out: list[tuple[int, bytes, dict[str, str]]] = []
    append = out.append
    if not isinstance(body, bytes):
        body = bytes(body)  # one copy of the body; its slices below are then one copy each, not two
    unpack_head = _BATCH_HEAD.unpack_from
    head_size = _BATCH_HEAD.size
    unpack_short = SHORT.unpack_from
    pos = 0
    end = len(body)
    try:
        while pos < end:
            total, _magic, _crc, flag, body_len = unpack_head(body, pos)
            p = pos + head_size
            if body_len < 0 or p + body_len + 2 > end:
                raise RecordDecodeError(f"batch entry at {pos}: body length {body_len} runs past the body")
            entry_body = body[p : p + body_len]
            p += body_len
            (props_len,) = unpack_short(body, p)
            p += 2
            if props_len < 0 or p + props_len > end:
                raise RecordDecodeError(
                    f"batch entry at {pos}: properties length {props_len} runs past the body"
                )
            raw = body[p : p + props_len]
            props = decode_properties(raw.decode("utf-8")) if props_len else {}
            p += props_len
            if total != p - pos:
                raise RecordDecodeError(
                    f"batch entry at {pos}: TOTALSIZE {total} but its fields take {p - pos}"
                )
            append((flag, entry_body, props))
            if raws is not None:
                raws.append(raw)
            pos = p
    except (struct.error, UnicodeDecodeError) as exc:
        raise RecordDecodeError(f"malformed batch entry at {pos}: {exc}") from None
    return out


def decode_batch_for_store_py(
    body: bytes | bytearray | memoryview, batch_props: dict[str, str]
) -> tuple[list[tuple[int, bytes, dict[str, str]]], list[bytes | None] | None]:
    """decode_batch's entries with `batch_props` merged into each one's properties (the entry's own
    first, a name both have takes the batch's value), and what each record stores as its properties
    (encode_properties_bytes of the merged dict) cut from the entry's own bytes and the batch's encoded
    once; None for an entry where that would not be the same bytes: a name twice or a segment the decode
    skips (then the entry's segments outnumber its names), or a name of the batch's (the compiled one's
    rule; the store encodes those)."""
    raws: list[bytes] = []
    entries = _decode_batch_py(body, raws)
    try:
        suffix = encode_properties_bytes(batch_props)
    except UnicodeEncodeError:  # a lone surrogate: the store's encode does what it does with it
        return [(flag, entry_body, props | batch_props) for flag, entry_body, props in entries], None
    sep_suffix = b"\x02" + suffix if suffix else b""
    disjoint = batch_props.keys().isdisjoint
    stored: list[bytes | None] = []
    cut = stored.append
    for (_flag, _body, props), raw in zip(entries, raws, strict=True):
        if not raw:
            cut(suffix)
        elif raw.count(b"\x02") + 1 == len(props) and disjoint(props):
            cut(raw + sep_suffix)
        else:
            cut(None)
        props.update(batch_props)  # props | batch_props, in the entry's own fresh dict
    return entries, stored


def offset_msg_ids_py(prefix: str, offsets: list[int]) -> str:
    """The comma-joined offset msgIds (the store host's prefix and the offset as 16 hex digits) of records
    at `offsets`: a batch's answer (Java CommitLog.DefaultAppendMessageCallback.doAppend of a batch)."""
    return ",".join(map((prefix + "%016X").__mod__, offsets))


decode_batch = compiled.decode_batch if compiled is not None else decode_batch_py
offset_msg_ids = compiled.offset_msg_ids if compiled is not None else offset_msg_ids_py
decode_batch_for_store = (
    compiled.decode_batch_for_store if compiled is not None else decode_batch_for_store_py
)


def pack_batch_into_py(
    buf: Any,
    pos: int,
    entries: list[tuple[int, bytes, dict[str, str]]],
    topic_block: bytes,
    props: list[bytes],
    sizes: list[int],
    queue_id: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_ts: int,
    born_ip: bytes,
    born_port: int,
    store_ts: int,
    store_ip: bytes,
    store_port: int,
    reconsume: int,
) -> None:
    """Write the commit-log records of a batch's entries into `buf` from `pos`, one after the other
    (Java CommitLog.DefaultAppendMessageCallback.doAppend for a MessageExtBatch): entry i gets size
    sizes[i], queue offset queue_offset + i, physical offset phys + the sizes before it, its flag and
    body, the topic block (TOPICLEN + TOPIC) and its properties props[i]. The hosts' widths (4 or 16
    bytes) choose the layout; sys_flag must already carry the matching v6 bits. The caller has checked
    the sizes and the room."""
    # The records' parts joined once and written with one copy into `buf` (a mapping: one slice
    # assignment instead of three per record); the header through the layout's precompiled Struct.
    pack = LAYOUTS[(len(born_ip) == 16) + 2 * (len(store_ip) == 16)].pack  # bit 0 born v6, bit 1 store v6
    crc32 = zlib.crc32
    parts: list[bytes] = []
    add = parts.extend
    for (flag, body, _), prop, size in zip(entries, props, sizes, strict=True):
        add((
            pack(
                size, MESSAGE_MAGIC_CODE, crc32(body) & CRC_MASK, queue_id, flag, queue_offset, phys, sys_flag,
                born_ts, born_ip, born_port, store_ts, store_ip, store_port, reconsume, 0, len(body),
            ),
            body, topic_block, len(prop).to_bytes(2, "big"), prop,
        ))  # fmt: skip
        phys += size
        queue_offset += 1
    data = b"".join(parts)
    buf[pos : pos + len(data)] = data


# The batch's records written in one compiled loop (no struct pack and slice copies per entry).
pack_batch_into = compiled.pack_batch_into if compiled is not None else pack_batch_into_py


def pack_record_into_py(
    buf: Any,
    pos: int,
    size: int,
    body: bytes,
    topic_block: bytes,
    props: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_ts: int,
    born_ip: bytes,
    born_port: int,
    store_ts: int,
    store_ip: bytes,
    store_port: int,
    reconsume: int,
    prepared_offset: int,
) -> None:
    """Write one commit-log record of `size` bytes into `buf` at `pos` (Java CommitLog.
    DefaultAppendMessageCallback.doAppend): the fixed fields, the body, the topic block (TOPICLEN +
    TOPIC) and the properties. The hosts' widths (4 or 16 bytes) choose the layout; sys_flag must
    already carry the matching v6 bits; the caller has checked the size and the room."""
    layout = LAYOUTS[(len(born_ip) == 16) + 2 * (len(store_ip) == 16)]  # bit 0 born v6, bit 1 store v6
    head = layout.size
    body_len = len(body)
    layout.pack_into(
        buf, pos, size, MESSAGE_MAGIC_CODE, zlib.crc32(body) & CRC_MASK, queue_id, flag, queue_offset, phys,
        sys_flag, born_ts, born_ip, born_port, store_ts, store_ip, store_port, reconsume, prepared_offset, body_len,
    )  # fmt: skip
    body_end = pos + head + body_len
    buf[pos + head : body_end] = body
    buf[body_end : pos + size] = topic_block + len(props).to_bytes(2, "big") + props


# One record: one compiled call instead of a struct pack, a join and two slice copies.
if compiled is not None:
    compiled.set_pack_record_fallback(pack_record_into_py)
pack_record_into = compiled.pack_record_into if compiled is not None else pack_record_into_py
