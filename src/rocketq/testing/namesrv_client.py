"""A thin NameServer client for tests: raw remoting calls with typed headers and bodies, no SDK.

Each instance owns one RemotingClient, hence one connection per NameServer: a "fake broker" that
registers through its own NamesrvTestClient and then closes it looks, to the NameServer, exactly
like a broker whose connection dropped.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Self

from rocketq.common.constants import DEFAULT_CLUSTER
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import CURRENT_VERSION, RemotingCommand
from rocketq.remoting.protocol.headers.base import CommandHeader
from rocketq.remoting.protocol.headers.namesrv import (
    GetRouteInfoRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketq.remoting.transport import RemotingClient


class NamesrvTestClient:
    """Calls one NameServer at `addr` ("host:port"; of a "a;b" list, the first one)."""

    def __init__(self, addr: str, timeout_ms: int = 3000) -> None:
        self.addr = addr.split(";")[0].strip()
        self.timeout_ms = timeout_ms
        self.remoting = RemotingClient()

    async def close(self) -> None:
        await self.remoting.shutdown()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def call(
        self,
        code: int,
        header: CommandHeader | Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        version: int = CURRENT_VERSION,
    ) -> RemotingCommand:
        """One sync request; the response whatever its code."""
        ext = (
            header.to_ext_fields()
            if isinstance(header, CommandHeader)
            else (dict(header) if header else None)
        )
        request = RemotingCommand.request(code, ext, body)
        request.version = version
        return await self.remoting.invoke_sync(self.addr, request, self.timeout_ms)

    async def register_broker(
        self,
        broker_name: str,
        broker_addr: str,
        topics: Iterable[str] | Mapping[str, TopicConfig] = (),
        *,
        cluster: str = DEFAULT_CLUSTER,
        broker_id: int = 0,
        data_version: DataVersion | None = None,
        compressed: bool = False,
        ha_server_addr: str | None = None,
        with_crc: bool = True,
    ) -> RemotingCommand:
        """REGISTER_BROKER as a broker sends it (every topic with 4 read/write queues unless given)."""
        table = (
            dict(topics)
            if isinstance(topics, Mapping)
            else {name: TopicConfig(name, 4, 4) for name in topics}
        )
        version = data_version or DataVersion(timestamp=1, counter=1)
        body = RegisterBrokerBody(TopicConfigSerializeWrapper(table, version)).encode(compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=broker_name,
            broker_addr=broker_addr,
            cluster_name=cluster,
            ha_server_addr=ha_server_addr or broker_addr,
            broker_id=broker_id,
            compressed=compressed,
            body_crc32=(zlib.crc32(body) & 0x7FFFFFFF) if with_crc else 0,
        )
        return await self.call(RequestCode.REGISTER_BROKER, header, body)

    async def unregister_broker(
        self, broker_name: str, broker_addr: str, *, cluster: str = DEFAULT_CLUSTER, broker_id: int = 0
    ) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader(broker_name, broker_addr, cluster, broker_id)
        return await self.call(RequestCode.UNREGISTER_BROKER, header)

    async def route(self, topic: str, *, version: int = CURRENT_VERSION) -> TopicRouteData | None:
        """The topic's route, or None on TOPIC_NOT_EXIST; AssertionError on any other code."""
        response = await self.call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic), version=version
        )
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        assert response.code == ResponseCode.SUCCESS, f"route of {topic}: {response.code} {response.remark}"
        return TopicRouteData.from_json(fastjson.loads(response.body))

    async def cluster_info(self) -> ClusterInfo:
        response = await self.call(RequestCode.GET_BROKER_CLUSTER_INFO)
        assert response.code == ResponseCode.SUCCESS, f"cluster info: {response.code} {response.remark}"
        return ClusterInfo.from_json(fastjson.loads(response.body))
