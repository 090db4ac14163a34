"""LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) for orderly consumers.

Port of AdminBrokerProcessor.lockBatchMQ / unlockBatchMQ (4.9.8; docs/protocol.md 2.10) over
broker/rebalance_lock.py. The lock answer lists only the queues the caller now holds.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, ok
from rocketq.remoting.protocol.bodies.consumer import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BodyDecodeError


class LockAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }

    async def lock_batch_mq(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            body = LockBatchRequestBody.decode(request.body)
        except BodyDecodeError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the LockBatchRequestBody does not decode: {exc}"
            ) from None
        locked = self.ctx.rebalance_lock_manager.try_lock_batch(
            body.consumer_group, body.mq_set, body.client_id
        )
        return ok(request, body=LockBatchResponseBody(lock_ok_mq_set=sorted(locked)).encode())

    async def unlock_batch_mq(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            body = UnlockBatchRequestBody.decode(request.body)
        except BodyDecodeError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the UnlockBatchRequestBody does not decode: {exc}"
            ) from None
        self.ctx.rebalance_lock_manager.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return ok(request)
