"""TransactionProducer: half message, local transaction, commit or rollback, and the broker's check-back.

Port of org.apache.rocketmq.client.producer.TransactionMQProducer and the transaction part of
DefaultMQProducerImpl (sendMessageInTransaction, endTransaction, checkTransactionState; 4.9.8,
docs/protocol.md 2.9). The message goes out as a half message (TRAN_MSG=true, PGROUP, sys flag
TRANSACTION_PREPARED); the executor decides COMMIT / ROLLBACK / UNKNOW; END_TRANSACTION (oneway) tells
the broker. For half messages left unknown, the broker later sends CHECK_TRANSACTION_STATE and the
checker's answer goes back the same way with fromTransactionCheck=true.
Executors and checkers may be sync (run on a worker thread) or async.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.client.errors import MessageIllegalError, MQClientError
from rocketq.client.model import LocalTransactionState, SendResult, SendStatus
from rocketq.client.producer.producer import Producer
from rocketq.common import constants as C
from rocketq.common.message import Message, MessageExt
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.service import spawn
from rocketq.remoting.errors import RemotingError
from rocketq.remoting.protocol.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)

log = logging.getLogger("rocketq.client.transaction")

Executor = Callable[[Message, Any], Any]
Checker = Callable[[MessageExt], Any]

COMMIT_TYPE = C.MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK_TYPE = C.MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
NOT_TYPE = C.MessageSysFlag.TRANSACTION_NOT_TYPE


@dataclass(slots=True)
class TransactionSendResult(SendResult):
    """A SendResult plus the local transaction's outcome."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


def _wire_state(state: LocalTransactionState) -> int:
    if state is LocalTransactionState.COMMIT_MESSAGE:
        return COMMIT_TYPE
    if state is LocalTransactionState.ROLLBACK_MESSAGE:
        return ROLLBACK_TYPE
    return NOT_TYPE


async def _call(fn: Callable[..., Any], *args: Any) -> LocalTransactionState:
    if inspect.iscoroutinefunction(fn):
        result = await fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
        if inspect.isawaitable(result):
            result = await result
    if isinstance(result, LocalTransactionState):
        return result
    log.warning("a transaction executor/checker returned %r; treating it as UNKNOW", result)
    return LocalTransactionState.UNKNOW


class TransactionProducer(Producer):
    """A Producer that can send messages in a local transaction (`send_in_transaction`).

    Args:
        checker: `check(MessageExt) -> LocalTransactionState`, asked by the broker about half
            messages whose outcome it never learnt.
        (other arguments as Producer)
    """

    def __init__(
        self,
        producer_group: str,
        namesrv_addr: str | None = None,
        *,
        checker: Checker | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(producer_group, namesrv_addr, **kwargs)
        self.checker = checker

    async def send_in_transaction(
        self, msg: Message, executor: Executor, arg: Any = None
    ) -> TransactionSendResult:
        """Send `msg` as a half message, run `executor(msg, arg)`, then commit or roll back.

        Raises MessageIllegalError for a batch (list), a delayed or a bad message (before any request),
        and whatever the send raises.
        """
        if not isinstance(msg, Message):
            # Java: "batch message is not supported in transactions"; a list would fail deep in send().
            what = "a batch (list)" if isinstance(msg, (list, tuple)) else type(msg).__name__
            raise MessageIllegalError(
                f"send_in_transaction takes one Message, not {what}: batch messages are not allowed in transactions"
            )
        if executor is None:
            raise MQClientError("send_in_transaction needs an executor")
        if msg.delay_level:
            raise MessageIllegalError("a transactional message cannot be delayed")
        msg.properties[C.PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[C.PROPERTY_PRODUCER_GROUP] = self.group
        try:
            sent = await self.send(msg)
        finally:
            msg.properties.pop(C.PROPERTY_TRANSACTION_PREPARED, None)
        state = LocalTransactionState.ROLLBACK_MESSAGE
        error: BaseException | None = None
        if sent.status is SendStatus.SEND_OK:
            msg.transaction_id = sent.msg_id
            try:
                state = await _call(executor, msg, arg)
            except Exception as exc:
                log.warning("local transaction of %s raised %r; state UNKNOW", sent.msg_id, exc)
                state, error = LocalTransactionState.UNKNOW, exc
        await self._end_transaction(sent, state, error)
        if self._trace_hook is not None and self._instance is not None:
            inst = self._instance
            addr = inst.find_broker_addr_in_publish(sent.queue.broker_name)
            self._trace_hook.end_transaction(
                msg, sent.msg_id, sent.msg_id, state.name, addr, False, inst.client_id
            )
        return TransactionSendResult(
            status=sent.status,
            msg_id=sent.msg_id,
            offset_msg_id=sent.offset_msg_id,
            queue=sent.queue,
            queue_offset=sent.queue_offset,
            transaction_id=sent.msg_id,
            region_id=sent.region_id,
            trace_on=sent.trace_on,
            local_transaction_state=state,
        )

    async def _end_transaction(
        self, sent: SendResult, state: LocalTransactionState, error: BaseException | None
    ) -> None:
        inst = self._running()
        _ip, _port, commit_log_offset = parse_offset_msg_id(sent.offset_msg_id)
        addr = inst.find_broker_addr_in_publish(sent.queue.broker_name)
        if addr is None:
            log.warning(
                "no address for %s; the broker will check transaction %s", sent.queue.broker_name, sent.msg_id
            )
            return
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=sent.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=_wire_state(state),
            msg_id=sent.msg_id,
            from_transaction_check=False,
            transaction_id=sent.transaction_id or None,
            bname=sent.queue.broker_name,
        )
        remark = f"executeLocalTransactionBranch exception: {error!r}" if error else None
        try:
            await inst.api.end_transaction_oneway(addr, header, remark)
        except RemotingError as exc:
            log.warning("END_TRANSACTION of %s failed (%s); the broker will check it", sent.msg_id, exc)

    def check_transaction_state(self, addr: str, msg: MessageExt, header: Mapping[str, str]) -> None:
        """CHECK_TRANSACTION_STATE from a broker: ask the checker, answer with END_TRANSACTION."""
        check = CheckTransactionStateRequestHeader.from_ext_fields(header)
        spawn(f"transaction-check-{msg.msg_id}", self._answer_check(addr, msg, check))

    async def _answer_check(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        if self.checker is None:
            log.warning("producer %s has no checker for transaction %s", self.group, msg.msg_id)
            return
        error: BaseException | None = None
        try:
            state = await _call(self.checker, msg)
        except Exception as exc:
            state, error = LocalTransactionState.UNKNOW, exc
            log.warning("transaction checker raised on %s: %r", msg.msg_id, exc)
        answer = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=_wire_state(state),
            msg_id=msg.uniq_key or msg.offset_msg_id,
            from_transaction_check=True,
            transaction_id=header.transaction_id,
            bname=header.bname,
        )
        inst = self._instance
        if inst is None:
            return
        try:
            await inst.api.end_transaction_oneway(
                addr, answer, f"checkLocalTransactionState exception: {error!r}" if error else None
            )
        except RemotingError as exc:
            log.warning("END_TRANSACTION answer to %s failed: %s", addr, exc)
