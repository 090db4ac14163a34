import zlib
from typing import Any

from rocketq.broker.outer_api import BrokerIdentity, BrokerOuterAPI
from rocketq.remoting.errors import RemotingConnectError
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand

WHO = BrokerIdentity("DefaultCluster", "127.0.0.1:10911", "broker-a", 0, "127.0.0.1:10912")


class FakeClient:
    def __init__(self, down: set[str] | None = None) -> None:
        self.calls: list[tuple[str, RemotingCommand, str]] = []
        self.down = down or set()

    async def invoke_sync(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        self.calls.append((addr, cmd, "sync"))
        if addr in self.down:
            raise RemotingConnectError(f"connect to {addr} failed")
        ext = {"masterAddr": "127.0.0.1:10911"} if cmd.code == RequestCode.REGISTER_BROKER else None
        body = (
            fastjson.dumps({"table": {"Orders": "broker-a:4"}})
            if cmd.code == RequestCode.REGISTER_BROKER
            else b""
        )
        return cmd.make_response(0, None, ext, body)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> None:
        self.calls.append((addr, cmd, "oneway"))


def wrapper() -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper({"Orders": TopicConfig("Orders", 4, 4, 6)}, DataVersion(5, 2))


async def test_register_goes_to_every_namesrv_with_a_checked_body() -> None:
    client: Any = FakeClient(down={"ns3:9876"})
    api = BrokerOuterAPI(client, ["ns1:9876", "ns2:9876", "ns3:9876"])
    results = await api.register_broker_all(WHO, wrapper(), oneway=False, timeout_ms=1000, compressed=False)
    assert sorted(r.namesrv_addr for r in results) == [
        "ns1:9876",
        "ns2:9876",
    ]  # the one that is down is skipped
    assert results[0].master_addr == "127.0.0.1:10911" and results[0].kv_table.table == {
        "Orders": "broker-a:4"
    }
    _, cmd, mode = client.calls[0]
    ext = cmd.ext_fields
    assert (
        mode == "sync" and ext["brokerAddr"] == WHO.broker_addr and ext["haServerAddr"] == "127.0.0.1:10912"
    )
    assert int(ext["bodyCrc32"]) == zlib.crc32(cmd.body) & 0x7FFFFFFF and ext["compressed"] == "false"
    body = RegisterBrokerBody.decode(cmd.body)
    assert body.topic_config_serialize_wrapper.data_version == DataVersion(5, 2)


async def test_oneway_and_compressed_registration_and_unregister() -> None:
    client: Any = FakeClient()
    api = BrokerOuterAPI(client, ["ns1:9876"])
    assert await api.register_broker_all(WHO, wrapper(), oneway=True, timeout_ms=1000, compressed=True) == []
    _, cmd, mode = client.calls[0]
    assert mode == "oneway" and cmd.is_oneway and cmd.ext_fields["compressed"] == "true"
    body = RegisterBrokerBody.decode(cmd.body, compressed=True)
    assert body.topic_config_serialize_wrapper.topic_config_table["Orders"].write_queue_nums == 4
    await api.unregister_broker_all(WHO)
    assert client.calls[-1][1].code == RequestCode.UNREGISTER_BROKER
    assert client.calls[-1][1].ext_fields["brokerName"] == "broker-a"
    assert (
        await BrokerOuterAPI(client, []).register_broker_all(
            WHO, wrapper(), oneway=False, timeout_ms=1, compressed=False
        )
        == []
    )
