"""BrokerOuterAPI: the broker's calls to the NameServers (REGISTER_BROKER, UNREGISTER_BROKER).

Port of org.apache.rocketmq.broker.out.BrokerOuterAPI (4.9.8; docs/protocol.md 2.2). A registration goes to
every NameServer at once (concurrently, bounded by registerBrokerTimeoutMills); one that fails is logged
and the others still count, as in Java. The body is the RegisterBrokerBody, plain JSON or (with
compressedRegister) the zlib form, with bodyCrc32 = CRC32 & 0x7FFFFFFF. Oneway registrations (after a
topic is created on send) get no answer; sync ones return each NameServer's RegisterBrokerResult.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from rocketq.common.errors import RocketQError
from rocketq.common.record.layout import body_crc
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import KVTable, RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.namesrv import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketq.remoting.transport import RemotingClient

log = logging.getLogger("rocketq.broker.outer")


@dataclass(slots=True)
class RegisterBrokerResult:
    namesrv_addr: str
    master_addr: str | None = None
    ha_server_addr: str | None = None
    kv_table: KVTable | None = None


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str


class BrokerOuterAPI:
    def __init__(self, client: RemotingClient, namesrv_addrs: list[str]) -> None:
        self._client = client
        self.namesrv_addrs = list(namesrv_addrs)

    async def register_broker_all(
        self,
        who: BrokerIdentity,
        wrapper: TopicConfigSerializeWrapper,
        *,
        oneway: bool,
        timeout_ms: int,
        compressed: bool,
    ) -> list[RegisterBrokerResult]:
        """Register with every NameServer; the results of the ones that answered (none when oneway)."""
        if not self.namesrv_addrs:
            return []
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=who.broker_name,
            broker_addr=who.broker_addr,
            cluster_name=who.cluster_name,
            ha_server_addr=who.ha_server_addr,
            broker_id=who.broker_id,
            compressed=compressed,
            body_crc32=body_crc(body),
        ).to_ext_fields()
        calls = [self._register_one(addr, header, body, oneway, timeout_ms) for addr in self.namesrv_addrs]
        try:
            outcomes = await asyncio.wait_for(asyncio.gather(*calls), timeout_ms / 1000 + 1)
        except TimeoutError:
            log.warning("registering with the NameServers took longer than %d ms", timeout_ms)
            return []
        return [r for r in outcomes if r is not None]

    async def _register_one(
        self, addr: str, header: dict[str, str], body: bytes, oneway: bool, timeout_ms: int
    ) -> RegisterBrokerResult | None:
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(header), body, oneway=oneway)
        try:
            if oneway:
                await self._client.invoke_oneway(addr, request, timeout_ms)
                return None
            response = await self._client.invoke_sync(addr, request, timeout_ms)
        except RocketQError as exc:
            log.warning("registering with NameServer %s failed: %s", addr, exc)
            return None
        if response.code != ResponseCode.SUCCESS:
            log.warning("NameServer %s refused the registration: %d %s", addr, response.code, response.remark)
            return None
        rh = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
        kv = None
        if response.body:
            try:
                kv = KVTable.from_json(fastjson.loads(response.body))
            except ValueError as exc:
                log.warning("NameServer %s answered a registration with a bad KVTable: %s", addr, exc)
        log.debug("registered with NameServer %s", addr)
        return RegisterBrokerResult(addr, rh.master_addr, rh.ha_server_addr, kv)

    async def unregister_broker_all(self, who: BrokerIdentity, timeout_ms: int = 3000) -> None:
        header = UnRegisterBrokerRequestHeader(
            broker_name=who.broker_name,
            broker_addr=who.broker_addr,
            cluster_name=who.cluster_name,
            broker_id=who.broker_id,
        ).to_ext_fields()

        async def one(addr: str) -> None:
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(header))
            try:
                response = await self._client.invoke_sync(addr, request, timeout_ms)
            except RocketQError as exc:
                log.warning("unregistering from NameServer %s failed: %s", addr, exc)
                return
            if response.code != ResponseCode.SUCCESS:
                log.warning(
                    "NameServer %s refused the unregistration: %d %s", addr, response.code, response.remark
                )
            else:
                log.info("unregistered from NameServer %s", addr)

        await asyncio.gather(*(one(a) for a in self.namesrv_addrs))
