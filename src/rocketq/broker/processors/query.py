"""QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).

Port of org.apache.rocketmq.broker.processor.QueryMessageProcessor (4.9.8; docs/protocol.md 2.11). QUERY_MESSAGE
walks the store's index for `topic#key` within [begin, end]; with the extField `_UNIQUE_KEY_QUERY=true`
the key is a UNIQ_KEY and maxNum is replaced by the store's defaultQueryMaxNum, as Java does. Records come
back concatenated in the stored layout; the client filters exact key matches. Nothing found is
QUERY_NOT_FOUND (22), still with the index header. VIEW_MESSAGE_BY_ID returns the one record at a
commit-log offset (the offset part of an offset msgId), SYSTEM_ERROR when there is none.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.query import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)


class QueryMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
        }

    async def query_message(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(QueryMessageRequestHeader, request)
        max_num = h.max_num
        if h.unique_key_query:
            max_num = self.ctx.store_config.default_query_max_num
        result = self.ctx.store.query_message(h.topic, h.key, max_num, h.begin_timestamp, h.end_timestamp)
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phy_offset,
        ).to_ext_fields()
        if not result.records:
            response = request.make_response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", ext
            )
            return response
        return ok(request, ext, b"".join(result.records))

    async def view_message_by_id(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(ViewMessageRequestHeader, request)
        record = self.ctx.store.select_one_message_by_offset(h.offset) if h.offset >= 0 else None
        if not record:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}")
        return ok(request, body=bytes(record))
