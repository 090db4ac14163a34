"""SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32),
GET_ALL_CONSUMER_OFFSET (43).

Port of the offset handlers of org.apache.rocketmq.broker.processor.AdminBrokerProcessor (4.9.8;
docs/protocol.md 2.7): straight reads of the store, always code 0 (0 for a queue that does not exist).
GET_ALL_CONSUMER_OFFSET answers consumerOffset.json's content (what a slave copies every 10 s).
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, decode_header, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)


class OffsetAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
        }

    async def get_all_consumer_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        table = self.ctx.consumer_offset_manager.offset_table
        wrapper = {"offsetTable": {key: dict(sorted(queues.items())) for key, queues in table.items()}}
        return ok(request, body=fastjson.dumps(wrapper, unquoted_int_keys=True))  # Integer keys, as fastjson

    async def search_offset_by_timestamp(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(SearchOffsetRequestHeader, request)
        offset = self.ctx.store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return ok(request, SearchOffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_max_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetMaxOffsetRequestHeader, request)
        offset = self.ctx.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return ok(request, GetMaxOffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_min_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetMinOffsetRequestHeader, request)
        # Java's store creates an empty consume queue for any (topic, queue) it is asked about
        # (DefaultMessageStore.findConsumeQueue), so a never-written queue answers 0, never -1: mqadmin
        # consumeMessage pulls from this offset and refuses a negative one ("offset < 0").
        offset = max(self.ctx.store.get_min_offset_in_queue(h.topic, h.queue_id), 0)
        return ok(request, GetMinOffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_earliest_msg_storetime(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetEarliestMsgStoretimeRequestHeader, request)
        timestamp = self.ctx.store.get_earliest_message_time(h.topic, h.queue_id)
        return ok(request, GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp).to_ext_fields())
