"""The stored-message record layout: offsets, sizes, magic codes, limits, hosts, offset msgId, CRC.

Port of the layout constants of org.apache.rocketmq.common.message.MessageDecoder and of
store.CommitLog (MESSAGE_MAGIC_CODE, BLANK_MAGIC_CODE, calMsgLength, END_FILE_MIN_BLANK_LENGTH,
the Byte.MAX_VALUE topic and Short.MAX_VALUE properties limits). Record fields (big-endian):
TOTALSIZE i32, MAGICCODE i32, BODYCRC i32, QUEUEID i32, FLAG i32, QUEUEOFFSET i64,
PHYSICALOFFSET i64, SYSFLAG i32, BORNTIMESTAMP i64, BORNHOST 4|16 bytes + port i32,
STORETIMESTAMP i64, STOREHOST 4|16 bytes + port i32, RECONSUMETIMES i32,
PREPAREDTRANSACTIONOFFSET i64, BODYLEN i32, BODY, TOPICLEN u8, TOPIC, PROPERTIESLEN i16, PROPERTIES.
The host widths follow sysFlag bits 0x10 (born) and 0x20 (store).
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from typing import Any, Final

from rocketq.common import constants as C
from rocketq.common.errors import RetryClass, RocketQError

# Java ints: 0xDAA320A7 and 0xCBD43194 read as signed 32-bit.
MESSAGE_MAGIC_CODE: Final = -626843481
BLANK_MAGIC_CODE: Final = -875286124
MESSAGE_MAGIC_BYTES: Final = MESSAGE_MAGIC_CODE.to_bytes(4, "big", signed=True)

BORNHOST_V6_FLAG: Final = int(C.MessageSysFlag.BORNHOST_V6_FLAG)
STOREHOST_V6_FLAG: Final = int(C.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
V6_FLAGS: Final = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG
COMPRESSED_FLAG: Final = int(C.MessageSysFlag.COMPRESSED_FLAG)

# TOTALSIZE .. BORNTIMESTAMP: the part of the record before the first variable-width field.
HEAD = struct.Struct(">iiiiiqqiq")
HEAD_SIZE: Final = HEAD.size  # 48
SYSFLAG_POS: Final = 36
PHYSICALOFFSET_POS: Final = 28
# The fixed-width fields TOTALSIZE .. BODYLEN by (born host v6, store host v6).
RECORD_HEADER: dict[tuple[bool, bool], struct.Struct] = {
    (bv6, sv6): struct.Struct(f">iiiiiqqiq{16 if bv6 else 4}siq{16 if sv6 else 4}siiqi")
    for bv6 in (False, True)
    for sv6 in (False, True)
}
# The same layouts indexed by (sysFlag >> 4) & 3 (bit 0: born host v6, bit 1: store host v6), the
# sysFlag bits each implies, and their sizes (BODYLEN ends each: its last 4 bytes).
V6_SHIFT: Final = 4
LAYOUTS: tuple[struct.Struct, ...] = tuple(RECORD_HEADER[(bool(i & 1), bool(i & 2))] for i in range(4))
LAYOUT_FLAGS: tuple[int, ...] = tuple(i << V6_SHIFT for i in range(4))
HEADER_SIZES: tuple[int, ...] = tuple(layout.size for layout in LAYOUTS)
assert 1 << V6_SHIFT == BORNHOST_V6_FLAG and 2 << V6_SHIFT == STOREHOST_V6_FLAG

# TOTALSIZE = fixed part + body + topic + properties; 91 with both hosts IPv4.
FIXED_SIZE_V4: Final = HEADER_SIZES[0] + 1 + 2  # 91
# TOPICLEN is one byte (Java rejects a topic over Byte.MAX_VALUE), PROPERTIESLEN a short
# (Short.MAX_VALUE): the same limits bound a send's properties string and a batch entry's.
MAX_TOPIC_BYTES: Final = 127
MAX_PROPERTIES_BYTES: Final = 32767

# The end-of-file filler: TOTALSIZE = the rest of the file, BLANK_MAGIC_CODE; a record is never
# written where fewer than END_FILE_MIN_BLANK_LENGTH bytes would be left for it.
BLANK_RECORD = struct.Struct(">ii")
END_FILE_MIN_BLANK_LENGTH: Final = 8
# TOTALSIZE, MAGICCODE, PHYSICALOFFSET: enough to tell that a whole record starts at an offset.
RECORD_HEAD = struct.Struct(">ii20xq")
# What a consume-queue unit vouches for, read from the head of the record it points at:
# TOTALSIZE, MAGICCODE, QUEUEID, QUEUEOFFSET, PHYSICALOFFSET (BODYCRC and FLAG skipped).
UNIT_RECORD_HEAD = struct.Struct(">ii4xi4xqq")

SHORT = struct.Struct(">h")
INT = struct.Struct(">i")
LONG = struct.Struct(">q")
CRC_MASK: Final = 0x7FFFFFFF


class RecordDecodeError(RocketQError, ValueError):
    """Bytes that are not a whole, well-formed record (or batch entry)."""

    retry = RetryClass.NEVER


class RecordTooLargeError(ValueError):
    """A record that can never be stored (a field over its limit, over the size limit, larger than a file)."""


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """BODYCRC: CRC-32 (zlib/IEEE) of the stored body bytes, masked to a non-negative int (Java UtilAll.crc32)."""
    return zlib.crc32(body) & CRC_MASK


def record_size(
    body_len: int, topic_len: int, props_len: int, born_v6: bool = False, store_v6: bool = False
) -> int:
    """TOTALSIZE of a record with these field lengths (Java CommitLog.calMsgLength)."""
    return FIXED_SIZE_V4 + body_len + topic_len + props_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


def header_size(sys_flag: int) -> int:
    """Size of the fixed fields TOTALSIZE .. BODYLEN of a record with this sysFlag."""
    return HEADER_SIZES[(sys_flag >> V6_SHIFT) & 3]


def topic_block(topic: str) -> bytes:
    """TOPICLEN and TOPIC as a record holds them (RecordTooLargeError past MAX_TOPIC_BYTES)."""
    raw = topic.encode("utf-8")
    if len(raw) > MAX_TOPIC_BYTES:
        raise RecordTooLargeError(f"topic of {len(raw)} bytes; a record holds at most {MAX_TOPIC_BYTES}")
    return bytes((len(raw),)) + raw


def store_timestamp_of(buf: Any, pos: int) -> int:
    """STORETIMESTAMP of the record at `pos` (its position depends on the born host's width)."""
    (sys_flag,) = INT.unpack_from(buf, pos + SYSFLAG_POS)
    (ts,) = LONG.unpack_from(buf, pos + HEAD_SIZE + (20 if sys_flag & BORNHOST_V6_FLAG else 8))
    return int(ts)


# --- hosts and the offset msgId ------------------------------------------------------------------
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


def unpack_host(raw: bytes) -> str:
    """The text form of 4 or 16 IP bytes (cached: every decoded record has two, and they repeat)."""
    text = _HOST_TEXTS.get(raw)
    if text is None:
        text = f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}" if len(raw) == 4 else str(ipaddress.IPv6Address(raw))
        if len(_HOST_TEXTS) < _HOST_CACHE_LIMIT:
            _HOST_TEXTS[bytes(raw)] = text
    return text


def msg_id_prefix(raw_ip: bytes, port: int) -> str:
    """The host part of an offset msgId (Java MessageDecoder.createMessageId): the STOREHOST bytes,
    then the port as a 4-byte int, in upper-case hex; the commit-log offset follows as 16 digits."""
    return (bytes(raw_ip) + INT.pack(port)).hex().upper()


def offset_msg_id(raw_ip: bytes, port: int, phys_offset: int) -> str:
    """The offset msgId of the record at `phys_offset` stored by host (raw_ip, port)."""
    return f"{msg_id_prefix(raw_ip, port)}{phys_offset & 0xFFFFFFFFFFFFFFFF:016X}"


# (store ip bytes, port) -> ((ip text, port), msgId prefix): a pull body's records almost all come
# from one broker.
_STORE_HOSTS: dict[tuple[bytes, int], tuple[tuple[str, int], str]] = {}


def store_host_of(raw_ip: bytes, port: int) -> tuple[tuple[str, int], str]:
    """((ip text, port), msgId prefix) of a record's STOREHOST field, cached."""
    entry = _STORE_HOSTS.get((raw_ip, port))
    if entry is None:
        entry = ((unpack_host(raw_ip), port), msg_id_prefix(raw_ip, port))
        if len(_STORE_HOSTS) < _HOST_CACHE_LIMIT:
            _STORE_HOSTS[(bytes(raw_ip), port)] = entry
    return entry
