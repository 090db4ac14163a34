"""Requests brokers send to this client over its connections, and the client's answers.

Port of org.apache.rocketmq.client.impl.ClientRemotingProcessor (4.9.8): NOTIFY_CONSUMER_IDS_CHANGED
(rebalance now), RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT,
GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, CHECK_TRANSACTION_STATE (handed to the
producer of the message's PGROUP, which answers with END_TRANSACTION) and PUSH_REPLY_MESSAGE_TO_CLIENT
(a request-reply reply, handed to the waiting request: producer/request_reply.py). Oneway requests get no
answer; a bad request is logged once and answered SYSTEM_ERROR when it expects an answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.client.producer.request_reply import receive_reply
from rocketq.common import constants as C
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.bodies.consumer import GetConsumerStatusBody, ResetOffsetBody
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.remoting.protocol.headers.client import NotifyConsumerIdsChangedRequestHeader

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance
    from rocketq.remoting.transport.connection import Connection

log = logging.getLogger("rocketq.client.remote")


class ClientRemotingProcessor:
    """Handles server-initiated requests for one ClientInstance."""

    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    def reject_request(self) -> bool:
        return False

    async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        try:
            return await self._dispatch(conn, request)
        except Exception as exc:
            log.warning("server request code %d from %s failed: %s", request.code, conn.remote_addr, exc)
            if request.is_oneway:
                return None
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    async def _dispatch(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            notify = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields)
            log.info("consumer ids of group %s changed; rebalancing now", notify.consumer_group)
            self.instance.rebalance_immediately()
            return None
        if code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            await self._reset_offset(request)
            return None
        if code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            return self._consumer_status(request)
        if code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return self._running_info(request)
        if code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            return await self._consume_directly(request)
        if code == RequestCode.CHECK_TRANSACTION_STATE:
            self._check_transaction_state(conn, request)
            return None
        if code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            receive_reply(request.ext_fields or {}, request.body, conn.remote_addr)
            return request.make_response()
        return (
            None
            if request.is_oneway
            else request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"code {code}")
        )

    async def _reset_offset(self, request: RemotingCommand) -> None:
        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        topic, group = header.topic, header.group
        table = ResetOffsetBody.decode(request.body).offset_table if request.body else {}
        consumer = self.instance.consumers.get(group)
        if consumer is None:
            log.info("reset offset for group %s, which does not run here", group)
            return
        log.info("broker resets offsets of %s on topic %s: %s", group, topic, table)
        await consumer.reset_offset(topic, dict(table))

    def _consumer_status(self, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        topic, group = header.topic, header.group
        consumer = self.instance.consumers.get(group)
        offsets = consumer.offset_table(topic) if consumer is not None else {}
        return request.make_response(body=GetConsumerStatusBody(message_queue_table=offsets).encode())

    def _running_info(self, request: RemotingCommand) -> RemotingCommand:
        group = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields).consumer_group
        consumer = self.instance.consumers.get(group)
        if consumer is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
            )
        return request.make_response(body=consumer.running_info().encode())

    async def _consume_directly(self, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self.instance.consumers.get(header.consumer_group)
        if consumer is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer Group <{header.consumer_group}> not exist in this consumer",
            )
        msgs = decode_records(request.body)
        if not msgs:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "the request body holds no message")
        result = await consumer.consume_message_directly(msgs[0], header.broker_name)
        return request.make_response(body=result)

    def _check_transaction_state(self, conn: Connection, request: RemotingCommand) -> None:
        msgs = decode_records(request.body)
        if not msgs:
            log.warning("CHECK_TRANSACTION_STATE without a decodable message")
            return
        msg = msgs[0]
        msg.transaction_id = msg.uniq_key
        group = msg.properties.get(C.PROPERTY_PRODUCER_GROUP)
        producer = self.instance.producers.get(group) if group else None
        if producer is None:
            log.warning("transaction check for producer group %s, which does not run here", group)
            return
        producer.check_transaction_state(conn.remote_addr, msg, dict(request.ext_fields or {}))
