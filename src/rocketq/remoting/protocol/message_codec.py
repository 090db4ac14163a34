"""The stored-message record (protocol.md 4.1) and the batch send body (4.5): encode and decode, pure.

Port of org.apache.rocketmq.common.message.MessageDecoder (decode, decodes, encode, encodeMessages,
decodeMessages) and of the record layout of store CommitLog.MessageExtEncoder. The same record is the
commit-log entry, the PULL_MESSAGE / QUERY_MESSAGE body (records back to back), the VIEW_MESSAGE_BY_ID
body and the CHECK_TRANSACTION_STATE body. Deviations: a body compressed with LZ4 or ZSTD (sysFlag
bits 8-10 = 1 or 2) is left as stored when no codec for it is installed (Java would fail the record);
the host width follows the address (an IPv6 host sets its sysFlag bit) as well as the sysFlag bit.
No I/O, no store import: the store and the client both use this module.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Iterable
from typing import Any

from rocketq.common import constants as C
from rocketq.common.errors import RetryClass, RocketQError
from rocketq.common.message import Message, MessageExt, decode_properties, encode_properties

# Java ints: 0xDAA320A7 and 0xCBD43194 read as signed 32-bit.
MESSAGE_MAGIC_CODE = -626843481
BLANK_MAGIC_CODE = -875286124

BORNHOST_V6_FLAG = C.MessageSysFlag.BORNHOST_V6_FLAG
STOREHOST_V6_FLAG = C.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
COMPRESSED_FLAG = C.MessageSysFlag.COMPRESSED_FLAG

# TOTALSIZE .. BORNTIMESTAMP: the part of the record before the first variable-width field.
HEAD = struct.Struct(">iiiiiqqiq")
HEAD_SIZE = HEAD.size  # 48
SYSFLAG_POS = 36
# Fixed-width record parts by (born host v6, store host v6): BORNTIMESTAMP..BODYLEN minus the head.
# Full header = HEAD + born host + port + STORETIMESTAMP + store host + port + RECONSUME + PREPARED + BODYLEN.
RECORD_HEADER: dict[tuple[bool, bool], struct.Struct] = {
    (bv6, sv6): struct.Struct(f">iiiiiqqiq{16 if bv6 else 4}siq{16 if sv6 else 4}siiqi")
    for bv6 in (False, True)
    for sv6 in (False, True)
}
# TOTALSIZE = fixed part + body + topic + properties; 91 with both hosts IPv4 (protocol.md 4.1).
FIXED_SIZE_V4 = RECORD_HEADER[(False, False)].size + 1 + 2  # 91
MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
_SHORT = struct.Struct(">h")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")

COMPRESSION_ZLIB = 0
COMPRESSION_LZ4 = 1
COMPRESSION_ZSTD = 2


class RecordDecodeError(RocketQError, ValueError):
    """Bytes that are not a whole, well-formed record (or batch entry)."""

    retry = RetryClass.NEVER


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """BODYCRC: CRC-32 (zlib/IEEE) of the stored body bytes, masked to a non-negative int (Java UtilAll.crc32)."""
    return zlib.crc32(body) & 0x7FFFFFFF


def record_size(
    body_len: int, topic_len: int, props_len: int, born_v6: bool = False, store_v6: bool = False
) -> int:
    """TOTALSIZE of a record with these field lengths (Java CommitLog.calMsgLength)."""
    return FIXED_SIZE_V4 + body_len + topic_len + props_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


# --- hosts --------------------------------------------------------------------------------------
_PACKED_HOSTS: dict[str, bytes] = {}
_HOST_TEXTS: dict[bytes, str] = {}
_HOST_CACHE_LIMIT = 4096


def pack_host(ip: str, v6: bool = False) -> bytes:
    """IP bytes of `ip`: 4 for IPv4, 16 for IPv6; IPv4 in a 16-byte field (v6=True) is IPv4-mapped."""
    key = ip if not v6 else "6/" + ip
    packed = _PACKED_HOSTS.get(key)
    if packed is None:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            raise ValueError(f"not an IP address: {ip!r}") from None
        if v6 and isinstance(addr, ipaddress.IPv4Address):
            packed = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + addr.packed).packed
        else:
            packed = addr.packed
        if len(_PACKED_HOSTS) < _HOST_CACHE_LIMIT:
            _PACKED_HOSTS[key] = packed
    return packed


def is_ipv6(ip: str) -> bool:
    return len(pack_host(ip)) == 16


# (store ip bytes, port) -> ((ip text, port), the offset msgId's first hex digits): a pull body's records
# almost all come from one broker.
_STORE_HOSTS: dict[tuple[bytes, int], tuple[tuple[str, int], str]] = {}


def _store_host(raw_ip: bytes, port: int) -> tuple[tuple[str, int], str]:
    # The offset msgId's host part is the record's STOREHOST bytes: ip, then the port as a 4-byte int.
    entry = ((unpack_host(raw_ip), port), (bytes(raw_ip) + _INT.pack(port)).hex().upper())
    if len(_STORE_HOSTS) < _HOST_CACHE_LIMIT:
        _STORE_HOSTS[(bytes(raw_ip), port)] = entry
    return entry


def unpack_host(raw: bytes) -> str:
    """The text form of 4 or 16 IP bytes (cached: every decoded record has two, and they repeat)."""
    text = _HOST_TEXTS.get(raw)
    if text is None:
        text = f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}" if len(raw) == 4 else str(ipaddress.IPv6Address(raw))
        if len(_HOST_TEXTS) < _HOST_CACHE_LIMIT:
            _HOST_TEXTS[bytes(raw)] = text
    return text


# --- compression --------------------------------------------------------------------------------
def compression_type(sys_flag: int) -> int:
    """Algorithm of a compressed body from sysFlag bits 8-10 (0 and 3 both mean zlib; protocol.md 4.7)."""
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
    """The full stored record of `msg` (protocol.md 4.1); TOTALSIZE and BODYCRC are computed.

    The body goes in as it is (already compressed when sysFlag says so, as in CHECK_TRANSACTION_STATE).
    Raises ValueError when the topic is over 127 bytes, the properties over 32767 bytes or a host
    is not an IP address.
    """
    body = msg.body or b""
    topic = msg.topic.encode("utf-8")
    props = encode_properties(msg.properties).encode("utf-8") if msg.properties else b""
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
    return b"".join((header, body, bytes((len(topic),)), topic, _SHORT.pack(len(props)), props))


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
    (sys_flag,) = _INT.unpack_from(buf, pos + SYSFLAG_POS)
    born_v6 = bool(sys_flag & BORNHOST_V6_FLAG)
    store_v6 = bool(sys_flag & STOREHOST_V6_FLAG)
    layout = RECORD_HEADER[(born_v6, store_v6)]
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
    if topic_len > 127:
        raise RecordDecodeError(f"record at {pos}: negative topic length")
    p += 1
    if p + topic_len > len(buf):
        raise RecordDecodeError(f"record at {pos}: topic runs past the buffer")
    topic = bytes(buf[p : p + topic_len]).decode("utf-8")
    p += topic_len
    (props_len,) = _SHORT.unpack_from(buf, p)
    p += 2
    if props_len > 0:
        if p + props_len > len(buf):
            raise RecordDecodeError(f"record at {pos}: properties run past the buffer")
        properties = decode_properties(bytes(buf[p : p + props_len]).decode("utf-8"))
        p += props_len
    else:
        properties = {}
    store = _STORE_HOSTS.get((store_ip, store_port))
    if store is None:
        store = _store_host(store_ip, store_port)
    store_host, id_prefix = store
    msg_id = id_prefix + f"{phys_offset & 0xFFFFFFFFFFFFFFFF:016X}"
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
    msg.offset_msg_id = msg_id
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
        (size,) = _INT.unpack_from(body, pos)
        if size < FIXED_SIZE_V4 or pos + size > end:
            return
        yield pos, size
        pos += size


# --- batch body (SEND_BATCH_MESSAGE) --------------------------------------------------------------
def encode_batch(entries: list[Message]) -> bytes:
    """The SEND_BATCH_MESSAGE body: one entry per message (protocol.md 4.5, Java encodeMessages)."""
    parts: list[bytes] = []
    join_entry = C.NAME_VALUE_SEPARATOR.join
    for msg in entries:
        body = msg.body or b""
        properties = msg.properties
        if properties:
            try:  # encode_properties for the common case (every value a str), at C speed
                props = C.PROPERTY_SEPARATOR.join(map(join_entry, properties.items())).encode("utf-8")
            except TypeError:  # a None (left out) or non-str value
                props = encode_properties(properties).encode("utf-8")
        else:
            props = b""
        if len(props) > MAX_PROPERTIES_BYTES:
            raise ValueError(
                f"properties of {len(props)} bytes; an entry holds at most {MAX_PROPERTIES_BYTES}"
            )
        parts.append(_BATCH_HEAD.pack(22 + len(body) + len(props), 0, 0, msg.flag, len(body)))
        parts.append(body)
        parts.append(_SHORT.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def decode_batch(body: bytes | bytearray | memoryview) -> list[tuple[int, bytes, dict[str, str]]]:
    """(flag, body, properties) of each entry of a batch body; RecordDecodeError when malformed.

    Walks the fields like the broker's batch encoder and checks each entry's TOTALSIZE against them.
    """
    out: list[tuple[int, bytes, dict[str, str]]] = []
    pos = 0
    end = len(body)
    try:
        while pos < end:
            total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(body, pos)
            p = pos + _BATCH_HEAD.size
            if body_len < 0 or p + body_len + 2 > end:
                raise RecordDecodeError(f"batch entry at {pos}: body length {body_len} runs past the body")
            entry_body = bytes(body[p : p + body_len])
            p += body_len
            (props_len,) = _SHORT.unpack_from(body, p)
            p += 2
            if props_len < 0 or p + props_len > end:
                raise RecordDecodeError(
                    f"batch entry at {pos}: properties length {props_len} runs past the body"
                )
            props = decode_properties(bytes(body[p : p + props_len]).decode("utf-8")) if props_len else {}
            p += props_len
            if total != p - pos:
                raise RecordDecodeError(
                    f"batch entry at {pos}: TOTALSIZE {total} but its fields take {p - pos}"
                )
            out.append((flag, entry_body, props))
            pos = p
    except (struct.error, UnicodeDecodeError) as exc:
        raise RecordDecodeError(f"malformed batch entry at {pos}: {exc}") from None
    return out
