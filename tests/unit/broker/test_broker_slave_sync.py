"""SlaveSynchronize against a master's real admin processors (no sockets): topics and subscription
groups replaced when the data version differs, consumer offsets merged (the master's win), delay-level
progress taken over; nothing without a master address."""

from __future__ import annotations

from typing import Any

from broker_fakes import FakeConnection, make_context

from rocketq.broker.processors.admin.delay import DelayOffsetAdminProcessor
from rocketq.broker.processors.admin.offset import OffsetAdminProcessor
from rocketq.broker.processors.admin.subscription import SubscriptionAdminProcessor
from rocketq.broker.processors.admin.topic import TopicAdminProcessor
from rocketq.broker.slave_sync import SlaveSynchronize
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.admin import SubscriptionGroupConfig
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.command import RemotingCommand


class _Schedule:
    def __init__(self, offsets: dict[int, int]) -> None:
        self.offsets = offsets
        self.persisted = 0

    def encode(self) -> bytes:
        return fastjson.dumps({"offsetTable": self.offsets}, unquoted_int_keys=True)

    def persist(self) -> None:
        self.persisted += 1


class _MasterClient:
    """invoke_sync answered by the master's processors."""

    def __init__(self, ctx: Any) -> None:
        self.processors = [
            p(ctx)
            for p in (
                TopicAdminProcessor,
                SubscriptionAdminProcessor,
                OffsetAdminProcessor,
                DelayOffsetAdminProcessor,
            )
        ]
        self.asked: list[int] = []

    async def invoke_sync(
        self, addr: str, request: RemotingCommand, timeout_ms: float = 3000
    ) -> RemotingCommand:
        self.asked.append(request.code)
        for processor in self.processors:
            if request.code in processor.codes:
                response = await processor.process_request(FakeConnection(), request)
                assert response is not None
                return response
        raise AssertionError(f"no processor for {request.code}")


async def test_a_slave_copies_its_masters_tables() -> None:
    master, slave = make_context(), make_context(brokerId=1)
    master.topic_config_manager.update_topic_config(TopicConfig("OnlyOnMaster", 4, 4))
    master.topic_config_manager.update_topic_config(TopicConfig("AlsoOnMaster", 2, 2))  # another data version
    master.subscription_group_manager.update_subscription_group_config(
        SubscriptionGroupConfig(group_name="cg-m")
    )
    master.consumer_offset_manager.commit_offset("c", "cg", "T", 0, 42)
    slave.consumer_offset_manager.commit_offset("c", "cg", "T", 0, 40)
    slave.consumer_offset_manager.commit_offset("c", "cg-local", "T", 1, 7)
    slave.topic_config_manager.update_topic_config(TopicConfig("OnlyOnSlave", 1, 1))
    master.schedule_service, slave.schedule_service = _Schedule({1: 5, 3: 9}), _Schedule({})
    client = _MasterClient(master)
    sync = SlaveSynchronize(slave, client)  # type: ignore[arg-type]
    await sync.sync_all()
    assert client.asked == [] and sync.rounds == 0  # no master known yet
    sync.master_addr = "127.0.0.1:10811"  # not the slave itself
    await sync.sync_all()
    assert sync.rounds == 1 and len(client.asked) == 4
    topics = slave.topic_config_manager.topic_config_table
    assert "OnlyOnMaster" in topics and "OnlyOnSlave" not in topics
    assert slave.topic_config_manager.data_version == master.topic_config_manager.data_version
    assert slave.subscription_group_manager.find_subscription_group_config("cg-m") is not None
    offsets = slave.consumer_offset_manager
    assert offsets.query_offset("cg", "T", 0) == 42 and offsets.query_offset("cg-local", "T", 1) == 7
    assert slave.schedule_service.offsets == {1: 5, 3: 9} and slave.schedule_service.persisted == 1
    # Same data version: the table is left alone.
    slave.topic_config_manager.topic_config_table["Local"] = TopicConfig("Local", 1, 1)
    await sync.sync_all()
    assert "Local" in slave.topic_config_manager.topic_config_table
