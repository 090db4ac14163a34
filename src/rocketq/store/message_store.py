"""MessageStore: the one facade the broker uses (Java DefaultMessageStore, decomposed).

CONTRACT (the broker codes against these signatures; the store issue implements them):
- Single writer: puts run on the event loop thread; the append itself is synchronous memory work on the
  mapping. `put_message` / `put_messages` are coroutines only because SYNC_FLUSH waits for the group
  commit (an fsync on a worker thread shared by concurrent puts) up to syncFlushTimeout.
- Reads (`get_message`, offsets, lookups) are synchronous and cheap; they never block on disk flushes.
- Arrival listeners are called synchronously after dispatch of each record into a consume queue:
  listener(topic, queue_id, logical_offset, tags_code, store_timestamp, properties); one added with a
  topic is called for that topic's records only.

Implementation notes (MessageStore below): dispatch is inline, so the consume queues and the index are as
far as the commit log when a put returns (dispatch_behind_bytes() is 0). Beyond the contract it offers
open()/close() (synchronous lifecycle without background services, for tools and tests), flush(),
look_message_by_offset(), get_message_total_in_queue(), get_earliest_message_time_in_store(),
execute_delete_files_manually(), is_os_page_cache_busy(), and `recovery` (what the last open found).
Statuses follow Java: get_min_offset_in_queue() is -1 for a queue that does not exist, 0 is the max.
"""

from __future__ import annotations

import errno
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_record
from rocketq.common.service import PeriodicService, Service, ServiceState
from rocketq.store.checkpoint import StoreCheckpoint, StoreLock, create_abort_file, remove_abort_file
from rocketq.store.cleanup import CleanupService
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rocketq.store.consume_queue import RESERVE_WINDOW as CQ_RESERVE_WINDOW
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.delay import DelayLevels
from rocketq.store.disk_space import DiskSpace, DiskUsage, disk_used_ratio
from rocketq.store.dispatch import Dispatcher
from rocketq.store.errors import StoreError
from rocketq.store.flush import (
    AsyncFlushService,
    CommitLogFlusher,
    GroupCommitService,
    QueueFlushService,
    dispatched_offset,
    flush_queues,
)
from rocketq.store.get_service import GetService
from rocketq.store.ha.replica import ReplicaWriter, dispatch_whole_records
from rocketq.store.index_file import RESERVE_WINDOW as INDEX_RESERVE_WINDOW
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file_queue import FileAllocator
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.protocols import ArrivalListener, MessageFilter
from rocketq.store.put_service import PutService
from rocketq.store.recovery import RecoveryReport, recover
from rocketq.store.status import GetMessageStatus, GetResult, PutMessageStatus, PutResult, QueryResult

log = logging.getLogger("rocketq.store")


class ReplicaAcks(Protocol):
    """What a SYNC_MASTER put asks of replication (rocketq.store.ha.master.HAService)."""

    def is_slave_ok(self, master_put_where: int) -> bool: ...
    async def wait_for_slave(self, offset: int, timeout_ms: int) -> bool: ...


class MessageStore:
    """The store: CommitLog, ConsumeQueues and IndexFiles on mapped files, with flush, recovery, cleanup.

    Lifecycle: `open()` (synchronous: lock, load, recover) then `await start()` (background flush and
    cleanup; start() opens first if needed), `await shutdown()` (final flush, clean-shutdown marks).
    Unit tests may use open()/close() and drive `flush()` and `cleanup.run_once()` themselves.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Clock = SYSTEM_CLOCK,
        *,
        disk_usage: DiskUsage = disk_used_ratio,
    ) -> None:
        self.config = config
        self.clock = clock
        self._allocator = FileAllocator()
        self.commit_log = CommitLog(config, self._allocator)
        self.queues = ConsumeQueueTable(
            config.consume_queue_dir,
            config.mapped_file_size_consume_queue_bytes,
            config.max_mapped_consume_queue_files,
        )
        self.index: IndexService | None = None
        if config.message_index_enable:
            self.index = IndexService(config.index_dir, config.max_hash_slot_num, config.max_index_num, clock)
        self.delay_levels = DelayLevels(config.message_delay_level)
        self.dispatcher = Dispatcher(self.queues, self.index, self.delay_levels)
        # Refuse puts while the disk has less room than a largest record and the next reservation windows
        # of a consume queue and the index need, plus a MiB for checkpoint and config files.
        headroom = self.commit_log.max_record_size + 2 * CQ_RESERVE_WINDOW + (1 << 20)
        if self.index is not None:
            headroom += INDEX_RESERVE_WINDOW
            self.index.on_space_error = self._index_space_error
        self.space = DiskSpace(config, headroom, disk_usage)
        self.commit_log.queue.reservation.keep_free = headroom
        self.space.probe = self._probe_space
        self._put = PutService(
            self.commit_log, self.queues, self.dispatcher, clock.now_ms, config.max_message_size_bytes
        )
        self._put.on_disk_full = self._disk_full
        self._get = GetService(config, self.commit_log, self.queues, lambda: self.index)
        self.cleanup = CleanupService(config, clock, self.commit_log, self.queues, self.index, self.space)
        self.checkpoint: StoreCheckpoint | None = None
        self.recovery: RecoveryReport | None = None
        self._lock: StoreLock | None = None
        self._flusher: CommitLogFlusher | None = None
        self._services: list[Service] = []
        self._group_commit: GroupCommitService | None = None
        self._executors: list[ThreadPoolExecutor] = []
        self._state = ServiceState.CREATE_JUST  # -> OPEN (open()) -> RUNNING (start()) -> SHUTDOWN_ALREADY
        self._sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self._writable = False  # open and a master: the put path's one check (disk full aside)
        # SYNC_MASTER: a put waits for a slave's ack through `ha` (set by the broker; None: no slave).
        self._sync_master = config.broker_role is BrokerRole.SYNC_MASTER
        self.ha: ReplicaAcks | None = None
        self._replica: ReplicaWriter | None = None  # a slave's writer of replicated data

    # -- lifecycle -----------------------------------------------------------------------------------
    def open(self) -> RecoveryReport:
        """Lock the directory, map the files and recover; raises StoreCorruptError or StoreLockedError."""
        if self._state is not ServiceState.CREATE_JUST:
            raise StoreError(f"the store cannot open from state {self._state}")
        cfg = self.config
        cfg.root_dir.mkdir(parents=True, exist_ok=True)
        self._lock = StoreLock(cfg.lock_path)
        try:
            abnormal = cfg.abort_path.exists()
            self.checkpoint = StoreCheckpoint(cfg.checkpoint_path)
            self.commit_log.load()
            self.queues.load()
            if self.index is not None:
                self.index.load()
            self.recovery = recover(
                self.commit_log, self.queues, self.index, self.dispatcher, self.checkpoint,
                abnormal=abnormal, check_crc=cfg.check_crc_on_recover,
            )  # fmt: skip
            self._flusher = CommitLogFlusher(self.commit_log, self.checkpoint)
            if self.commit_log.space_error is not None:  # no room for the file to append to
                self.space.mark_full(self.commit_log.space_error, "commit log")
            if self.recovery.redispatch_stopped_at is not None:
                # A full disk stopped recovery's re-dispatch: the queues end there until the probe
                # (when the disk has room) dispatches the rest; puts stay refused until then, since
                # their queue offsets follow the queues' ends.
                self.commit_log.dispatch_end = self.recovery.redispatch_stopped_at
                assert self.recovery.space_error is not None
                self.space.mark_full(self.recovery.space_error, "consume queues (recovery)")
            self.space.check()
            create_abort_file(cfg.abort_path)
            self.checkpoint.flush()
        except BaseException:
            self._close_files()
            raise
        if abnormal:
            log.warning("store %s: recovered after a crash: %s", cfg.root_dir, self.recovery)
        self._state = ServiceState.OPEN
        self._writable = cfg.broker_role is not BrokerRole.SLAVE
        return self.recovery

    async def start(self) -> None:
        if self._state is ServiceState.CREATE_JUST:
            self.open()
        if self._state is not ServiceState.OPEN:
            raise StoreError(f"the store cannot start from state {self._state}")
        if self.space.full:
            log.error(
                "store %s starts with a full disk: reads are served, puts are refused until there is room (%s)",
                self.config.root_dir, self.space.reason,
            )  # fmt: skip
        assert self._flusher is not None and self.checkpoint is not None
        cfg = self.config
        commit_exec = ThreadPoolExecutor(1, thread_name_prefix="FlushCommitLog")
        queue_exec = ThreadPoolExecutor(1, thread_name_prefix="FlushConsumeQueue")
        self._executors = [commit_exec, queue_exec]
        if cfg.is_sync_flush:
            self._group_commit = GroupCommitService(self._flusher, cfg.sync_flush_timeout_ms)
            self._services.append(self._group_commit)
        else:
            self._services.append(AsyncFlushService(self._flusher, cfg, self.clock, commit_exec))
        self._services.append(
            QueueFlushService(
                self.commit_log, self.queues, self.index, self.checkpoint, cfg, self.clock, queue_exec
            )
        )
        self._services.append(
            PeriodicService(
                "CleanCommitLogService", cfg.clean_resource_interval_ms / 1000, self._cleanup_round
            )
        )
        self._services.append(PeriodicService("DiskSpaceService", DISK_CHECK_INTERVAL_S, self._space_round))
        for service in self._services:
            await service.start()
        self._state = ServiceState.RUNNING

    async def _space_round(self) -> None:
        """Between puts too: a disk that filled from outside, or that has room again, is seen within a second."""
        self.space.check()

    def _probe_space(self) -> None:
        """Raise OSError unless the next append has room: its commit-log window reserved (or its file
        created), the index entries a full disk kept back written."""
        if self._state not in _OPEN_STATES:
            return
        if self.commit_log.dispatch_end is not None and self._replica is None and self._writable:
            dispatch_whole_records(self.commit_log, self.dispatcher)  # what recovery could not dispatch
            if self.commit_log.dispatch_end < self.commit_log.max_offset:  # a record it cannot read
                raise OSError(
                    errno.EIO, f"the commit log cannot be dispatched past {self.commit_log.dispatch_end}"
                )
            log.info("store: the records recovery could not dispatch for lack of room are dispatched")
            self.commit_log.dispatch_end = None  # dispatch is inline again
        self.commit_log.ensure_room(self.commit_log.max_record_size)
        if self.index is not None:
            self.index.drain()
            if self.index.space_error is not None:
                raise self.index.space_error

    def _index_space_error(self, exc: OSError) -> None:
        self.space.mark_full(exc, "index")

    def _disk_full(self, exc: OSError, what: str) -> PutResult:
        """A put found no room (a reservation failed with ENOSPC): refuse it, and the next ones."""
        self.space.mark_full(exc, what)
        self.space.refused(f"the broker's disk is full: {self.space.reason}")
        return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None, self.space.remark())

    async def _cleanup_round(self) -> None:
        self.cleanup.run_once()
        self.queues.release_idle()  # queues idle for a whole round give their maps and descriptors back

    async def shutdown(self) -> None:
        """Stop the services, flush everything, mark a clean shutdown and release the directory."""
        if self._state not in _OPEN_STATES:
            return
        for service in reversed(self._services):
            await service.stop()
        self._services = []
        self._group_commit = None
        self.close()

    def close(self) -> None:
        """Synchronous clean shutdown (no services may be running)."""
        if self._state not in _OPEN_STATES:
            return
        self._state = ServiceState.SHUTDOWN_ALREADY
        self._writable = False
        self.flush()
        assert self.checkpoint is not None
        dispatched = dispatched_offset(self.commit_log, self.index)  # a slave's may lag by a split record
        self.checkpoint.physic_offset = self.commit_log.max_offset
        self.checkpoint.logics_offset = self.checkpoint.index_offset = dispatched
        self.checkpoint.flush()
        remove_abort_file(self.config.abort_path)
        self._close_files()

    def _close_files(self) -> None:
        self._allocator.shutdown()
        for executor in self._executors:
            executor.shutdown(wait=True)
        self._executors = []
        self.commit_log.close()
        self.queues.close()
        if self.index is not None:
            self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def flush(self) -> int:
        """Flush commit log, queues, index and checkpoint now; returns the durable commit-log offset."""
        assert self._flusher is not None and self.checkpoint is not None
        where = self._flusher.flush(0)
        flush_queues(self.commit_log, self.queues, self.index, self.checkpoint, self.config)
        return where

    @property
    def is_open(self) -> bool:
        return self._state in _OPEN_STATES

    # -- puts ----------------------------------------------------------------------------------------
    def _refuse(self) -> PutResult | None:
        """SERVICE_NOT_AVAILABLE, or None when the put may go on (DefaultMessageStore.checkStoreStatus).

        Refusals are logged here, sampled as Java samples them (DiskSpace.refused); the broker does not
        log them again.
        """
        space = self.space
        if self._state not in _OPEN_STATES:
            remark = "the message store is not open"
        elif self.config.broker_role is BrokerRole.SLAVE:
            remark = "a slave does not accept messages"
        elif space.full and space.check():  # full: read the disk again (cheap, puts are refused)
            space.refused(f"the broker's disk is full: {space.reason}")
            return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None, space.remark())
        else:
            return None
        space.refused(remark)
        return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None, remark)

    async def put_message(self, msg: BrokerMessage) -> PutResult:
        """Append one message; under SYNC_FLUSH wait for its flush unless WAIT=false. Never raises."""
        space = self.space
        if not self._writable or space.full or (space.near and space.check_if_near()):
            refused = self._refuse()
            if refused is not None:
                return refused
        result = self._put.put(msg)
        if self._sync and result.status is _PUT_OK:
            group = self._group_commit
            if group is None or msg.properties.get(C.PROPERTY_WAIT_STORE_MSG_OK) == "false":
                await self._wait_for_flush(result, wait=False)  # a flush inline, or a wake-up
            else:  # the common case inline: one coroutine less per put
                append = result.append
                assert append is not None
                if not await group.request(append.wrote_offset + append.wrote_bytes):
                    self._flush_timed_out(result)
        if (
            self._sync_master
            and result.status in _REPLICATED
            and msg.properties.get(C.PROPERTY_WAIT_STORE_MSG_OK) != "false"
        ):
            await self._wait_for_slave(result)
        return result

    async def put_message_list(self, msgs: list[BrokerMessage]) -> list[PutResult]:
        """Append several messages, each its own record with its own result (a bad one fails alone), then
        wait once for the flush (SYNC_FLUSH) and the replica (SYNC_MASTER) covering all of them. Never raises.

        What put_message does for each, with the waits shared: the store's state is checked once, and
        under SYNC_FLUSH one group-commit request for the highest end offset answers every message that
        waits (WAIT not false); should it time out, a message whose own end was flushed meanwhile is
        still PUT_OK. The same for the replica's acknowledgement under SYNC_MASTER.
        """
        space = self.space
        if not self._writable or space.full or (space.near and space.check_if_near()):
            refused = self._refuse()
            if refused is not None:
                return [refused] * len(msgs)
        results = self._put.put_run(msgs)
        if not (self._sync or self._sync_master):
            return results
        waiting: list[tuple[PutResult, int]] = []  # (result, its end offset) of the messages that wait
        no_wait = False
        for msg, result in zip(msgs, results, strict=True):
            append = result.append
            if append is None:
                continue
            if msg.properties.get(C.PROPERTY_WAIT_STORE_MSG_OK) == "false":
                no_wait = True
            else:
                waiting.append((result, append.wrote_offset + append.wrote_bytes))
        if self._sync:
            await self._flush_all(waiting, no_wait)
        if self._sync_master and waiting:
            await self._replicate_all(waiting)
        return results

    async def _flush_all(self, waiting: list[tuple[PutResult, int]], no_wait: bool) -> None:
        group = self._group_commit
        if group is None:  # opened without services (tests, tools): flush inline
            assert self._flusher is not None
            if waiting or no_wait:
                self._flusher.flush(0)
            return
        if not waiting:
            if no_wait:
                group.wakeup()
            return
        if await group.request(max(end for _r, end in waiting)):
            return
        flushed = self.commit_log.queue.flushed_where
        for result, end in waiting:
            if end > flushed:
                self._flush_timed_out(result)

    async def _replicate_all(self, waiting: list[tuple[PutResult, int]]) -> None:
        """_wait_for_slave for several results: one wait for the highest end offset of those replicated."""
        ha = self.ha
        replicated = [(r, end) for r, end in waiting if r.status in _REPLICATED]
        if not replicated:
            return
        if ha is None:
            for result, _end in replicated:
                result.status = PutMessageStatus.SLAVE_NOT_AVAILABLE
            return
        pending = []
        for result, end in replicated:
            if ha.is_slave_ok(end):
                pending.append((result, end))
            else:
                result.status = PutMessageStatus.SLAVE_NOT_AVAILABLE
        if not pending:
            return
        timeout_ms = self.config.slave_timeout_ms
        if await ha.wait_for_slave(max(end for _r, end in pending), timeout_ms):
            return
        late = 0
        for result, end in pending:
            if not await ha.wait_for_slave(end, 0):  # acknowledged meanwhile: True without waiting
                result.status = PutMessageStatus.FLUSH_SLAVE_TIMEOUT
                late += 1
        log.warning("no slave acknowledged %d of %d puts within %d ms", late, len(pending), timeout_ms)

    async def put_messages(self, batch: BrokerMessageBatch) -> PutResult:
        """Append a batch as consecutive records of one queue (all or nothing)."""
        space = self.space
        if not self._writable or space.full or (space.near and space.check_if_near()):
            refused = self._refuse()
            if refused is not None:
                return refused
        result = self._put.put_batch(batch)
        if self._sync and result.status is PutMessageStatus.PUT_OK:
            await self._wait_for_flush(result, True)
        if self._sync_master and result.status in _REPLICATED:
            await self._wait_for_slave(result)
        return result

    async def _wait_for_slave(self, result: PutResult) -> None:
        """SYNC_MASTER (Java CommitLog.submitReplicaRequest): SLAVE_NOT_AVAILABLE without a slave close
        enough, FLUSH_SLAVE_TIMEOUT when none acknowledges the bytes within slaveTimeout."""
        append = result.append
        assert append is not None
        end = append.wrote_offset + append.wrote_bytes
        ha = self.ha
        if ha is None or not ha.is_slave_ok(end):
            result.status = PutMessageStatus.SLAVE_NOT_AVAILABLE
        elif not await ha.wait_for_slave(end, self.config.slave_timeout_ms):
            log.warning("no slave acknowledged offset %d within %d ms", end, self.config.slave_timeout_ms)
            result.status = PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    # -- replication (a slave) -------------------------------------------------------------------------
    def append_replica(self, offset: int, data: bytes) -> int:
        """A slave: write the master's commit-log bytes at `offset` and dispatch the records they complete;
        returns the new end of the commit log. Raises ValueError on a gap or an overlap."""
        if not self.is_open:
            raise ValueError("the message store is not open")
        if self._replica is None:
            self._replica = ReplicaWriter(self.commit_log, self.dispatcher)
        return self._replica.append(offset, data)

    async def _wait_for_flush(self, result: PutResult, wait: bool) -> None:
        append = result.append
        assert append is not None and self._flusher is not None
        end = append.wrote_offset + append.wrote_bytes
        group = self._group_commit
        if group is None:  # opened without services (tests, tools): flush inline
            self._flusher.flush(0)
            return
        if not wait:
            group.wakeup()
            return
        if not await group.request(end):
            self._flush_timed_out(result)

    def _flush_timed_out(self, result: PutResult) -> None:
        append = result.append
        assert append is not None
        end = append.wrote_offset + append.wrote_bytes
        log.error("flush of offset %d timed out after %d ms", end, self.config.sync_flush_timeout_ms)
        result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT

    # -- reads ---------------------------------------------------------------------------------------
    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: MessageFilter | None = None,
        max_total_bytes: int | None = None,
        *,
        joined: bool = False,
    ) -> GetResult:
        """Up to `max_count` records of a queue from `offset` (Java DefaultMessageStore.getMessage)."""
        if not self.is_open:
            return GetResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, offset)
        return self._get.get_message(
            topic, queue_id, offset, max_count, message_filter, max_total_bytes, joined=joined
        )

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self.queues.get(topic, queue_id)
        return queue.max_offset if queue is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The first offset still readable; -1 for a queue that does not exist (as Java)."""
        queue = self.queues.get(topic, queue_id)
        return queue.min_offset if queue is not None else -1

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return self._get.offset_by_time(topic, queue_id, timestamp_ms)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self._get.earliest_message_time(topic, queue_id)

    def get_earliest_message_time_in_store(self) -> int:
        """STORETIMESTAMP of the oldest record still stored; -1 when empty."""
        return self.commit_log.store_timestamp(self.commit_log.min_offset, 1)

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int:
        queue = self.queues.get(topic, queue_id)
        unit = queue.unit(offset) if queue is not None else None
        return unit[0] if unit is not None else 0

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        return self._get.store_time_of_unit(topic, queue_id, offset)

    def get_message_total_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self.queues.get(topic, queue_id)
        return queue.max_offset - queue.min_offset if queue is not None else -1

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        """The record at a commit-log offset (VIEW_MESSAGE_BY_ID), or None when no record starts there
        (or, with `size`, none of that size: a damaged consume-queue unit)."""
        return self.commit_log.read_record(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        record = self.select_one_message_by_offset(commit_log_offset)
        if record is None:
            return None
        try:
            return decode_record(record, decompress_body=False)[0]
        except ValueError:  # a RecordDecodeError, or text in it that does not decode
            return None

    def query_message(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> QueryResult:
        """Records of `topic` with `key` (a KEYS word or the UNIQ_KEY) stored in [begin_ts, end_ts]."""
        return self._get.query_message(topic, key, max_num, begin_ts, end_ts)

    # -- topics, listeners, info ---------------------------------------------------------------------
    def delete_topics(self, topics: set[str]) -> int:
        """Drop the consume queues of `topics` (their records age out of the commit log); returns how many topics."""
        return sum(1 for topic in topics if self.queues.delete_topic(topic))

    def clean_unused_topics(self, keep: set[str]) -> int:
        """Drop the queues of every topic not in `keep` (the schedule and op-half topics always stay)."""
        doomed = {t for t in self.queues.topics() if t not in keep and t not in _ALWAYS_KEPT_TOPICS}
        return self.delete_topics(doomed)

    def queue_ids_of(self, topic: str) -> set[int]:
        """The ids of the consume queues `topic` has in this store."""
        return set(self.queues.queues_of(topic))

    def add_arrival_listener(self, listener: ArrivalListener, topic: str | None = None) -> None:
        """Call `listener` after each record is dispatched; with `topic`, only for that topic's records
        (a put pays nothing for listeners of other topics)."""
        self.dispatcher.add_listener(listener, topic)

    def read_commit_log(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to `max_bytes` commit-log bytes from `offset` within its file (what a slave is sent)."""
        return self.commit_log.read_available(offset, max_bytes)

    def get_max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    def get_flushed_phy_offset(self) -> int:
        """How far the commit log is on disk (Java CommitLog#getFlushedWhere)."""
        return self.commit_log.queue.flushed_where

    def get_min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    def dispatch_behind_bytes(self) -> int:
        end = self.commit_log.dispatch_end  # a slave's: a record split between two frames
        return 0 if end is None else self.commit_log.max_offset - end  # else dispatch is inline

    def is_os_page_cache_busy(self) -> bool:
        return False  # one writer on the loop thread: a put never waits for a lock

    def execute_delete_files_manually(self) -> None:
        self.cleanup.execute_delete_files_manually()

    def runtime_info(self) -> dict[str, Any]:
        """Java getRuntimeInfo keys (values as strings, as the broker's KVTable carries them)."""
        cfg = self.config
        return {
            "commitLogMinOffset": str(self.get_min_phy_offset()),
            "commitLogMaxOffset": str(self.get_max_phy_offset()),
            "commitLogDiskRatio": str(self.cleanup.disk_usage(cfg.commit_log_dir)),
            "consumeQueueDiskRatio": str(self.cleanup.disk_usage(cfg.consume_queue_dir)),
            "dispatchBehindBytes": str(self.dispatch_behind_bytes()),
            "earliestMessageTimeStamp": str(self.get_earliest_message_time_in_store()),
        }


_PUT_OK = PutMessageStatus.PUT_OK
_OPEN_STATES = (ServiceState.OPEN, ServiceState.RUNNING)
DISK_CHECK_INTERVAL_S = 1.0
_REPLICATED = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT})
_ALWAYS_KEPT_TOPICS = frozenset({C.RMQ_SYS_SCHEDULE_TOPIC, C.RMQ_SYS_TRANS_OP_HALF_TOPIC})
