"""The broker's view of its clients: connections of a group, and requests passed on to one consumer.

GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204), QUERY_TOPIC_CONSUME_BY_WHO
(300), GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): ports of
AdminBrokerProcessor (4.9.8). A consumer group with no live member is CONSUMER_NOT_ONLINE (206), an
unknown producer group SYSTEM_ERROR. The groups consuming a topic are those subscribing it now plus
those holding offsets of it. 307 and 309 are passed to the named client over its own connection
(Java's callConsumer: same ext fields and body, 10 s) and its answer comes back as it is; 309 first
loads the stored message the msgId points at into the body, as Java does, so that mqadmin
consumeMessage works against this broker.
"""

from __future__ import annotations

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.common.errors import RocketQError
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.remoting.errors import RemotingTimeoutError
from rocketq.remoting.protocol.bodies.admin import Connection as ClientConnection
from rocketq.remoting.protocol.bodies.admin import ConsumerConnection, GroupList, ProducerConnection
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)

CALL_CONSUMER_TIMEOUT_MS = 10_000  # Java Broker2Client.callClient
MIN_CALLABLE_VERSION = 62  # MQVersion.Version.V3_1_8_SNAPSHOT.ordinal(): older clients do not answer 307/309


def _connection(ch: ClientChannelInfo) -> ClientConnection:
    return ClientConnection(
        client_id=ch.client_id,
        client_addr=ch.conn.remote_addr,
        language=ch.language if isinstance(ch.language, LanguageCode) else LanguageCode.JAVA,
        version=ch.version,
    )


class ConsumerAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }

    async def get_consumer_connection_list(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        h = decode_header(GetConsumerConnectionListRequestHeader, request)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.consumer_group)
        if info is None or not info.channel_info_table:
            raise RequestError(
                ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online"
            )
        body = ConsumerConnection(
            connection_set=[_connection(ch) for ch in info.channel_info_table.values()],
            subscription_table=dict(info.subscription_table),
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return ok(request, body=body.encode())

    async def query_topic_consume_by_who(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(QueryTopicConsumeByWhoRequestHeader, request)
        groups = self.ctx.consumer_manager.query_topic_consume_by_who(h.topic)
        groups |= self.ctx.consumer_offset_manager.which_groups_by_topic(h.topic)
        return ok(request, body=GroupList(group_list=sorted(groups)).encode())

    async def get_producer_connection_list(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        h = decode_header(GetProducerConnectionListRequestHeader, request)
        table = self.ctx.producer_manager.group_channel_table.get(h.producer_group)
        if not table:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"the producer group[{h.producer_group}] not exist")
        body = ProducerConnection(connection_set=[_connection(ch) for ch in table.values()])
        return ok(request, body=body.encode())

    async def get_consumer_running_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumerRunningInfoRequestHeader, request)
        return await self._call_consumer(
            RequestCode.GET_CONSUMER_RUNNING_INFO, request, h.consumer_group, h.client_id
        )

    async def consume_message_directly(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(ConsumeMessageDirectlyResultRequestHeader, request)
        ext = dict(request.ext_fields or {})
        ext["brokerName"] = self.ctx.broker_config.broker_name
        body = request.body
        if h.msg_id:
            try:
                _host, _port, offset = parse_offset_msg_id(h.msg_id)
            except ValueError as exc:
                raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad msgId {h.msg_id!r}: {exc}") from None
            record = self.ctx.store.select_one_message_by_offset(offset)
            if not record:
                raise RequestError(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
            body = bytes(record)
        forwarded = RemotingCommand(
            code=request.code, ext_fields=ext, body=body, serialize_type=request.serialize_type
        )
        return await self._call_consumer(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, forwarded, h.consumer_group, h.client_id or ""
        )

    async def _call_consumer(
        self, code: int, request: RemotingCommand, group: str, client_id: str
    ) -> RemotingCommand:
        channel = self.ctx.consumer_manager.find_channel(group, client_id)
        if channel is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if channel.version < MIN_CALLABLE_VERSION:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{channel.version}> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
            )
        outgoing = RemotingCommand.request(code, dict(request.ext_fields or {}), request.body)
        try:
            return await self.ctx.call_client(channel.conn, outgoing, CALL_CONSUMER_TIMEOUT_MS)
        except RemotingTimeoutError as exc:
            raise RequestError(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}"
            ) from None
        except RocketQError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {exc}"
            ) from None
