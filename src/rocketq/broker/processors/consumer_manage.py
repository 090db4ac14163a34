"""QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), GET_CONSUMER_LIST_BY_GROUP (38).

Port of org.apache.rocketmq.broker.processor.ConsumerManageProcessor (4.9.8; docs/protocol.md 2.5, 2.7).
QUERY_CONSUMER_OFFSET keeps Java's special case for a group with no offset: when the queue's min offset
is 0 and the message at offset 0 is still "in memory" (within accessMessageInMemoryMaxRatio of physical
RAM behind the commit log's end) or the queue is empty, the answer is offset 0 so a new group on a young
queue starts at the beginning; otherwise QUERY_NOT_FOUND (22), and the client applies its ConsumeFromWhere.
GET_CONSUMER_LIST_BY_GROUP answers SYSTEM_ERROR "no consumer for this group" when nobody is online
(Java clients treat a code 0 without body as an error).
"""

from __future__ import annotations

import logging
import os

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.remoting.protocol.bodies.consumer import GetConsumerListByGroupResponseBody
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.client import GetConsumerListByGroupRequestHeader
from rocketq.remoting.protocol.headers.offset import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

log = logging.getLogger("rocketq.broker.consumer_manage")


def total_physical_memory() -> int:
    """Bytes of RAM (Java's OperatingSystemMXBean.getTotalPhysicalMemorySize); 8 GiB if unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


_MEMORY = total_physical_memory()


def check_in_disk_by_commit_offset(ctx: BrokerContext, commit_log_offset: int) -> bool:
    """Java DefaultMessageStore.checkInDiskByCommitOffset: is that offset too far behind to be cached?"""
    ratio = ctx.store_config.access_message_in_memory_max_ratio_pct
    memory = _MEMORY * ratio // 100
    return ctx.store.get_max_phy_offset() - commit_log_offset > memory


def first_unit_in_disk(ctx: BrokerContext, topic: str, queue_id: int) -> bool:
    """Java checkInDiskByConsumeOffset(topic, queueId, 0): false when the queue has no unit at offset 0
    (an empty queue), else whether that unit's message lies too far behind the commit log's end."""
    if ctx.store.get_max_offset_in_queue(topic, queue_id) <= 0:
        return False
    return check_in_disk_by_commit_offset(ctx, ctx.store.get_commit_log_offset_in_queue(topic, queue_id, 0))


class ConsumerManageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
        }

    async def query_consumer_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(QueryConsumerOffsetRequestHeader, request)
        ctx = self.ctx
        offset = ctx.consumer_offset_manager.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset < 0:
            min_offset = ctx.store.get_min_offset_in_queue(h.topic, h.queue_id)
            if min_offset > 0 or first_unit_in_disk(ctx, h.topic, h.queue_id):
                raise RequestError(
                    ResponseCode.QUERY_NOT_FOUND,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                )
            offset = 0
        return ok(request, QueryConsumerOffsetResponseHeader(offset=offset).to_ext_fields())

    async def update_consumer_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(UpdateConsumerOffsetRequestHeader, request)
        self.ctx.consumer_offset_manager.commit_offset(
            conn.remote_addr, h.consumer_group, h.topic, h.queue_id, h.commit_offset
        )
        return ok(request)

    async def get_consumer_list_by_group(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumerListByGroupRequestHeader, request)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.consumer_group)
        client_ids = info.all_client_ids() if info is not None else []
        if not client_ids:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumer_group}")
        return ok(request, body=GetConsumerListByGroupResponseBody(consumer_id_list=client_ids).encode())
