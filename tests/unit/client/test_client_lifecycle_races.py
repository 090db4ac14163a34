"""start() and shutdown() of the clients under concurrency: one start in flight, the others await it.

Each client here acquires a client instance whose start() waits until the test opens its gate: the
window in which a second start() (or a shutdown()) used to get past the state check, acquire a second
instance (or count the Admin twice) and leak it, or return before the client was up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.client import admin as admin_module
from rocketq.client.admin import Admin
from rocketq.client.consumer import lite_pull, push, simple
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.push import PushConsumer
from rocketq.client.consumer.simple import SimpleConsumer
from rocketq.client.errors import ClientStateError
from rocketq.client.model import ConsumeResult
from rocketq.client.producer.producer import Producer
from rocketq.common.service import ServiceState

NAMESRV = "127.0.0.1:9876"


class Gate:
    """Shared by the instances of one test: `entered` once a start() waits, `opened` lets them go on."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()


class GatedInstance:
    """The part of ClientInstance the clients' start() and shutdown() use, with no network."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.starts = 0
        self.admin_users = 0
        self.producers: dict[str, object] = {}
        self.consumers: dict[str, object] = {}
        self.route_table: dict[str, object] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.client_id = "127.0.0.1@gated"
        self.stable_name = "127.0.0.1@gated"
        self.api = self

    async def start(self) -> None:
        self.starts += 1
        self.gate.entered.set()
        await self.gate.opened.wait()

    async def release_admin(self) -> None:
        self.admin_users -= 1

    def register_producer(self, producer: Any) -> None:
        if producer.group in self.producers:  # as ClientInstance does
            raise ClientStateError(f"producer group {producer.group!r} already runs")
        self.producers[producer.group] = producer

    async def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)

    def register_consumer(self, consumer: Any) -> None:
        if consumer.group in self.consumers:
            raise ClientStateError(f"consumer group {consumer.group!r} already runs")
        self.consumers[consumer.group] = consumer

    async def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)

    async def update_topic_route(self, topic: str, **_: Any) -> bool:
        return False

    async def send_heartbeat_to_all_brokers(self) -> None:
        pass

    def set_rebalance_interval(self, interval_ms: int) -> None:
        pass

    def rebalance_immediately(self) -> None:
        pass

    def namesrv_addr(self) -> str:
        return NAMESRV

    async def get_all_topic_list(self, addr: str) -> list[str]:
        return ["T"]


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def acquired(monkeypatch: pytest.MonkeyPatch, gate: Gate) -> list[GatedInstance]:
    """Every instance the clients acquire (as the registry would: a new one when the group is taken)."""
    instances: list[GatedInstance] = []

    def acquire(config: object, **groups: str | None) -> GatedInstance:
        for inst in instances:
            if groups.get("consumer_group") not in inst.consumers | {None: None}:
                continue
            if groups.get("producer_group") not in inst.producers | {None: None}:
                continue
            return inst
        inst = GatedInstance(gate)
        instances.append(inst)
        return inst

    for module in (admin_module, push, lite_pull, simple):
        monkeypatch.setattr(module, "acquire_instance", acquire)
    return instances


async def race(gate: Gate, first: Callable[[], Any], second: Callable[[], Any]) -> list[Any]:
    """Run `first` until its instance start waits, then `second`; open the gate once both are in flight.

    The second task has run its first step by the time the test resumes (tasks run in creation order),
    so a start() that returned early (or a shutdown() that did not wait) is done before the gate opens.
    """
    a = asyncio.ensure_future(first())
    b = asyncio.ensure_future(second())
    await gate.entered.wait()
    assert not b.done(), "the second call finished while the first start was still in flight"
    gate.opened.set()
    return list(await asyncio.gather(a, b))


async def test_two_first_uses_of_an_admin_start_one_client_counted_once(
    gate: Gate, acquired: list[GatedInstance]
) -> None:
    admin = Admin(NAMESRV)
    assert await race(gate, admin.topic_list, admin.topic_list) == [["T"], ["T"]]
    assert len(acquired) == 1 and acquired[0].starts == 1 and acquired[0].admin_users == 1
    await admin.shutdown()
    assert acquired[0].admin_users == 0  # released: nothing left holding the instance


async def test_an_admin_shut_down_while_starting_ends_shut_down_and_released(
    gate: Gate, acquired: list[GatedInstance]
) -> None:
    admin = Admin(NAMESRV)
    await race(gate, admin.start, admin.shutdown)
    assert admin._state is ServiceState.SHUTDOWN_ALREADY and admin._instance is None
    assert [i.admin_users for i in acquired] == [0]
    await admin.start()  # an Admin may be started again after shutdown
    assert [i.admin_users for i in acquired] == [1]
    await admin.shutdown()


async def test_two_starts_of_a_producer_register_it_once(gate: Gate) -> None:
    inst = GatedInstance(gate)
    producer = Producer("pg", namesrv_addr=NAMESRV, instance=inst)  # type: ignore[arg-type]
    await race(gate, producer.start, producer.start)
    assert inst.starts == 1 and list(inst.producers) == ["pg"]
    await producer.shutdown()
    assert inst.producers == {}


async def test_a_producer_shut_down_while_starting_is_not_left_running(gate: Gate) -> None:
    inst = GatedInstance(gate)
    producer = Producer("pg", namesrv_addr=NAMESRV, instance=inst)  # type: ignore[arg-type]
    await race(gate, producer.start, producer.shutdown)
    assert producer._state is ServiceState.SHUTDOWN_ALREADY and inst.producers == {}


def push_consumer() -> PushConsumer:
    consumer = PushConsumer("cg", NAMESRV)
    consumer.subscribe("T", "*")
    consumer.register_listener(lambda msgs: ConsumeResult.SUCCESS)
    return consumer


def lite_pull_consumer() -> LitePullConsumer:
    consumer = LitePullConsumer("cg", NAMESRV)
    consumer.subscribe("T", "*")
    return consumer


def simple_consumer() -> SimpleConsumer:
    return SimpleConsumer("cg", NAMESRV, subscriptions={"T": "*"})


CONSUMERS = [push_consumer, lite_pull_consumer, simple_consumer]


@pytest.mark.parametrize("make", CONSUMERS, ids=["push", "lite-pull", "simple"])
async def test_two_starts_of_a_consumer_use_one_instance_and_wait_for_it(
    make: Callable[[], Any], gate: Gate, acquired: list[GatedInstance]
) -> None:
    consumer = make()
    await race(gate, consumer.start, consumer.start)
    assert len(acquired) == 1 and acquired[0].starts == 1 and list(acquired[0].consumers) == ["cg"]
    await consumer.shutdown()
    assert acquired[0].consumers == {}


@pytest.mark.parametrize("make", CONSUMERS, ids=["push", "lite-pull", "simple"])
async def test_a_consumer_shut_down_while_starting_is_not_left_running(
    make: Callable[[], Any], gate: Gate, acquired: list[GatedInstance]
) -> None:
    consumer = make()
    await race(gate, consumer.start, consumer.shutdown)
    assert consumer._state is ServiceState.SHUTDOWN_ALREADY
    assert [i.consumers for i in acquired] == [{}]
    assert not any(s.running for s in getattr(consumer, "_services", []))  # no periodic work left behind
