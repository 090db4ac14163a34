"""MessageStoreConfig: every knob of the store, with units in the python names and RocketMQ's as aliases.

Port of org.apache.rocketmq.store.config.MessageStoreConfig (4.9.8 defaults) restricted to what rocketq
implements, plus FlushDiskType and BrokerRole. Deviations: storePathRootDir defaults to ~/rocketq/store
(Java: ~/store); `preallocateMappedFile` and `mappedFileReserveAhead` (ours) reserve commit-log disk
blocks ahead of the writer so that a full disk fails a put (CREATE_MAPEDFILE_FAILED) instead of a write
into the mapping; `warmMappedFileEnable` faults those pages in ahead (Java writes zeros instead);
`maxMappedConsumeQueueFiles` (ours) bounds the consume-queue files mapped at once (descriptors, maps).
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from rocketq.common.config import RocketConfig
from rocketq.common.constants import DEFAULT_DELAY_LEVELS

CQ_STORE_UNIT_SIZE = 20


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


class MessageStoreConfig(RocketConfig):
    """The store's configuration. Sizes are bytes, intervals milliseconds, unless the name says otherwise."""

    # -- where -------------------------------------------------------------------------------------
    store_path_root_dir: str = Field(
        "~/rocketq/store",
        alias="storePathRootDir",
        description="root of commitlog/, consumequeue/, index/, ...",
    )
    store_path_commit_log: str | None = Field(
        None, alias="storePathCommitLog", description="commit-log directory; default <root>/commitlog"
    )
    # -- file sizes --------------------------------------------------------------------------------
    mapped_file_size_commit_log_bytes: int = Field(
        1024 * 1024 * 1024,
        alias="mappedFileSizeCommitLog",
        ge=4096,
        description="size of one commit-log file",
    )
    mapped_file_size_consume_queue_bytes: int = Field(
        300_000 * CQ_STORE_UNIT_SIZE,
        alias="mappedFileSizeConsumeQueue",
        ge=CQ_STORE_UNIT_SIZE,
        description="size of one consume-queue file; rounded up to a multiple of 20 (Java does the same)",
    )
    preallocate_mapped_file: bool = Field(
        True,
        alias="preallocateMappedFile",
        description="allocate commit-log disk blocks ahead of the writer, so a full disk fails a put cleanly",
    )
    warm_mapped_file_enable: bool = Field(
        True,
        alias="warmMappedFileEnable",
        description="fault commit-log pages in ahead of the writer on a worker thread, off the append path",
    )
    max_mapped_consume_queue_files: int = Field(
        0,
        alias="maxMappedConsumeQueueFiles",
        ge=0,
        description="consume-queue files mapped at once, least recently used unmapped first "
        "(0: half the soft open-file limit, at most 32768); each costs a descriptor and a map",
    )
    # 4 MiB: the faulted-in window (and the first one of the next file, made ahead) counts in the
    # broker's RSS from the start; 16 MiB windows cost 32 MiB of an idle broker for no measurable gain
    # (a window is asked for when half of it is left: every 2 MiB of records, on the allocator thread).
    mapped_file_reserve_ahead_bytes: int = Field(
        4 * 1024 * 1024,
        alias="mappedFileReserveAhead",
        ge=0,
        description="how far ahead of the commit-log writer space is reserved (0: not at all)",
    )
    # -- flush -------------------------------------------------------------------------------------
    flush_disk_type: FlushDiskType = Field(FlushDiskType.ASYNC_FLUSH, alias="flushDiskType")
    """ASYNC_FLUSH (a send returns once written) or SYNC_FLUSH (once on disk)."""
    flush_interval_commit_log_ms: int = Field(500, alias="flushIntervalCommitLog", ge=1)
    """How often the commit log is flushed under ASYNC_FLUSH (ms)."""
    flush_commit_log_least_pages: int = Field(
        4,
        alias="flushCommitLogLeastPages",
        ge=0,
        description="ASYNC_FLUSH flushes when this many 4 KiB pages are dirty",
    )
    flush_commit_log_thorough_interval_ms: int = Field(
        10_000,
        alias="flushCommitLogThoroughInterval",
        ge=0,
        description="full flush regardless of dirty pages",
    )
    flush_interval_consume_queue_ms: int = Field(1000, alias="flushIntervalConsumeQueue", ge=1)
    """How often consume queues are flushed (ms)."""
    flush_consume_queue_least_pages: int = Field(2, alias="flushConsumeQueueLeastPages", ge=0)
    """Flush a consume queue once this many 4 KiB pages are dirty."""
    flush_consume_queue_thorough_interval_ms: int = Field(
        60_000, alias="flushConsumeQueueThoroughInterval", ge=0
    )
    """Flush consume queues whatever is dirty at least this often (ms)."""
    sync_flush_timeout_ms: int = Field(
        5000,
        alias="syncFlushTimeout",
        ge=1,
        description="SYNC_FLUSH put waits this long, then FLUSH_DISK_TIMEOUT",
    )
    # -- messages ----------------------------------------------------------------------------------
    max_message_size_bytes: int = Field(
        4 * 1024 * 1024,
        alias="maxMessageSize",
        ge=1,
        description="largest body accepted (MESSAGE_ILLEGAL above)",
    )
    check_crc_on_recover: bool = Field(True, alias="checkCRCOnRecover")
    """Check each record's body CRC while recovering after a crash."""
    message_delay_level: str = Field(DEFAULT_DELAY_LEVELS, alias="messageDelayLevel")
    """The delay of each level of delayed messages, space-separated (1s 5s 10s 30s 1m ... 2h)."""
    # -- reads -------------------------------------------------------------------------------------
    max_transfer_bytes_on_message_in_memory: int = Field(
        256 * 1024, alias="maxTransferBytesOnMessageInMemory", ge=1
    )
    """Most bytes one pull returns from memory."""
    max_transfer_count_on_message_in_memory: int = Field(32, alias="maxTransferCountOnMessageInMemory", ge=1)
    """Most messages one pull returns from memory."""
    max_transfer_bytes_on_message_in_disk: int = Field(
        64 * 1024, alias="maxTransferBytesOnMessageInDisk", ge=1
    )
    """Most bytes one pull returns when reading from disk."""
    max_transfer_count_on_message_in_disk: int = Field(8, alias="maxTransferCountOnMessageInDisk", ge=1)
    """Most messages one pull returns when reading from disk."""
    access_message_in_memory_max_ratio_pct: int = Field(
        40, alias="accessMessageInMemoryMaxRatio", ge=0, le=100, description="% of RAM counted as 'in memory'"
    )
    default_query_max_num: int = Field(32, alias="defaultQueryMaxNum", ge=1)
    """Most messages one QUERY_MESSAGE returns."""
    # -- index -------------------------------------------------------------------------------------
    message_index_enable: bool = Field(True, alias="messageIndexEnable")
    """Index messages by key and unique id (IndexFile) for queries."""
    max_hash_slot_num: int = Field(5_000_000, alias="maxHashSlotNum", ge=1)
    """Hash slots of one index file."""
    max_index_num: int = Field(5_000_000 * 4, alias="maxIndexNum", ge=1)
    """Entries of one index file."""
    # -- cleanup -----------------------------------------------------------------------------------
    file_reserved_time_h: float = Field(
        72, alias="fileReservedTime", gt=0, description="commit-log file lifetime"
    )
    delete_when: str = Field(
        "04", alias="deleteWhen", description="hours of day ('04' or '04;05') to delete at"
    )
    disk_max_used_space_ratio_pct: int = Field(
        75, alias="diskMaxUsedSpaceRatio", ge=10, le=95, description="delete early when the disk is fuller"
    )
    disk_space_clean_forcibly_ratio_pct: int = Field(
        85,
        alias="diskSpaceCleanForciblyRatio",
        ge=10,
        le=99,
        description="above it, delete unexpired files too",
    )
    disk_space_warning_level_ratio_pct: int = Field(
        90,
        alias="diskSpaceWarningLevelRatio",
        ge=10,
        le=99,
        description="above it, puts are refused (disk full)",
    )
    clean_resource_interval_ms: int = Field(10_000, alias="cleanResourceInterval", ge=1)
    """How often expired commit-log files are looked for (ms)."""
    clean_file_forcibly_enable: bool = Field(
        True, alias="cleanFileForciblyEnable", description="above the disk limit delete even unexpired files"
    )
    # -- roles and HA (read by the broker) -----------------------------------------------------------
    broker_role: BrokerRole = Field(BrokerRole.ASYNC_MASTER, alias="brokerRole")
    """ASYNC_MASTER, SYNC_MASTER (a send waits for a slave) or SLAVE."""
    offset_check_in_slave: bool = Field(False, alias="offsetCheckInSlave")
    """Let a slave correct a pull offset that is out of range (Java offsetCheckInSlave)."""
    ha_listen_port: int = Field(
        10912,
        alias="haListenPort",
        ge=0,
        le=65535,
        description="where a master accepts its slaves (0: any free port); the broker's loader makes it "
        "listenPort + 1 unless set, as Java's BrokerStartup does",
    )
    ha_master_address: str | None = Field(
        None, alias="haMasterAddress", description="a slave's master HA address; default: from the NameServer"
    )
    ha_send_heartbeat_interval_ms: int = Field(
        5000, alias="haSendHeartbeatInterval", ge=1, description="idle master and slave say so this often"
    )
    ha_housekeeping_interval_ms: int = Field(
        20_000,
        alias="haHousekeepingInterval",
        ge=1,
        description="an HA connection silent this long is closed",
    )
    ha_transfer_batch_size_bytes: int = Field(
        32 * 1024, alias="haTransferBatchSize", ge=1, description="most commit-log bytes in one HA frame"
    )
    ha_slave_fallbehind_max_bytes: int = Field(
        256 * 1024 * 1024,
        alias="haSlaveFallbehindMax",
        ge=0,
        description="SYNC_MASTER: a slave further behind than this is not available (SLAVE_NOT_AVAILABLE)",
    )
    slave_timeout_ms: int = Field(
        3000, alias="slaveTimeout", ge=1, description="SYNC_MASTER: a put waits this long for a slave's ack"
    )

    @field_validator("mapped_file_size_consume_queue_bytes")
    @classmethod
    def _whole_units(cls, value: int) -> int:
        return -(-value // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE

    @field_validator("flush_disk_type", "broker_role", mode="before")
    @classmethod
    def _enum_by_name(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("delete_when")
    @classmethod
    def _hours(cls, value: str) -> str:
        for part in value.split(";"):
            if not part.strip().isdigit() or not 0 <= int(part) <= 23:
                raise ValueError(f"deleteWhen takes hours 00-23 separated by ';', not {value!r}")
        return value

    # -- derived paths -------------------------------------------------------------------------------
    @property
    def root_dir(self) -> Path:
        return Path(os.path.expanduser(self.store_path_root_dir))

    @property
    def commit_log_dir(self) -> Path:
        if self.store_path_commit_log:
            return Path(os.path.expanduser(self.store_path_commit_log))
        return self.root_dir / "commitlog"

    @property
    def consume_queue_dir(self) -> Path:
        return self.root_dir / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root_dir / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.root_dir / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.root_dir / "abort"

    @property
    def lock_path(self) -> Path:
        return self.root_dir / "lock"

    @property
    def consume_queue_units_per_file(self) -> int:
        return self.mapped_file_size_consume_queue_bytes // CQ_STORE_UNIT_SIZE

    @property
    def delete_hours(self) -> frozenset[int]:
        return frozenset(int(part) for part in self.delete_when.split(";"))

    @property
    def is_sync_flush(self) -> bool:
        return self.flush_disk_type is FlushDiskType.SYNC_FLUSH

    @property
    def is_slave(self) -> bool:
        """brokerRole SLAVE: the store takes the master's replicated bytes, never a put."""
        return self.broker_role is BrokerRole.SLAVE
