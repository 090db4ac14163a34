"""`rocketq namesrv` as a subprocess: KV config (persisted across a restart), unknown codes, bad input."""

from __future__ import annotations

import asyncio
import struct

from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.namesrv import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    PutKVConfigRequestHeader,
)
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient


async def test_kv_config_survives_a_restart(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    namesrv = cluster.namesrvs[0]
    async with NamesrvTestClient(namesrv.addr) as ns:
        put = await ns.call(
            RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
        )
        assert put.code == ResponseCode.SUCCESS
        got = await ns.call(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "T"))
        assert got.ext_fields == {"value": "broker-a:4"}
    port = namesrv.port
    await namesrv.restart()
    assert namesrv.port == port
    async with NamesrvTestClient(namesrv.addr) as ns:
        listed = await ns.call(
            RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader("ORDER_TOPIC_CONFIG")
        )
        assert fastjson.loads(listed.body) == {"table": {"T": "broker-a:4"}}
        register = await ns.register_broker("broker-a", "127.0.0.1:20911", ["T"])
        assert fastjson.loads(register.body) == {"table": {"T": "broker-a:4"}}
        await ns.call(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "T"))
        gone = await ns.call(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "T"))
        assert gone.code == ResponseCode.QUERY_NOT_FOUND


async def test_unknown_code_and_missing_header_field(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    async with NamesrvTestClient(cluster.namesrv_addr) as ns:
        unknown = await ns.call(RequestCode.SEND_MESSAGE)
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert unknown.remark == " request type 10 not supported"
        missing = await ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topik": "T"})
        assert missing.code == ResponseCode.SYSTEM_ERROR
        assert missing.remark is not None and "'topic'" in missing.remark
        bad_body = await ns.call(
            RequestCode.REGISTER_BROKER,
            {
                "brokerName": "b",
                "brokerAddr": "h:1",
                "clusterName": "C",
                "haServerAddr": "h:2",
                "brokerId": "0",
                "compressed": "true",
            },
            b"not zlib at all",
        )
        assert bad_body.code == ResponseCode.SYSTEM_ERROR and "RegisterBrokerBody" in (bad_body.remark or "")
        assert await ns.route("T") is None  # still serving


async def test_garbage_frame_closes_only_that_connection(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    host, port = cluster.namesrvs[0].host, cluster.namesrvs[0].port
    async with NamesrvTestClient(cluster.namesrv_addr) as ns:
        await ns.register_broker("broker-a", "127.0.0.1:20911", ["T"])
        reader, writer = await asyncio.open_connection(host, port)
        try:
            # serialize type 9 does not exist, and the header length points past the frame
            writer.write(struct.pack(">ii", 12, (9 << 24) | 999) + b"garbage!")
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), timeout=5) == b""  # closed by the NameServer
        finally:
            writer.close()
            await writer.wait_closed()
        route = await ns.route("T")  # the other connection, and the broker's routes, are untouched
        assert route is not None
