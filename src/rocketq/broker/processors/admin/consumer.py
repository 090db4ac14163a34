"""GET_CONSUMER_CONNECTION_LIST (203) and QUERY_TOPIC_CONSUME_BY_WHO (300).

Port of AdminBrokerProcessor.getConsumerConnectionList / queryTopicConsumeByWho (4.9.8). A group with no
live member is CONSUMER_NOT_ONLINE (206). The groups consuming a topic are those subscribing it now plus
those holding offsets of it.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.remoting.protocol.bodies.admin import Connection as ClientConnection
from rocketq.remoting.protocol.bodies.admin import ConsumerConnection, GroupList
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    GetConsumerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)


class ConsumerAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
        }

    async def get_consumer_connection_list(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumerConnectionListRequestHeader, request)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.consumer_group)
        if info is None or not info.channel_info_table:
            raise RequestError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online")
        body = ConsumerConnection(
            connection_set=[
                ClientConnection(
                    client_id=ch.client_id,
                    client_addr=getattr(ch.conn, "remote_addr", ""),
                    language=ch.language if isinstance(ch.language, LanguageCode) else LanguageCode.JAVA,
                    version=ch.version,
                )
                for ch in info.channel_info_table.values()
            ],
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
