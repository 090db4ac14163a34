"""GET_ALL_DELAY_OFFSET (45): the schedule service's per-level progress.

Port of AdminBrokerProcessor.getAllDelayOffset (4.9.8): the body is delayOffset.json's content,
`{"offsetTable":{level:offset,...}}` in fastjson's form (integer keys unquoted).
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, ok
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand


class DelayOffsetAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset}

    async def get_all_delay_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        service = self.ctx.schedule_service
        if service is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "No delay offset in this broker")
        return ok(request, body=service.encode())
