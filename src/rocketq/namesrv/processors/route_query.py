"""GET_ROUTEINFO_BY_TOPIC (105) and GET_BROKER_CLUSTER_INFO (106).

Port of DefaultRequestProcessor.getRouteInfoByTopic / getBrokerClusterInfo (4.9.8, docs/protocol.md 2.3,
8.7). The route's JSON dialect follows Java exactly: standard JSON (quoted brokerAddrs keys,
non-ASCII escaped as BrowserCompatible does) only for request version >= 401 (V4_9_4) or
acceptStandardJsonOnly=true; otherwise fastjson's default with bare numeric keys, which released
hand-parsing clients (rocketmq-client-go at version 317) depend on. Cluster info always uses the
bare-key form, as the 4.9.8 NameServer does.
"""

from __future__ import annotations

from rocketq.common.constants import ORDER_TOPIC_CONFIG_NAMESPACE
from rocketq.namesrv.processors.base import NamesrvContext, Peer, error, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.namesrv import GetRouteInfoRequestHeader

V4_9_4 = 401  # MQVersion ordinal from which clients get standard JSON routes
APPLY_TOPIC_URL = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str) -> str:
    """FAQUrl.suggestTodo: the hint Java appends to some remarks."""
    return f"\nSee {url} for further details."


def topic_not_exist_remark(topic: str) -> str:
    return f"No topic route info in name server for the topic: {topic}{suggest_todo(APPLY_TOPIC_URL)}"


class RouteQueryProcessor:
    def __init__(self, ctx: NamesrvContext) -> None:
        self.ctx = ctx

    def get_route_info_by_topic(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        route = self.ctx.routes.pickup_topic_route_data(header.topic)
        if route is None:
            return error(request, ResponseCode.TOPIC_NOT_EXIST, topic_not_exist_remark(header.topic))
        if self.ctx.config.order_message_enable:
            route.order_topic_conf = self.ctx.kv.get(ORDER_TOPIC_CONFIG_NAMESPACE, header.topic)
        if request.version >= V4_9_4 or header.accept_standard_json_only:
            body = fastjson.dumps(route.to_json(), ensure_ascii=True)
        else:
            body = fastjson.dumps(route.to_json(), unquoted_int_keys=True)
        return ok(request, body=body)

    def get_broker_cluster_info(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        info = self.ctx.routes.cluster_info()
        return ok(request, body=fastjson.dumps(info.to_json(), unquoted_int_keys=True))
