"""END_TRANSACTION (37): the producer's (or its checker's) commit, rollback or "still unknown".

Port of org.apache.rocketmq.broker.processor.EndTransactionProcessor (4.9.8; docs/protocol.md 2.9): a slave
answers SLAVE_NOT_AVAILABLE; state 0 (unknown) and values that are no state change nothing (no answer);
COMMIT and ROLLBACK go to the TransactionalMessageService (broker/transaction/service.py), whose
result is the answer (SYSTEM_ERROR with Java's remarks when the half message is not the one named).
Requests are oneway as a rule, so the answer is mostly dropped; each outcome is logged.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header
from rocketq.broker.transaction.service import TransactionalMessageService
from rocketq.common.constants import MessageSysFlag
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.transaction import EndTransactionRequestHeader

log = logging.getLogger("rocketq.broker.transaction")

_OUTCOMES = {
    MessageSysFlag.TRANSACTION_COMMIT_TYPE: "commit",
    MessageSysFlag.TRANSACTION_ROLLBACK_TYPE: "rollback",
}


class EndTransactionProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {RequestCode.END_TRANSACTION: self.end_transaction}

    def _service(self) -> TransactionalMessageService:
        service = self.ctx.transaction_service
        if service is None:
            raise RequestError(
                ResponseCode.SERVICE_NOT_AVAILABLE, "transactions are not available: the broker is starting"
            )
        return service

    async def end_transaction(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        header: EndTransactionRequestHeader = decode_header(EndTransactionRequestHeader, request)
        if self.ctx.store_config.is_slave:
            log.warning("END_TRANSACTION from %s refused: this broker is a slave", conn.remote_addr)
            return request.make_response(
                ResponseCode.SLAVE_NOT_AVAILABLE, "end transaction is forbidden on a slave"
            )
        outcome = _OUTCOMES.get(header.commit_or_rollback)
        source = "the transaction check" if header.from_transaction_check else "sending"
        if outcome is None:
            if header.commit_or_rollback == MessageSysFlag.TRANSACTION_NOT_TYPE:
                log.info(
                    "producer %s of %s reports transaction %s still unknown (from %s) %s",
                    conn.remote_addr, header.producer_group, header.msg_id, source, request.remark or "",
                )  # fmt: skip
            else:
                log.warning(
                    "END_TRANSACTION from %s with commitOrRollback=%d ignored",
                    conn.remote_addr,
                    header.commit_or_rollback,
                )
            return None
        if header.from_transaction_check or outcome == "rollback":
            log.info(
                "producer %s of %s: %s of transaction %s (from %s) %s",
                conn.remote_addr, header.producer_group, outcome, header.msg_id, source, request.remark or "",
            )  # fmt: skip
        result = await self._service().end_transaction(header)
        if result.code != ResponseCode.SUCCESS:
            raise RequestError(result.code, result.remark or "")
        return request.make_response(ResponseCode.SUCCESS, result.remark)
