"""PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102), GET_KVLIST_BY_NAMESPACE (219).

Port of DefaultRequestProcessor's KV handlers (4.9.8). A missing entry or namespace answers
QUERY_NOT_FOUND with Java's remark.
"""

from __future__ import annotations

from rocketq.namesrv.processors.base import NamesrvContext, Peer, error, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import KVTable
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.namesrv import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    PutKVConfigRequestHeader,
)


class KVConfigProcessor:
    def __init__(self, ctx: NamesrvContext) -> None:
        self.ctx = ctx

    def put_kv_config(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.ctx.kv.put(header.namespace, header.key, header.value)
        return ok(request)

    def get_kv_config(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.ctx.kv.get(header.namespace, header.key)
        if value is None:
            remark = f"No config item, Namespace: {header.namespace} Key: {header.key}"
            return error(request, ResponseCode.QUERY_NOT_FOUND, remark)
        return ok(request, GetKVConfigResponseHeader(value).to_ext_fields())

    def delete_kv_config(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.ctx.kv.delete(header.namespace, header.key)
        return ok(request)

    def get_kv_list_by_namespace(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        table = self.ctx.kv.namespace(header.namespace)
        if table is None:
            return error(
                request, ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return ok(request, body=fastjson.dumps(KVTable(table).to_json()))
