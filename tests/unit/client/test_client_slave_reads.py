"""Which node a consumer pulls from (Java findBrokerAddressInSubscribe, PullAPIWrapper): the node the
last answer suggested, a slave when the master is gone from the route; producers and offset-only look-ups
ask for the master."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.pull_api import PullAPIWrapper
from rocketq.client.instance import ClientInstance
from rocketq.client.model import PullResult, PullStatus
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData

MASTER, SLAVE1, SLAVE2 = "127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931"


@pytest.fixture
async def inst() -> AsyncIterator[ClientInstance]:
    instance = ClientInstance(ClientConfig.build({"namesrv_addr": "127.0.0.1:9876"}))
    yield instance
    await instance.remoting.shutdown()


async def test_the_master_when_it_is_there_else_a_slave(inst: ClientInstance) -> None:
    inst.broker_addrs = {"broker-a": {0: MASTER, 1: SLAVE1, 2: SLAVE2}}
    assert inst.find_broker_addr_in_subscribe("broker-a") == MASTER
    assert inst.find_broker_addr_in_subscribe("broker-a", 2) == SLAVE2
    assert inst.find_broker_addr_in_publish("broker-a") == MASTER
    del inst.broker_addrs["broker-a"][0]  # the master left the route
    assert inst.find_broker_addr_in_subscribe("broker-a") == SLAVE1
    assert inst.find_broker_addr_in_subscribe("broker-a", only_this=True) is None
    assert inst.find_broker_addr_in_publish("broker-a") is None
    del inst.broker_addrs["broker-a"][1]
    assert inst.find_broker_addr_in_subscribe("broker-a", 1, only_this=True) == SLAVE2  # Java: brokerId + 1


async def test_pulls_follow_suggest_which_broker_id(inst: ClientInstance) -> None:
    inst.broker_addrs = {"broker-a": {0: MASTER, 1: SLAVE1}}
    wrapper = PullAPIWrapper(inst, "g")
    mq = MessageQueue("T", "broker-a", 0)
    assert wrapper._broker_addr(mq) == MASTER
    wrapper.process(mq, PullResult(PullStatus.NO_NEW_MSG, 0, 0, 0, [], 1), SubscriptionData(topic="T"))
    assert wrapper._broker_addr(mq) == SLAVE1
    wrapper.process(mq, PullResult(PullStatus.NO_NEW_MSG, 0, 0, 0, [], 0), SubscriptionData(topic="T"))
    assert wrapper._broker_addr(mq) == MASTER
    del inst.broker_addrs["broker-a"][0]
    assert wrapper._broker_addr(mq) == SLAVE1
