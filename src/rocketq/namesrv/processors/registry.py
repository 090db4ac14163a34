"""The NameServer's one routing table: request code -> handler, and the processor that dispatches it.

Port of the switch in DefaultRequestProcessor.processRequest (4.9.8; docs/protocol.md 2.1 lists the
codes). Deviations: a code the table does not hold is answered REQUEST_CODE_NOT_SUPPORTED (Java's
NameServer sends nothing and the client times out), and a request whose header misses a required
field or carries a bad value is answered SYSTEM_ERROR with a remark naming the field. A handler that
fails unexpectedly is logged and answered SYSTEM_ERROR; the NameServer keeps serving. Oneway
requests are processed and never answered.
"""

from __future__ import annotations

import logging

from rocketq.namesrv.processors.admin import AdminProcessor
from rocketq.namesrv.processors.base import Handler, NamesrvContext, Peer
from rocketq.namesrv.processors.broker_registration import BrokerRegistrationProcessor
from rocketq.namesrv.processors.kv import KVConfigProcessor
from rocketq.namesrv.processors.route_query import RouteQueryProcessor
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError

log = logging.getLogger("rocketq.namesrv")

RC = RequestCode


def build_handler_table(ctx: NamesrvContext) -> dict[int, Handler]:
    """Every code the Java NameServer handles, each with exactly one handler."""
    registration = BrokerRegistrationProcessor(ctx)
    routes = RouteQueryProcessor(ctx)
    kv = KVConfigProcessor(ctx)
    admin = AdminProcessor(ctx)
    table: dict[int, Handler] = {
        RC.PUT_KV_CONFIG: kv.put_kv_config,
        RC.GET_KV_CONFIG: kv.get_kv_config,
        RC.DELETE_KV_CONFIG: kv.delete_kv_config,
        RC.GET_KVLIST_BY_NAMESPACE: kv.get_kv_list_by_namespace,
        RC.REGISTER_BROKER: registration.register_broker,
        RC.UNREGISTER_BROKER: registration.unregister_broker,
        RC.QUERY_DATA_VERSION: registration.query_data_version,
        RC.GET_ROUTEINFO_BY_TOPIC: routes.get_route_info_by_topic,
        RC.GET_BROKER_CLUSTER_INFO: routes.get_broker_cluster_info,
        RC.WIPE_WRITE_PERM_OF_BROKER: admin.wipe_write_perm_of_broker,
        RC.ADD_WRITE_PERM_OF_BROKER: admin.add_write_perm_of_broker,
        RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: admin.get_all_topic_list,
        RC.DELETE_TOPIC_IN_NAMESRV: admin.delete_topic_in_namesrv,
        RC.GET_TOPICS_BY_CLUSTER: admin.get_topics_by_cluster,
        RC.GET_SYSTEM_TOPIC_LIST_FROM_NS: admin.get_system_topic_list,
        RC.GET_UNIT_TOPIC_LIST: admin.get_unit_topic_list,
        RC.GET_HAS_UNIT_SUB_TOPIC_LIST: admin.get_has_unit_sub_topic_list,
        RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: admin.get_has_unit_sub_ununit_topic_list,
        RC.UPDATE_NAMESRV_CONFIG: admin.update_namesrv_config,
        RC.GET_NAMESRV_CONFIG: admin.get_namesrv_config,
    }
    return {int(code): handler for code, handler in table.items()}


def not_supported(request: RemotingCommand) -> RemotingCommand:
    return request.make_response(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported"
    )


class NamesrvRequestProcessor:
    """The transport's RequestProcessor for the NameServer: registered for every code and as default."""

    def __init__(self, ctx: NamesrvContext) -> None:
        self.table = build_handler_table(ctx)

    @property
    def codes(self) -> list[int]:
        return sorted(self.table)

    async def process_request(self, conn: Peer, request: RemotingCommand) -> RemotingCommand | None:
        return self.handle(conn, request)

    def reject_request(self) -> bool:
        return False

    def handle(self, peer: Peer, request: RemotingCommand) -> RemotingCommand | None:
        """The response to `request` (None for a oneway request)."""
        handler = self.table.get(request.code)
        if handler is None:
            log.warning("request code %d from %s is not supported", request.code, peer.remote_addr)
            response: RemotingCommand | None = not_supported(request)
        else:
            response = self._call(handler, peer, request)
        return None if request.is_oneway else response

    @staticmethod
    def _call(handler: Handler, peer: Peer, request: RemotingCommand) -> RemotingCommand | None:
        try:
            return handler(peer, request)
        except (MissingHeaderFieldError, BadHeaderValueError) as exc:
            log.warning("request code %d from %s: %s", request.code, peer.remote_addr, exc)
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        except Exception as exc:
            log.exception("request code %d from %s failed", request.code, peer.remote_addr)
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
