"""Store results: status enums (not exceptions) and the result dataclasses of put, get and query.

Port of org.apache.rocketmq.store.{PutMessageStatus, GetMessageStatus, AppendMessageStatus,
PutMessageResult, GetMessageResult, QueryMessageResult}. The hot path returns these; exceptions are kept
for bugs and corruption (StoreCorruptError).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"

    @property
    def is_ok(self) -> bool:
        # Java: the message is stored in all of these (the flush or replication only lagged).
        return self in (
            PutMessageStatus.PUT_OK,
            PutMessageStatus.FLUSH_DISK_TIMEOUT,
            PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
            PutMessageStatus.SLAVE_NOT_AVAILABLE,
        )


# Java spells it OS_PAGECACHE_BUSY; the issue text says OS_PAGE_CACHE_BUSY. Both names work.
PutMessageStatus.OS_PAGE_CACHE_BUSY = PutMessageStatus.OS_PAGECACHE_BUSY  # type: ignore[attr-defined]


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class AppendResult:
    """Where one appended record (or the first of a batch) landed."""

    wrote_offset: int = 0  # commit-log offset of the first record
    wrote_bytes: int = 0
    msg_id: str = ""  # offset msgId(s); a batch joins them with ','
    store_timestamp: int = 0
    logical_offset: int = 0  # queue offset of the first record
    msg_num: int = 1


@dataclass(slots=True)
class PutResult:
    status: PutMessageStatus
    append: AppendResult | None = None
    remark: str = ""

    @property
    def is_ok(self) -> bool:
        return self.status.is_ok


@dataclass(slots=True)
class GetResult:
    """A read from one queue. `records` are the raw stored records, ready for a pull body as they are;
    a read asked for joined records (the pull's) has them in `body` instead, one after the other, and
    `records` empty. `queue_offsets` has one entry per record either way."""

    status: GetMessageStatus
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    records: list[bytes] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    # Java suggests reading from a slave when the reader is far behind; we have no slave reads yet.
    suggest_pulling_from_slave: bool = False
    body: bytes = b""

    @property
    def message_count(self) -> int:
        return len(self.queue_offsets)

    @property
    def body_size(self) -> int:
        return len(self.body) + sum(len(r) for r in self.records)


@dataclass(slots=True)
class QueryResult:
    """Records found by key through the index, and the index's time bounds."""

    records: list[bytes] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phy_offset: int = 0
