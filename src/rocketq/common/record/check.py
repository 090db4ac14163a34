"""Checking and parsing stored records in place: what recovery, dispatch and replication read from the commit log.

Port of CommitLog.checkMessageAndReturnSize (4.9.8). A record is valid when its MAGICCODE is the
message magic, its fields walk to exactly TOTALSIZE bytes, and (when asked) BODYCRC matches the body.
The blank end-of-file record and the zero bytes after the last record are told apart from damage.
Pure: works on any buffer (an mmap, bytes), no file I/O.
"""

from __future__ import annotations

import enum
import struct
import zlib
from typing import Any, NamedTuple

from rocketq.common import constants as C
from rocketq.common.record.layout import (
    BLANK_MAGIC_CODE,
    CRC_MASK,
    FIXED_SIZE_V4,
    INT,
    LAYOUTS,
    MAX_TOPIC_BYTES,
    MESSAGE_MAGIC_CODE,
    SHORT,
    SYSFLAG_POS,
    UNIT_RECORD_HEAD,
    V6_SHIFT,
)
from rocketq.common.record.properties import decode_properties

_SIZE_MAGIC = struct.Struct(">ii")


class RecordCheck(enum.Enum):
    VALID = "VALID"
    BLANK = "BLANK"  # end-of-file filler: continue with the next file
    END = "END"  # zeros: no record was ever written here
    CORRUPT = "CORRUPT"  # torn or damaged


class ParsedRecord(NamedTuple):
    """The fields dispatch needs from one valid record."""

    phys_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    sys_flag: int
    store_timestamp: int
    properties: dict[str, str]


class CheckResult(NamedTuple):
    kind: RecordCheck
    size: int = 0
    record: ParsedRecord | None = None
    problem: str = ""


def check_record(
    buf: Any, pos: int, limit: int, *, check_crc: bool = True, parse: bool = True
) -> CheckResult:
    """Check the record at `pos` of `buf`, which holds valid bytes only below `limit` (the file end)."""
    if pos + 8 > limit:
        return CheckResult(RecordCheck.END)
    total, magic = _SIZE_MAGIC.unpack_from(buf, pos)
    if magic == BLANK_MAGIC_CODE:
        if total == limit - pos:
            return CheckResult(RecordCheck.BLANK, total)
        return CheckResult(
            RecordCheck.CORRUPT, problem=f"blank record of {total} bytes does not end the file"
        )
    if magic != MESSAGE_MAGIC_CODE:
        if total == 0 and magic == 0:
            return CheckResult(RecordCheck.END)
        return CheckResult(RecordCheck.CORRUPT, problem=f"bad magic code {magic & 0xFFFFFFFF:#010x}")
    if total < FIXED_SIZE_V4 or pos + total > limit:
        return CheckResult(RecordCheck.CORRUPT, problem=f"record size {total} does not fit")
    try:
        return _walk(buf, pos, total, check_crc, parse)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        return CheckResult(RecordCheck.CORRUPT, problem=f"fields do not decode: {exc}")


def _walk(buf: Any, pos: int, total: int, check_crc: bool, parse: bool) -> CheckResult:
    (sys_flag,) = INT.unpack_from(buf, pos + SYSFLAG_POS)
    layout = LAYOUTS[(sys_flag >> V6_SHIFT) & 3]
    fields = layout.unpack_from(buf, pos)
    crc, queue_id, queue_offset, phys_offset, store_ts, body_len = (
        fields[2],
        fields[3],
        fields[5],
        fields[6],
        fields[11],
        fields[16],
    )
    p = pos + layout.size
    end = pos + total
    if body_len < 0 or p + body_len + 3 > end:
        return CheckResult(RecordCheck.CORRUPT, problem=f"body length {body_len} overruns the record")
    if check_crc and zlib.crc32(buf[p : p + body_len]) & CRC_MASK != crc:
        return CheckResult(RecordCheck.CORRUPT, problem="body CRC mismatch")
    p += body_len
    topic_len = buf[p]
    p += 1
    if topic_len > MAX_TOPIC_BYTES or p + topic_len + 2 > end:
        return CheckResult(RecordCheck.CORRUPT, problem=f"topic length {topic_len} overruns the record")
    topic_at = p
    p += topic_len
    (props_len,) = SHORT.unpack_from(buf, p)
    p += 2
    if props_len < 0 or p + props_len != end:
        return CheckResult(RecordCheck.CORRUPT, problem=f"TOTALSIZE {total} does not match the fields")
    if not parse:
        return CheckResult(RecordCheck.VALID, total)
    topic = bytes(buf[topic_at : topic_at + topic_len]).decode("utf-8")
    props = decode_properties(bytes(buf[p : p + props_len]).decode("utf-8")) if props_len else {}
    record = ParsedRecord(phys_offset, total, topic, queue_id, queue_offset, sys_flag, store_ts, props)
    return CheckResult(RecordCheck.VALID, total, record)


def unit_record_problem(record: Any, phys: int, size: int, queue_id: int, queue_offset: int) -> str:
    """What is wrong with `record` (the `size` bytes at commit-log offset `phys`) as the record of the
    consume-queue unit at `queue_offset` of queue `queue_id`; "" when it is that record.

    Cheap (one unpack of the head, no CRC): a unit torn or overwritten points into the middle of a
    record, at zeros or at another queue's record, and each of those fails one of these fields.
    """
    if size < FIXED_SIZE_V4 or len(record) < size:
        return f"unit size {size} cannot be a record"
    total, magic, rec_queue_id, rec_queue_offset, rec_phys = UNIT_RECORD_HEAD.unpack_from(record, 0)
    if magic != MESSAGE_MAGIC_CODE:
        return f"no record at commit-log offset {phys} (magic code {magic & 0xFFFFFFFF:#010x})"
    if total != size or rec_phys != phys:
        return f"the record at {phys} says TOTALSIZE {total}, PHYSICALOFFSET {rec_phys}; the unit says size {size}"
    if rec_queue_id != queue_id or rec_queue_offset != queue_offset:
        return f"the record at {phys} belongs to queue {rec_queue_id} offset {rec_queue_offset}"
    return ""


def is_consumable(sys_flag: int) -> bool:
    """PREPARED and ROLLBACK records get no consume-queue entry (Java CommitLog dispatch)."""
    tran = sys_flag & 0xC
    return tran in (C.MessageSysFlag.TRANSACTION_NOT_TYPE, C.MessageSysFlag.TRANSACTION_COMMIT_TYPE)
