"""TransactionalMessageService: commit or roll back a half message, once, and know which are settled.

Port of org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl (commitMessage,
rollbackMessage, deletePrepareMessage) and of the checks and re-put of EndTransactionProcessor
(4.9.8; docs/protocol.md 2.9): the half message is read at the commit-log offset the producer names, its
PGROUP, queue offset and commit-log offset must match the request (SYSTEM_ERROR with Java's remarks
otherwise), a commit appends the message to its real topic and queue (transaction bits COMMIT,
PREPARED_TRANSACTION_OFFSET = the half message's commit-log offset, REAL_TOPIC / REAL_QID / TRAN_MSG
removed), and both outcomes append an op message marking the half message done.
Deviations: an outcome is applied once. The service keeps, per half queue, which half offsets are
settled (ledger.py), rebuilt from the op messages at start; a half message already settled (or a copy
of one: the checker's copies name their first half message in TRAN_PREPARED_QUEUE_OFFSET) answers
SUCCESS and writes nothing, so a commit that arrives twice re-puts once and a late commit cannot undo
a rollback. A record that is not in RMQ_SYS_TRANS_HALF_TOPIC is "not found" (Java would commit any
record that carries the right PGROUP). A half message checked transactionCheckMax times is copied to
TRANS_CHECK_MAX_TIME_TOPIC and left unsettled, as Java's resolveDiscardMsg: the checker's progress has
passed it, so it is never checked again, and a late COMMIT from its producer still publishes it (a late
ROLLBACK settles it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple

from rocketq.broker.context import BrokerContext
from rocketq.broker.transaction.bridge import (
    HALF_TOPIC,
    OP_TOPIC,
    TRANS_GROUP,
    TransactionalMessageBridge,
    op_body,
    origin_offset,
    parse_long,
)
from rocketq.broker.transaction.ledger import HalfOffsetLedger
from rocketq.common import constants as C
from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import MessageExt
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.headers.transaction import EndTransactionRequestHeader
from rocketq.store.status import PutMessageStatus, PutResult

log = logging.getLogger("rocketq.broker.transaction")

COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
LOAD_BATCH = 256  # op records read per store call while rebuilding the ledger


class OperationResult(NamedTuple):
    """What END_TRANSACTION answers (Java OperationResult + the final response)."""

    code: int
    remark: str | None = None


SUCCESS = OperationResult(ResponseCode.SUCCESS)


def check_prepare_message(half: MessageExt | None, header: EndTransactionRequestHeader) -> str | None:
    """Java checkPrepareMessage: None when the half message is the one the request names, else the remark."""
    if half is None or half.topic != HALF_TOPIC:
        return "Find prepared transaction message failed"
    if half.properties.get(C.PROPERTY_PRODUCER_GROUP) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None


def final_put_failure(result: PutResult, max_message_size: int) -> OperationResult:
    """Java sendFinalMessage: the answer when the committed message could not be stored."""
    status = result.status
    if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
        return OperationResult(ResponseCode.SYSTEM_ERROR, "Create mapped file failed.")
    if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return OperationResult(
            ResponseCode.MESSAGE_ILLEGAL,
            f"The message is illegal, maybe msg body or properties length not matched. msg body length limit "
            f"{max_message_size}B, msg properties length limit 32KB.",
        )
    if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
        return OperationResult(ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now.")
    if status is PutMessageStatus.OS_PAGECACHE_BUSY:
        return OperationResult(ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine")
    if status is PutMessageStatus.UNKNOWN_ERROR:
        return OperationResult(ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR")
    return OperationResult(ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")


class TransactionalMessageService:
    def __init__(self, ctx: BrokerContext, bridge: TransactionalMessageBridge | None = None) -> None:
        self.ctx = ctx
        self.bridge = bridge or TransactionalMessageBridge(ctx)
        self._settled: dict[int, HalfOffsetLedger] = {}

    # -- the settled half offsets ------------------------------------------------------------------
    def _ledger(self, queue_id: int) -> HalfOffsetLedger:
        ledger = self._settled.get(queue_id)
        if ledger is None:
            ledger = self._settled[queue_id] = HalfOffsetLedger()
        return ledger

    def is_settled(self, half: MessageExt) -> bool:
        """True when `half`, or the transaction it is a copy of, has an outcome."""
        ledger = self._settled.get(half.queue_id)
        return ledger is not None and (half.queue_offset in ledger or origin_offset(half) in ledger)

    def settled_count(self, queue_id: int = 0) -> int:
        ledger = self._settled.get(queue_id)
        return len(ledger) if ledger is not None else 0

    def _settle(self, half: MessageExt) -> list[int]:
        """Mark `half` and its first copy settled (before any await: two requests cannot both pass)."""
        ledger = self._ledger(half.queue_id)
        offsets = [half.queue_offset]
        origin = origin_offset(half)
        if origin != half.queue_offset:
            offsets.append(origin)
        for offset in offsets:
            ledger.add(offset)
        return offsets

    def _unsettle(self, half: MessageExt, offsets: list[int]) -> None:
        ledger = self._ledger(half.queue_id)
        for offset in offsets:
            ledger.discard(offset)

    async def load(self) -> int:
        """Rebuild the settled offsets from every op message still stored; returns how many were read.

        Only the broker writes the op topic (sends to it are refused), so each record's body is read
        straight from the record, without decoding the rest (a restart may read millions).
        """
        store = self.ctx.store
        config = self.ctx.topic_config_manager.select_topic_config(OP_TOPIC)
        read = 0
        for queue_id in range(config.read_queue_nums if config is not None else 1):
            offset = store.get_min_offset_in_queue(OP_TOPIC, queue_id)
            end = store.get_max_offset_in_queue(OP_TOPIC, queue_id)
            ledger = self._ledger(queue_id)
            while 0 <= offset < end:
                result = store.get_message(TRANS_GROUP, OP_TOPIC, queue_id, offset, LOAD_BATCH, None)
                for record in result.records:
                    ledger.add(parse_long(op_body(record).decode("ascii", "replace")))
                read += len(result.records)
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
                await asyncio.sleep(0)  # a long op queue must not stall the loop
        if read:
            log.info(
                "transactions: %d op messages read, %d half messages settled",
                read,
                sum(map(len, self._settled.values())),
            )
        return read

    # -- END_TRANSACTION ---------------------------------------------------------------------------
    async def end_transaction(self, header: EndTransactionRequestHeader) -> OperationResult:
        """Commit or roll back the half message `header` names (commit_or_rollback is COMMIT or ROLLBACK)."""
        half = self.bridge.look_message_by_offset(header.commit_log_offset)
        problem = check_prepare_message(half, header)
        if problem is not None:
            return OperationResult(ResponseCode.SYSTEM_ERROR, problem)
        assert half is not None
        uniq = half.properties.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if self.is_settled(half):
            log.info(
                "transaction %s (half offset %d) already ended; %s ignored",
                uniq,
                half.queue_offset,
                _name(header),
            )
            return OperationResult(
                ResponseCode.SUCCESS, "the transaction was already committed or rolled back"
            )
        offsets = self._settle(half)
        if header.commit_or_rollback == COMMIT:
            result = await self.bridge.put(self.bridge.final_message(half, header.commit_log_offset))
            if not result.is_ok:
                self._unsettle(half, offsets)
                return final_put_failure(result, self.ctx.max_message_size)
        if not await self.bridge.put_op_messages(half.queue_id, offsets):
            log.error("the op message of transaction %s was not written; it will be checked again", uniq)
        return SUCCESS

    async def discard(self, half: MessageExt) -> None:
        """Java resolveDiscardMsg: copy the half message to TRANS_CHECK_MAX_TIME_TOPIC; no op message, so a
        late END_TRANSACTION from its producer still commits (or rolls back) it."""
        uniq = half.properties.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        log.error(
            "half message %s (real topic %s) checked %s times: no longer checked, kept in %s",
            uniq, half.properties.get(C.PROPERTY_REAL_TOPIC), half.properties.get(C.PROPERTY_TRANSACTION_CHECK_TIMES),
            C.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        )  # fmt: skip
        await self.bridge.put(self.bridge.check_max_time_message(half))


def _name(header: EndTransactionRequestHeader) -> str:
    return "COMMIT" if header.commit_or_rollback == COMMIT else "ROLLBACK"
