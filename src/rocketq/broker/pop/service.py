"""PopService: the broker side of SimpleConsumer consumption (POP / ACK / CHANGE_INVISIBLETIME, revive).

Port of the state machine of RocketMQ 5's PopMessageProcessor, AckMessageProcessor,
ChangeInvisibleTimeProcessor and PopReviveService: Ready -> Inflight -> Commit | Ready (retry)
| DLQ. A pop reads from the queue's pop offset (the group's consumer offset, moved on at once), writes a
checkpoint (PopCheckPoint) into the revive log before answering, and hands the messages out. An ack
writes an AckMsg; a change of invisible time writes a new one-message checkpoint from now and acks the
old one. When a checkpoint's time runs out, each message neither acked nor changed is put back:
into the pop retry topic `%RETRY%<group>_<topic>` (RETRY_TOPIC, ORIGIN_MESSAGE_ID and 1ST_POP_TIME set,
RECONSUMETIMES + 1), or, once its reconsume times reached the group's retryMaxTimes, into
`%DLQ%<group>`; then a `done` mark is written. Every record goes through the commit log (revive topic
`rmq_sys_REVIVE_LOG_<cluster>`, queue 0), so a restart replays them from the revive offset (kept as the
consumer offset of CID_RMQ_SYS_REVIVE_GROUP, persisted with the other offsets) and nothing in flight is
lost: what was in flight comes back when its time runs out, and handles given out before the restart
still work.
Deviations: RocketMQ 5 delivers checkpoints back to itself through timer messages and merges acks in
memory first; here the live checkpoints are indexed in memory (InflightTable) and the log is only read
at start-up. Orderly POP is not supported. Messages of the retry topic are returned with their stored
topic (RocketMQ's popResponseReturnActualRetryTopic=true), which every client maps back with
RETRY_TOPIC or the requested topic.
"""

from __future__ import annotations

import itertools
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.checkpoint import (
    ACK_TAG,
    CK_TAG,
    DONE_TAG,
    REVIVE_GROUP,
    AckMsg,
    CkKey,
    PopCheckPoint,
    decode,
    encode,
    revive_topic,
)
from rocketq.broker.pop.inflight import InflightTable
from rocketq.broker.topic_config import RW
from rocketq.common import constants as C
from rocketq.common.errors import RocketQError
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.service import PeriodicService
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.headers.pop import (
    INIT_MODE_FIRST,
    ExtraInfo,
    offset_info_entry,
    pop_retry_topic_v1,
)
from rocketq.store.message import BrokerMessage
from rocketq.store.protocols import MessageFilter
from rocketq.store.status import GetMessageStatus

log = logging.getLogger("rocketq.broker.pop")

REVIVE_QUEUE_ID = 0
RETRY_FIRST_PERCENT = 20  # Java popFromRetryProbability: share of pops that look at the retry topic first
REVIVE_RETRY_PAUSE_MS = 1_000
_RESET_STATUSES = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)


class PopStoreError(RocketQError):
    """A POP bookkeeping record could not be stored; the request changed nothing."""


@dataclass(slots=True)
class PopResult:
    pop_time: int
    invisible_time: int
    records: list[bytes] = field(default_factory=list)
    start_offset_info: list[str] = field(default_factory=list)
    msg_offset_info: list[str] = field(default_factory=list)
    rest_num: int = 0


class PopService:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.store: Any = ctx.store
        self.offsets = ctx.consumer_offset_manager
        self.table = InflightTable()
        self.revive_topic = revive_topic(ctx.broker_config.broker_cluster_name)
        self._busy: set[tuple[str, str, int]] = set()
        self._writing: dict[int, int] = {}  # token -> revive-log end when a write began
        self._tokens = itertools.count()
        self._random = random.Random()
        self._revive_loop: PeriodicService | None = None  # the revive loop (PopReviveService), woken by acks
        self._revive_cap_s = 0.0  # the longest wait between rounds: reviveInterval when started
        self.revived = 0
        self.dead_lettered = 0

    @property
    def broker_name(self) -> str:
        return self.ctx.broker_config.broker_name

    # -- the revive log ------------------------------------------------------------------------------
    async def _log(self, tag: str, record: PopCheckPoint | AckMsg) -> int | None:
        """Append one bookkeeping record; its revive-log queue offset, or None when the store refused it."""
        store_host = self.ctx.store_host
        msg = BrokerMessage(
            topic=self.revive_topic, queue_id=REVIVE_QUEUE_ID, body=encode(record),
            properties={C.PROPERTY_TAGS: tag}, tags_code=java_hash_code(tag),
            born_timestamp=self.ctx.clock.now_ms(), born_host=store_host, store_host=store_host,
        )  # fmt: skip
        token = next(self._tokens)
        self._writing[token] = self.store.get_max_offset_in_queue(self.revive_topic, REVIVE_QUEUE_ID)
        try:
            result = await self.store.put_message(msg)
        finally:
            del self._writing[token]
        if not result.is_ok or result.append is None:
            log.error("writing a POP %s record failed: %s %s", tag, result.status.value, result.remark)
            return None
        return int(result.append.logical_offset)

    def commit_revive_offset(self) -> None:
        """Move the replay start to the oldest record a live (or being written) checkpoint needs."""
        candidates = list(self._writing.values())
        live = self.table.min_revive_offset()
        if live is not None:
            candidates.append(live)
        low = (
            min(candidates)
            if candidates
            else self.store.get_max_offset_in_queue(self.revive_topic, REVIVE_QUEUE_ID)
        )
        self.offsets.commit_offset("revive", REVIVE_GROUP, self.revive_topic, REVIVE_QUEUE_ID, low)

    def replay(self) -> int:
        """Rebuild the in-flight table from the revive log (start-up); returns how many records were read."""
        topic = self.revive_topic
        offset = self.offsets.query_offset(REVIVE_GROUP, topic, REVIVE_QUEUE_ID)
        if offset < 0:
            offset = max(0, self.store.get_min_offset_in_queue(topic, REVIVE_QUEUE_ID))
        read = 0
        for _ in range(100_000_000):
            got = self.store.get_message(REVIVE_GROUP, topic, REVIVE_QUEUE_ID, offset, 32)
            for record, queue_offset in zip(got.records, got.queue_offsets, strict=True):
                self._replay_one(record, queue_offset)
                read += 1
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        if read:
            log.info(
                "POP state replayed from %d revive-log records: %d checkpoint(s) in flight",
                read,
                len(self.table),
            )
        return read

    def _replay_one(self, record: bytes, queue_offset: int) -> None:
        try:
            ext = decode_record(record)[0]
        except RecordDecodeError:
            return
        item = decode(ext.tags, ext.body)
        if isinstance(item, PopCheckPoint):
            item.revive_offset = queue_offset
            self.table.add(item, acked=item.bit_map)
            self._bump_pop_offset(item.cid, item.topic, item.queue_id, item.end_offset)
        elif isinstance(item, AckMsg):
            if ext.tags == DONE_TAG:
                self.table.remove(item.key)
                return
            state = self.table.get(item.key)
            index = state.ck.index_of(item.ack_offset) if state is not None else None
            if state is not None and index is not None:
                self.table.mark_acked(state, index)

    def _bump_pop_offset(self, group: str, topic: str, queue_id: int, end: int) -> None:
        if self.offsets.query_offset(group, topic, queue_id) < end:
            self.offsets.commit_offset("pop-replay", group, topic, queue_id, end)

    # -- pop -------------------------------------------------------------------------------------------
    def pop_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int:
        """Where the next pop of a queue starts (Java getPopOffset / getInitOffset)."""
        offset: int = self.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        low = max(0, self.store.get_min_offset_in_queue(topic, queue_id))
        if init_mode == INIT_MODE_FIRST or topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX) or low == 0:
            offset = low  # Java initPopOffsetByCheckMsgInMem: a queue never cleaned starts at 0
        else:
            offset = max(0, self.store.get_max_offset_in_queue(topic, queue_id) - 1)
        self.offsets.commit_offset("pop-init", group, topic, queue_id, offset)
        return offset

    def queues_to_read(
        self, group: str, topic: str, queue_id: int, read_queue_nums: int
    ) -> list[tuple[str, int]]:
        """(topic, queue) in the order one pop reads them: the topic's queues and its retry topic's."""
        if queue_id >= 0:
            normal = [(topic, queue_id)]
        else:
            start = self._random.randrange(max(read_queue_nums, 1))
            normal = [(topic, (start + i) % read_queue_nums) for i in range(read_queue_nums)]
        retry = pop_retry_topic_v1(topic, group)
        retry_config = self.ctx.topic_config_manager.select_topic_config(retry)
        retry_queues = [(retry, q) for q in range(retry_config.read_queue_nums)] if retry_config else []
        if self._random.randrange(100) < RETRY_FIRST_PERCENT:
            return retry_queues + normal
        return normal + retry_queues

    async def pop(
        self, group: str, queues: list[tuple[str, int]], max_nums: int, invisible_time: int, init_mode: int,
        message_filter: MessageFilter | None,
    ) -> PopResult:  # fmt: skip
        result = PopResult(self.ctx.clock.now_ms(), invisible_time)
        for topic, queue_id in queues:
            want = max_nums - len(result.records)
            if want <= 0:
                offset = self.pop_offset(group, topic, queue_id, init_mode)
                result.rest_num += max(0, self.store.get_max_offset_in_queue(topic, queue_id) - offset)
                continue
            await self._pop_queue(group, topic, queue_id, want, init_mode, message_filter, result)
        return result

    async def _pop_queue(
        self, group: str, topic: str, queue_id: int, want: int, init_mode: int,
        message_filter: MessageFilter | None, result: PopResult,
    ) -> None:  # fmt: skip
        key = (group, topic, queue_id)
        offset = self.pop_offset(group, topic, queue_id, init_mode)
        if key in self._busy:  # another pop of this queue is writing its checkpoint (Java: queue lock)
            result.rest_num += max(0, self.store.get_max_offset_in_queue(topic, queue_id) - offset)
            return
        self._busy.add(key)
        try:
            got = self.store.get_message(group, topic, queue_id, offset, want, message_filter)
            if got.status in _RESET_STATUSES and got.next_begin_offset != offset:
                log.info(
                    "pop offset of %s %s/%d corrected from %d to %d (%s)",
                    group,
                    topic,
                    queue_id,
                    offset,
                    got.next_begin_offset,
                    got.status.value,
                )
                offset = got.next_begin_offset
                self.offsets.commit_offset("pop", group, topic, queue_id, offset)
                got = self.store.get_message(group, topic, queue_id, offset, want, message_filter)
            if got.records:
                pop_time = self.table.unique_pop_time(group, topic, queue_id, offset, result.pop_time)
                if pop_time != result.pop_time:
                    return  # a checkpoint of this exact key exists (same ms): the next pop takes these
                ck = PopCheckPoint(
                    group,
                    topic,
                    queue_id,
                    offset,
                    pop_time,
                    result.invisible_time,
                    [o - offset for o in got.queue_offsets],
                    self.broker_name,
                )
                revive_offset = await self._log(CK_TAG, ck)
                if revive_offset is None:
                    return
                ck.revive_offset = revive_offset
                self.table.add(ck)
                result.records.extend(got.records)
                result.start_offset_info.append(offset_info_entry(topic, queue_id, offset))
                result.msg_offset_info.append(offset_info_entry(topic, queue_id, list(got.queue_offsets)))
            if got.next_begin_offset > offset:
                self.offsets.commit_offset("pop", group, topic, queue_id, got.next_begin_offset)
            result.rest_num += max(0, got.max_offset - got.next_begin_offset)
        finally:
            self._busy.discard(key)

    # -- ack / change invisible time -------------------------------------------------------------------
    def _key(self, group: str, topic: str, queue_id: int, extra: ExtraInfo) -> CkKey:
        return CkKey(group, topic, queue_id, extra.ck_queue_offset, extra.pop_time)

    async def ack(self, group: str, topic: str, queue_id: int, offset: int, extra: ExtraInfo) -> None:
        """Commit one message; StaleHandle (nothing changed) or PopStoreError."""
        key = self._key(group, topic, queue_id, extra)
        state, index = self.table.check(key, offset, self.ctx.clock.now_ms())
        self.table.mark_acked(state, index)
        ack = AckMsg(group, topic, queue_id, key.start_offset, key.pop_time, offset, extra.broker_name)
        if await self._log(ACK_TAG, ack) is None:
            self.table.unmark_acked(state, index)
            raise PopStoreError("the ack could not be stored; the message is still in flight")

    async def change_invisible_time(
        self, group: str, topic: str, queue_id: int, offset: int, extra: ExtraInfo, invisible_time: int
    ) -> tuple[int, int]:
        """Hide the message for `invisible_time` from now: (new pop time, invisible time) for its new handle."""
        key = self._key(group, topic, queue_id, extra)
        now = self.ctx.clock.now_ms()
        state, index = self.table.check(key, offset, now)
        pop_time = self.table.unique_pop_time(group, topic, queue_id, offset, now)
        ck = PopCheckPoint(group, topic, queue_id, offset, pop_time, invisible_time, [0], extra.broker_name)
        self.table.mark_acked(state, index)  # from here on the old checkpoint will not put it back
        revive_offset = await self._log(CK_TAG, ck)
        if revive_offset is None:
            self.table.unmark_acked(state, index)
            raise PopStoreError("the new checkpoint could not be stored; the old receipt handle still holds")
        ck.revive_offset = revive_offset
        self.table.add(ck)
        ack = AckMsg(group, topic, queue_id, key.start_offset, key.pop_time, offset, extra.broker_name)
        if await self._log(ACK_TAG, ack) is None:
            log.warning(
                "the ack of the old handle of %s %s/%d@%d was not stored: a restart may retry it once more",
                group,
                topic,
                queue_id,
                offset,
            )
        self._wakeup()
        return pop_time, invisible_time

    # -- revive ----------------------------------------------------------------------------------------
    async def revive_due(self) -> int | None:
        """Put back what timed out; ms until the next checkpoint times out, None when none is in flight."""
        now = self.ctx.clock.now_ms()
        for state in self.table.due(now):
            if not await self._revive(state):
                self.table.requeue(state, now + REVIVE_RETRY_PAUSE_MS)
        self.commit_revive_offset()
        deadline = self.table.next_deadline()
        return None if deadline is None else max(0, deadline - self.ctx.clock.now_ms())

    async def _revive(self, state: Any) -> bool:
        ck: PopCheckPoint = state.ck
        for index in state.unsettled_indexes():
            if not await self._put_back(ck, ck.offset_at(index)):
                return False
            state.revived |= 1 << index
        done = AckMsg(ck.cid, ck.topic, ck.queue_id, ck.start_offset, ck.pop_time, -1, ck.broker_name)
        if await self._log(DONE_TAG, done) is None:
            log.warning(
                "the done mark of %s was not stored: a restart may retry its messages once more", ck.key
            )
        self.table.remove(ck.key)
        return True

    async def _put_back(self, ck: PopCheckPoint, offset: int) -> bool:
        got = self.store.get_message(ck.cid, ck.topic, ck.queue_id, offset, 1)
        if not got.records or got.queue_offsets[0] != offset:
            log.warning("popped message %s/%d@%d is gone; nothing to retry", ck.topic, ck.queue_id, offset)
            return True
        try:
            ext = decode_record(got.records[0], decompress_body=False)[0]
        except RecordDecodeError:
            log.error("popped message %s/%d@%d does not decode; dropped", ck.topic, ck.queue_id, offset)
            return True
        msg = self._retry_message(ck, ext)
        result = await self.store.put_message(msg)
        if not result.is_ok:
            log.error(
                "putting back %s/%d@%d failed (%s); retrying",
                ck.topic,
                ck.queue_id,
                offset,
                result.status.value,
            )
            return False
        if msg.topic.startswith(C.DLQ_GROUP_TOPIC_PREFIX):
            self.dead_lettered += 1
        else:
            self.revived += 1
        return True

    def _retry_message(self, ck: PopCheckPoint, ext: MessageExt) -> BrokerMessage:
        props = dict(ext.properties)
        original = props.setdefault(C.PROPERTY_RETRY_TOPIC, ext.topic)
        props.setdefault(C.PROPERTY_ORIGIN_MESSAGE_ID, ext.offset_msg_id)
        props.setdefault(C.PROPERTY_FIRST_POP_TIME, str(ck.pop_time))
        props.pop(C.PROPERTY_POP_CK, None)
        group_config = self.ctx.subscription_group_manager.find_subscription_group_config(ck.cid)
        max_times = (
            group_config.retry_max_times if group_config else self.ctx.broker_config.max_reconsume_times
        )
        manager = self.ctx.topic_config_manager
        if ext.reconsume_times >= max_times:
            topic = C.dlq_topic(ck.cid)
            log.info(
                "message %s of group %s goes to %s after %d deliveries",
                props[C.PROPERTY_ORIGIN_MESSAGE_ID],
                ck.cid,
                topic,
                ext.reconsume_times + 1,
            )
        else:
            topic = pop_retry_topic_v1(original, ck.cid)
        manager.create_topic_in_send_message_back_method(topic, 1, RW, 0)
        tags = props.get(C.PROPERTY_TAGS)
        return BrokerMessage(
            topic=topic, queue_id=0, body=ext.body, flag=ext.flag, properties=props,
            tags_code=java_hash_code(tags) if tags else 0, sys_flag=ext.sys_flag,
            born_timestamp=ext.born_timestamp, born_host=ext.born_host, store_host=ext.store_host,
            reconsume_times=ext.reconsume_times + 1,
        )  # fmt: skip

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._revive_cap_s = cap_s = self.ctx.broker_config.revive_interval_ms / 1000
        self._revive_loop = PeriodicService(
            "pop-revive", cap_s, self._revive_round, failure_pause_s=min(REVIVE_RETRY_PAUSE_MS / 1000, cap_s)
        )
        await self._revive_loop.start()

    async def shutdown(self) -> None:
        revive, self._revive_loop = self._revive_loop, None
        if revive is not None:
            await revive.stop()
        self.commit_revive_offset()

    def _wakeup(self) -> None:
        if self._revive_loop is not None:
            self._revive_loop.wakeup()

    async def _revive_round(self) -> float | None:
        """One revive round; the seconds until the next (None: the revive interval)."""
        wait_ms = await self.revive_due()
        return None if wait_ms is None else min(max(wait_ms, 1) / 1000, self._revive_cap_s)
