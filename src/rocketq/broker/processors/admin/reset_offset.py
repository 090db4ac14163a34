"""INVOKE_BROKER_TO_RESET_OFFSET (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): a live offset reset.

Port of AdminBrokerProcessor#resetOffset / #getConsumerStatus and Broker2Client#resetOffset /
#getConsumeStatus (4.9.8). The broker does not write the group's offsets itself: it computes, per write
queue of the topic on this broker, the offset stored at the timestamp (-1: the queue's max offset) and
keeps the group's committed offset when that is already lower unless the reset is forced; then it sends
RESET_CONSUMER_CLIENT_OFFSET (220, oneway) to every online client of the group, which drops what it has
in flight, seeks and persists (client MQClientInstance#resetOffset). Why not write the offsets here: the
live consumers would overwrite them with their next commit. A group with no online client is
CONSUMER_NOT_ONLINE (206), which tells an admin tool to fall back to writing offsets directly (mqadmin's
resetOffsetByTimeOld). A C++ requester gets the offset table as a list (ResetOffsetBodyForC), as Java.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.common.errors import RocketQError
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.consumer import (
    GetConsumerStatusBody,
    ResetOffsetBody,
    ResetOffsetBodyForC,
)
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import GetConsumerStatusRequestHeader, ResetOffsetRequestHeader

log = logging.getLogger("rocketq.broker.reset_offset")

MIN_RESET_VERSION = 28  # MQVersion.Version.V3_0_7_SNAPSHOT.ordinal(): older clients cannot reset
CLIENT_TIMEOUT_MS = 5_000  # Broker2Client: invokeOneway / invokeSync with 5000 ms


class ResetOffsetProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
        }

    def compute_offsets(self, topic: str, group: str, timestamp: int, force: bool) -> dict[MessageQueue, int]:
        """The new offset of each write queue of `topic` here (Broker2Client#resetOffset's table)."""
        tc = self.ctx.topic_config_manager.select_topic_config(topic)
        if tc is None:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        broker_name = self.ctx.broker_config.broker_name
        store = self.ctx.store
        table: dict[MessageQueue, int] = {}
        for qid in range(tc.write_queue_nums):
            committed = self.ctx.consumer_offset_manager.query_offset(group, topic, qid)
            if committed == -1:
                raise RequestError(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                target = store.get_max_offset_in_queue(topic, qid)
            else:
                target = store.get_offset_in_queue_by_time(topic, qid, timestamp)
            if target < 0:
                log.warning(
                    "reset offset is invalid. topic=%s, queueId=%d, timeStampOffset=%d", topic, qid, target
                )
                target = 0
            table[MessageQueue(topic, broker_name, qid)] = (
                target if force or target < committed else committed
            )
        return table

    async def reset_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(ResetOffsetRequestHeader, request)
        log.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%d, isForce=%s",
            conn.remote_addr,
            h.topic,
            h.group,
            h.timestamp,
            h.is_force,
        )
        table = self.compute_offsets(h.topic, h.group, h.timestamp, h.is_force)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.group)
        channels = list(info.channel_info_table.values()) if info is not None else []
        if not channels:
            raise RequestError(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic} Timestamp: {h.timestamp}",
            )
        too_old = [ch for ch in channels if ch.version < MIN_RESET_VERSION]
        if too_old:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"the client does not support this feature. version={too_old[0].version}",
            )
        body = (
            ResetOffsetBodyForC.of(table)
            if request.language == LanguageCode.CPP
            else ResetOffsetBody(offset_table=table)
        )
        header = ResetOffsetRequestHeader(
            topic=h.topic, group=h.group, timestamp=h.timestamp, is_force=h.is_force
        )
        for ch in channels:
            outgoing = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext_fields(), body.encode(), oneway=True
            )
            try:
                await self.ctx.tell_client(ch.conn, outgoing)
                log.info(
                    "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                    h.topic,
                    h.group,
                    ch.client_id,
                )
            except RocketQError as exc:
                log.error(
                    "[reset-offset] reset offset exception. topic=%s, group=%s, error=%s",
                    h.topic,
                    h.group,
                    exc,
                )
        return ok(request, body=ResetOffsetBody(offset_table=table).encode())

    async def get_consumer_status(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumerStatusRequestHeader, request)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.group)
        channels = list(info.channel_info_table.values()) if info is not None else []
        if not channels:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{h.group}]"
            )
        header = GetConsumerStatusRequestHeader(topic=h.topic, group=h.group).to_ext_fields()
        status: dict[str, dict[MessageQueue, int]] = {}
        for ch in channels:
            if ch.version < MIN_RESET_VERSION:
                raise RequestError(
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={ch.version}",
                )
            if h.client_addr and h.client_addr != ch.client_id:
                continue
            outgoing = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, dict(header))
            try:
                resp = await self.ctx.call_client(ch.conn, outgoing, CLIENT_TIMEOUT_MS)
                if resp.code == ResponseCode.SUCCESS and resp.body:
                    status[ch.client_id] = GetConsumerStatusBody.decode(resp.body).message_queue_table
            except RocketQError as exc:  # Java logs it and answers with what the others said
                log.error(
                    "[get-consumer-status] get consumer status exception. topic=%s, group=%s, error=%s",
                    h.topic,
                    h.group,
                    exc,
                )
        return ok(request, body=GetConsumerStatusBody(consumer_table=status).encode())
