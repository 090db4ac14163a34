"""TransactionalMessageCheckService: ask producers about half messages whose outcome never came.

Port of org.apache.rocketmq.broker.transaction.{TransactionalMessageCheckService,
AbstractTransactionalMessageCheckListener}, TransactionalMessageServiceImpl.check and
Broker2Client.checkProducerTransactionState (4.9.8; docs/protocol.md 2.9). Every transactionCheckInterval
the half queue is walked from the check progress (the CID_RMQ_SYS_TRANS offset): a settled half
message is passed; one checked transactionCheckMax times (or older than fileReservedTime) is kept in
TRANS_CHECK_MAX_TIME_TOPIC and passed for good (its producer may still end it); one younger than transactionTimeOut (or than its
CHECK_IMMUNITY_TIME_IN_SECONDS) stops the walk, or with an immunity time is appended again so the walk
can go on; any other is appended again with TRANSACTION_CHECK_TIMES + 1 and a live producer of its
PGROUP gets CHECK_TRANSACTION_STATE (oneway; header offsets = the new copy's, body = the record with
its real topic and queue). The walk stops at records stored after it began (the copies it wrote).
The progress on the op topic moves over op messages whose half message the walk has passed.
Deviations: a copy written in this round is left for the next one before anything else is decided
(Java discards the copy of the last check in the same round, before its producer could answer); an
immunity re-append does not count as a check (Java counts it, so a long immunity could exhaust the
checks unasked); a failed re-append ends the round (Java retries it at once, in a loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.transaction.bridge import HALF_TOPIC, OP_TOPIC, origin_offset, parse_long
from rocketq.broker.transaction.service import TransactionalMessageService
from rocketq.common import constants as C
from rocketq.common.errors import RocketQError
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record
from rocketq.common.service import PeriodicService
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.transaction import CheckTransactionStateRequestHeader
from rocketq.store.status import GetMessageStatus

log = logging.getLogger("rocketq.broker.transaction")

MAX_PROCESS_TIME_LIMIT_MS = 60_000  # one queue's walk stops after this long
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
OP_ADVANCE_BATCH = 32
READ_BATCH = 32  # half messages read per store call
_NO_NEW_MESSAGE = (
    GetMessageStatus.NO_MESSAGE_IN_QUEUE,
    GetMessageStatus.OFFSET_OVERFLOW_ONE,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
)

SendOneway = Callable[[Any, RemotingCommand], Awaitable[None]]


@dataclass(slots=True)
class CheckReport:
    """What one round did (for logs and tests)."""

    checked: list[MessageExt] = field(default_factory=list)  # the copies producers were asked about
    unasked: int = 0  # checks counted but no live producer of the group
    discarded: int = 0
    immune: int = 0
    settled: int = 0


def next_check_times(half: MessageExt, check_max: int) -> int | None:
    """Java needDiscard: the TRANSACTION_CHECK_TIMES the next copy carries, or None when checked enough."""
    raw = half.properties.get(C.PROPERTY_TRANSACTION_CHECK_TIMES)
    if raw is None:
        return 1
    times = parse_long(raw)
    return None if times >= check_max else times + 1


def immunity_ms(raw: str, transaction_timeout_ms: int) -> int:
    """Java getImmunityTime: CHECK_IMMUNITY_TIME_IN_SECONDS in ms; not a number means the timeout."""
    seconds = parse_long(raw)
    return transaction_timeout_ms if seconds == -1 else seconds * 1000


def check_request(copy: MessageExt) -> RemotingCommand:
    """CHECK_TRANSACTION_STATE for a half-message copy: its offsets, and the record in its real topic."""
    uniq = copy.properties.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=copy.queue_offset,
        commit_log_offset=copy.commit_log_offset,
        msg_id=uniq,
        transaction_id=uniq,
        offset_msg_id=copy.offset_msg_id,
    )
    real = MessageExt(
        copy.properties.get(C.PROPERTY_REAL_TOPIC, copy.topic),
        copy.body,
        flag=copy.flag,
        properties=dict(copy.properties),
        queue_id=parse_long(copy.properties.get(C.PROPERTY_REAL_QUEUE_ID), copy.queue_id),
        queue_offset=copy.queue_offset,
        commit_log_offset=copy.commit_log_offset,
        sys_flag=copy.sys_flag,
        born_timestamp=copy.born_timestamp,
        store_timestamp=copy.store_timestamp,
        born_host=copy.born_host,
        store_host=copy.store_host,
        reconsume_times=copy.reconsume_times,
        prepared_transaction_offset=copy.prepared_transaction_offset,
    )
    return RemotingCommand.request(
        RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), encode_record(real), oneway=True
    )


class TransactionalMessageCheckService:
    def __init__(
        self, ctx: BrokerContext, service: TransactionalMessageService, send_oneway: SendOneway | None = None
    ) -> None:
        self.ctx = ctx
        self.service = service
        self.bridge = service.bridge
        self.send_oneway = send_oneway
        self._periodic: PeriodicService | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        interval_s = self.ctx.broker_config.transaction_check_interval_ms / 1000
        self._periodic = PeriodicService("transaction-check", interval_s, self._round, interval_s)
        await self._periodic.start()
        log.info("transaction check service started: every %.1f s", interval_s)

    async def shutdown(self) -> None:
        if self._periodic is not None:
            await self._periodic.stop()
            self._periodic = None

    async def _round(self) -> None:
        begin = self.ctx.clock.monotonic_ms()
        report = await self.check_once()
        if report.checked or report.discarded or report.unasked:
            log.info(
                "transaction check: %d asked, %d without a producer, %d rolled back after too many checks, %d ms",
                len(report.checked), report.unasked, report.discarded, self.ctx.clock.monotonic_ms() - begin,
            )  # fmt: skip

    # -- one round ---------------------------------------------------------------------------------
    async def check_once(self) -> CheckReport:
        report = CheckReport()
        for queue_id in self.bridge.half_queue_ids():
            try:
                await self._check_queue(queue_id, report)
            except Exception:  # a bug must not stop the next rounds (Java catches Throwable)
                log.exception("checking half queue %d failed", queue_id)
        return report

    async def _check_queue(self, queue_id: int, report: CheckReport) -> None:
        clock = self.ctx.clock
        start_ms, start_mono = clock.now_ms(), clock.monotonic_ms()
        half_offset = self.bridge.fetch_consume_offset(HALF_TOPIC, queue_id)
        if half_offset < 0:
            return  # no half message was ever stored here
        i = half_offset
        misses = 1
        walking = True
        while walking and clock.monotonic_ms() - start_mono <= MAX_PROCESS_TIME_LIMIT_MS:
            result, found = self.bridge.read(HALF_TOPIC, queue_id, i, READ_BATCH)
            if not found:
                if misses > MAX_RETRY_COUNT_WHEN_HALF_NULL or result.status in _NO_NEW_MESSAGE:
                    break
                misses += 1
                if result.next_begin_offset <= i:
                    break
                i = result.next_begin_offset  # the queue's head was cleaned away
                continue
            for half in found:
                walking = await self._decide(half, start_ms, report)
                if not walking:
                    break
                i = half.queue_offset + 1
            await asyncio.sleep(0)  # a long walk must not hold the broker's loop
        if i != half_offset:
            self.bridge.update_consume_offset(HALF_TOPIC, queue_id, i)
        self._advance_op_offset(queue_id, i)

    async def _decide(self, half: MessageExt, start_ms: int, report: CheckReport) -> bool:
        """Handle one half message of the walk; False when the walk stops before it."""
        if self.service.is_settled(half):
            report.settled += 1
            return True
        if half.store_timestamp >= start_ms:
            return False  # stored after this round began: a copy this round wrote (its producer gets a round to answer)
        cfg = self.ctx.broker_config
        now = self.ctx.clock.now_ms()
        age = now - half.born_timestamp
        times = next_check_times(half, cfg.transaction_check_max)
        reserved_ms = self.ctx.store_config.file_reserved_time_h * 3_600_000
        if times is None or age > reserved_ms:
            await self.service.discard(half)
            report.discarded += 1
            return True
        raw_immunity = half.properties.get(C.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
        if raw_immunity is not None and age < immunity_ms(raw_immunity, cfg.transaction_timeout_ms):
            report.immune += 1
            return await self._put_back(half, None) is not None
        if raw_immunity is None and 0 <= age < cfg.transaction_timeout_ms:
            return False  # too young; everything after it is younger still
        copy = await self._put_back(half, times)
        if copy is None:
            return False
        await self._ask_producer(copy, report)
        return True

    async def _put_back(self, half: MessageExt, check_times: int | None) -> MessageExt | None:
        """Append `half` again (with a new check count); the copy as stored, or None when it failed."""
        msg = self.bridge.renew_half_message(half, origin_offset(half))
        if check_times is not None:
            msg.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] = str(check_times)
        result = await self.bridge.put(msg)
        if not result.is_ok or result.append is None:
            return None
        append = result.append
        return MessageExt(
            msg.topic,
            msg.body,
            flag=msg.flag,
            properties=msg.properties,
            queue_id=msg.queue_id,
            queue_offset=append.logical_offset,
            commit_log_offset=append.wrote_offset,
            offset_msg_id=append.msg_id,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            store_timestamp=append.store_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )

    async def _ask_producer(self, copy: MessageExt, report: CheckReport) -> None:
        """Java sendCheckMessage: CHECK_TRANSACTION_STATE to one live producer of the group."""
        group = copy.properties.get(C.PROPERTY_PRODUCER_GROUP)
        conn = self.ctx.producer_manager.get_available_channel(group) if group else None
        if conn is None or self.send_oneway is None:
            log.warning(
                "transaction check of %s not sent: no live producer of group %s", copy.offset_msg_id, group
            )
            report.unasked += 1
            return
        report.checked.append(copy)
        try:
            await self.send_oneway(conn, check_request(copy))
        except (RocketQError, OSError) as exc:
            log.error("transaction check of group %s (msgId %s) failed: %s", group, copy.offset_msg_id, exc)

    def _advance_op_offset(self, queue_id: int, half_progress: int) -> None:
        """Move the op progress over op messages whose half message is behind the half progress."""
        start = self.bridge.fetch_consume_offset(OP_TOPIC, queue_id)
        if start < 0:
            return
        offset = start
        ahead = False
        while not ahead:
            result, ops = self.bridge.read(OP_TOPIC, queue_id, offset, OP_ADVANCE_BATCH)
            if not ops or result.next_begin_offset <= offset:
                break
            for op in ops:
                if parse_long(op.body.decode("utf-8", "replace")) >= half_progress:
                    ahead = True
                    break
                offset = op.queue_offset + 1
            else:
                offset = result.next_begin_offset
        if offset != start:
            self.bridge.update_consume_offset(OP_TOPIC, queue_id, offset)
