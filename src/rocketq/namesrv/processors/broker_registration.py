"""REGISTER_BROKER (103), UNREGISTER_BROKER (104), QUERY_DATA_VERSION (322).

Port of DefaultRequestProcessor.registerBrokerWithFilterServer / registerBroker / unregisterBroker /
queryBrokerTopicConfig (4.9.8, docs/protocol.md 2.2). Brokers older than V3_0_11 (request version < 37)
send a bare TopicConfigSerializeWrapper as the body; newer ones a RegisterBrokerBody, plain or
compressed. A body whose CRC does not match answers SYSTEM_ERROR "crc32 not match" as Java does.
"""

from __future__ import annotations

import logging
import zlib

from rocketq.common.constants import ORDER_TOPIC_CONFIG_NAMESPACE
from rocketq.namesrv.processors.base import NamesrvContext, Peer, error, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    KVTable,
    RegisterBodyError,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
)
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BodyDecodeError
from rocketq.remoting.protocol.headers.namesrv import (
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)

log = logging.getLogger("rocketq.namesrv")

V3_0_11 = 37  # MQVersion ordinal from which brokers send RegisterBrokerBody


def body_crc32(body: bytes) -> int:
    """UtilAll.crc32: CRC-32 masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


class BrokerRegistrationProcessor:
    def __init__(self, ctx: NamesrvContext) -> None:
        self.ctx = ctx

    def register_broker(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        if header.body_crc32 != 0 and body_crc32(request.body) != header.body_crc32:
            log.warning("receive registerBroker request,crc32 not match,from %s", peer.remote_addr)
            return error(request, ResponseCode.SYSTEM_ERROR, "crc32 not match")
        try:
            body = self._decode_body(request, header)
        except RegisterBodyError as exc:
            log.warning("registerBroker from %s: bad body: %s", peer.remote_addr, exc)
            return error(request, ResponseCode.SYSTEM_ERROR, f"Failed to decode RegisterBrokerBody: {exc}")
        result = self.ctx.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            body.topic_config_serialize_wrapper,
            body.filter_server_list if request.version >= V3_0_11 else None,
            peer,
        )
        response_header = RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr)
        order_conf = self.ctx.kv.namespace(ORDER_TOPIC_CONFIG_NAMESPACE)
        payload = fastjson.dumps(KVTable(order_conf).to_json()) if order_conf is not None else b""
        return ok(request, response_header.to_ext_fields(), payload)

    @staticmethod
    def _decode_body(request: RemotingCommand, header: RegisterBrokerRequestHeader) -> RegisterBrokerBody:
        if not request.body:
            # Java: an empty topic table with DataVersion {0, 0}
            return RegisterBrokerBody()
        if request.version >= V3_0_11:
            return RegisterBrokerBody.decode(request.body, header.compressed)
        try:
            wrapper = TopicConfigSerializeWrapper.from_json(fastjson.loads(request.body))
        except BodyDecodeError as exc:
            raise RegisterBodyError(f"the TopicConfigSerializeWrapper is not valid JSON: {exc}") from None
        return RegisterBrokerBody(wrapper)

    def unregister_broker(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.ctx.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return ok(request)

    def query_data_version(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        try:
            version = DataVersion.decode(request.body) if request.body else DataVersion()
        except BodyDecodeError as exc:
            return error(request, ResponseCode.SYSTEM_ERROR, f"the DataVersion body does not parse: {exc}")
        routes = self.ctx.routes
        changed = routes.is_broker_topic_config_changed(header.broker_addr, version)
        if not changed:
            routes.update_broker_info_update_timestamp(header.broker_addr)
        stored = routes.query_broker_topic_config(header.broker_addr)
        body = stored.encode() if stored is not None else b""
        return ok(request, QueryDataVersionResponseHeader(changed).to_ext_fields(), body)
