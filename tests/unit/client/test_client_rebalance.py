"""RebalanceImpl on a fake client instance: allocation, drops, generations, orderly locks."""

from __future__ import annotations

from rocketq.client.config import MessageModel
from rocketq.client.consumer.allocate import AllocateMessageQueueAveragely
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.rebalance import RebalanceImpl
from rocketq.client.consumer.subscription import build_subscription
from rocketq.common.message import MessageQueue

QUEUES = {MessageQueue("T", "broker-a", i) for i in range(4)}


class FakeAPI:
    def __init__(self) -> None:
        self.locked_by_other: set[MessageQueue] = set()
        self.unlocked: list[MessageQueue] = []

    async def lock_batch_mq(self, addr, group, client_id, mqs):
        return {mq for mq in mqs if mq not in self.locked_by_other}

    async def unlock_batch_mq(self, addr, group, client_id, mqs, *, oneway=False):
        self.unlocked.extend(mqs)


class FakeInstance:
    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.members = [client_id]
        self.api = FakeAPI()
        self.rebalance_asked = 0

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        return list(self.members)

    async def update_topic_route(self, topic: str) -> bool:
        return False

    def rebalance_immediately(self) -> None:
        self.rebalance_asked += 1

    def find_broker_addr_in_subscribe(self, name, broker_id=0, only_this=False):
        return "127.0.0.1:10911"


class Host:
    group = "g"

    def __init__(self) -> None:
        self.dispatched: list[tuple[MessageQueue, int, int]] = []
        self.removed: list[MessageQueue] = []
        self.changed: list[set[MessageQueue]] = []
        self.start_offset = 7
        self.release_ok = True

    async def compute_pull_from_where(self, mq):
        return self.start_offset

    def dispatch_pull(self, mq, pq: ProcessQueue, offset: int) -> None:
        self.dispatched.append((mq, offset, pq.generation))

    async def remove_unnecessary_queue(self, mq, pq) -> bool:
        self.removed.append(mq)
        return self.release_ok

    def remove_dirty_offset(self, mq) -> None:
        pass

    async def message_queue_changed(self, topic, mq_all, mq_divided) -> None:
        self.changed.append(set(mq_divided))


def make(client_id: str = "c1", model: MessageModel = MessageModel.CLUSTERING, orderly: bool = False):
    host, inst = Host(), FakeInstance(client_id)
    rb = RebalanceImpl(host, inst, AllocateMessageQueueAveragely(), model, orderly=orderly)  # type: ignore[arg-type]
    rb.subscriptions["T"] = build_subscription("T", "*")
    rb.topic_subscribe_info["T"] = set(QUEUES)
    return rb, host, inst


async def test_alone_takes_everything_then_shares() -> None:
    rb, host, inst = make("c1")
    await rb.do_rebalance()
    assert set(rb.process_queues) == QUEUES
    assert {d[1] for d in host.dispatched} == {7} and {d[2] for d in host.dispatched} == {1}
    old = dict(rb.process_queues)
    inst.members = ["c1", "c2"]
    await rb.do_rebalance()
    mine = {MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)}
    assert set(rb.process_queues) == mine
    assert all(old[mq].dropped for mq in QUEUES - mine)
    assert not any(old[mq].dropped for mq in mine), "kept queues keep their ProcessQueue"
    assert set(host.removed) == QUEUES - mine
    assert rb.generation == 2
    assert host.changed[-1] == mine


async def test_unchanged_allocation_is_a_no_op() -> None:
    rb, host, _ = make()
    await rb.do_rebalance()
    await rb.do_rebalance()
    assert rb.generation == 1 and len(host.dispatched) == 4 and len(host.changed) == 1


async def test_unknown_start_offset_defers_the_queue() -> None:
    rb, host, _ = make()
    host.start_offset = -1
    await rb.do_rebalance()
    assert rb.process_queues == {} and host.dispatched == []


async def test_queue_not_releasable_stays_dropped_until_next_round() -> None:
    rb, host, inst = make()
    await rb.do_rebalance()
    host.release_ok = False
    inst.members = ["c0", "c1"]  # c1 now second: keeps queues 2, 3
    await rb.do_rebalance()
    assert len(rb.process_queues) == 4
    assert sum(pq.dropped for pq in rb.process_queues.values()) == 2
    host.release_ok = True
    await rb.do_rebalance()
    assert set(rb.process_queues) == {MessageQueue("T", "broker-a", 2), MessageQueue("T", "broker-a", 3)}


async def test_broadcasting_takes_every_queue_whatever_the_members() -> None:
    rb, _, inst = make(model=MessageModel.BROADCASTING)
    inst.members = ["a", "b", "c1"]
    await rb.do_rebalance()
    assert set(rb.process_queues) == QUEUES


async def test_orderly_takes_only_locked_queues_and_asks_again() -> None:
    rb, _host, inst = make(orderly=True)
    inst.api.locked_by_other = {MessageQueue("T", "broker-a", 3)}
    await rb.do_rebalance()
    assert set(rb.process_queues) == QUEUES - inst.api.locked_by_other
    assert all(pq.locked for pq in rb.process_queues.values())
    inst.api.locked_by_other = set()
    await rb.lock_all()
    await rb.do_rebalance()
    assert set(rb.process_queues) == QUEUES
    inst.api.locked_by_other = {MessageQueue("T", "broker-a", 0)}
    await rb.lock_all()
    assert not rb.process_queues[MessageQueue("T", "broker-a", 0)].locked
    await rb.unlock_all()
    assert set(inst.api.unlocked) == QUEUES


async def test_unsubscribed_topic_is_dropped() -> None:
    rb, host, _ = make()
    await rb.do_rebalance()
    del rb.subscriptions["T"]
    await rb.do_rebalance()
    assert rb.process_queues == {} and set(host.removed) == QUEUES


async def test_no_members_or_no_route_does_nothing() -> None:
    rb, _host, inst = make()
    inst.members = []
    await rb.do_rebalance()
    assert rb.process_queues == {}
    rb.topic_subscribe_info.pop("T")
    inst.members = ["c1"]
    await rb.do_rebalance()
    assert rb.process_queues == {}
