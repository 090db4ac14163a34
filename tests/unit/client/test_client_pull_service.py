"""The push consumer's pull loop on fakes: flow control, results, offset moves, and the watchdog."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from rocketq.client.config import ConsumerConfig
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_service import FLOW_CONTROL_DELAY_S, STOP, PullRequest, PullService
from rocketq.client.consumer.subscription import build_subscription
from rocketq.client.model import PullResult, PullStatus
from rocketq.common.message import MessageExt, MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


class Boom(BaseException):
    """Kills a pull task the way a bug would (not an Exception, so the loop does not catch it)."""


class FakePullAPI:
    def __init__(self) -> None:
        self.results: list[object] = []
        self.calls: list[tuple[int, int, int]] = []

    async def pull(
        self,
        mq,
        sub,
        offset,
        max_nums,
        sys_flag,
        commit_offset,
        suspend_ms,
        timeout_ms,
        *,
        send_subscription=False,
    ):
        self.calls.append((offset, sys_flag, commit_offset))
        if not self.results:
            await asyncio.Event().wait()  # park like a long poll once the script is done
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result


class Host:
    group = "g"
    consume_orderly = False

    def __init__(self) -> None:
        self.config = ConsumerConfig.build({"consumer_group": "g", "pull_max_idle_time_ms": 10})
        self.offset_store = OffsetStore("g")
        self.pull_api = FakePullAPI()
        self.submitted: list[list[int]] = []
        self.consume_service = SimpleNamespace(
            submit=lambda msgs, pq, mq, d: self.submitted.append([m.queue_offset for m in msgs])
        )
        self.rebalance = SimpleNamespace(subscriptions={"T": build_subscription("T", "*")}, process_queues={})
        self.pulling = True
        self.paused = False

    async def compute_pull_from_where(self, mq):
        return 0


def found(*offsets: int, next_offset: int) -> PullResult:
    return PullResult(
        PullStatus.FOUND, next_offset, 0, 100, [MessageExt("T", b"x", queue_offset=o) for o in offsets]
    )


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_found_messages_go_to_the_consume_service_and_offsets_advance() -> None:
    host = Host()
    host.pull_api.results = [
        found(0, 1, next_offset=2),
        PullResult(PullStatus.NO_MATCHED_MSG, 5, 0, 5),
        found(5, next_offset=6),
    ]
    svc = PullService(host)  # type: ignore[arg-type]
    pq = ProcessQueue()
    host.rebalance.process_queues[MQ] = pq
    svc.start_pull(MQ, pq, 0)
    await settle()
    assert host.submitted == [[0, 1], [5]]
    assert [c[0] for c in host.pull_api.calls] == [0, 2, 5, 6]
    await svc.stop()


async def test_commit_offset_rides_on_the_pull() -> None:
    host = Host()
    host.offset_store.update_offset(MQ, 7)
    svc = PullService(host)  # type: ignore[arg-type]
    pq = ProcessQueue()
    svc.start_pull(MQ, pq, 7)
    await settle()
    assert host.pull_api.calls[0] == (7, 0x3, 7)  # COMMIT_OFFSET | SUSPEND
    await svc.stop()


async def test_flow_control_and_pause_delay_the_pull() -> None:
    host = Host()
    svc = PullService(host)  # type: ignore[arg-type]
    pq = ProcessQueue()
    pq.put_messages([MessageExt("T", b"x", queue_offset=i) for i in range(1001)])
    assert await svc._pull_once(PullRequest(MQ, pq, 0)) == FLOW_CONTROL_DELAY_S
    span = ProcessQueue()
    span.put_messages([MessageExt("T", b"x", queue_offset=0), MessageExt("T", b"x", queue_offset=2001)])
    assert await svc._pull_once(PullRequest(MQ, span, 0)) == FLOW_CONTROL_DELAY_S
    host.paused = True
    assert await svc._pull_once(PullRequest(MQ, ProcessQueue(), 0)) == 1.0
    assert host.pull_api.calls == []


async def test_offset_illegal_drops_the_queue() -> None:
    host = Host()
    host.pull_api.results = [PullResult(PullStatus.OFFSET_ILLEGAL, 40, 40, 90), found(40, next_offset=41)]
    svc = PullService(host)  # type: ignore[arg-type]
    req = PullRequest(MQ, ProcessQueue(), 3)
    assert await svc._pull_once(req) == STOP
    assert req.pq.dropped and req.next_offset == 40
    for task in list(asyncio.all_tasks()):
        if task.get_name().startswith("offset-moved"):
            task.cancel()


async def test_watchdog_revives_a_lost_pull() -> None:
    host = Host()
    host.pull_api.results = [Boom(), found(0, next_offset=1)]
    svc = PullService(host)  # type: ignore[arg-type]
    pq = ProcessQueue()
    host.rebalance.process_queues[MQ] = pq
    svc.start_pull(MQ, pq, 0)
    await settle()
    assert host.submitted == []
    assert svc.revive_lost() == 1
    await settle()
    assert host.submitted == [[0]]
    pq.dropped = True
    assert svc.revive_lost() == 0, "dropped queues are not revived"
    await svc.stop()


async def test_subscription_not_exist_triggers_a_heartbeat() -> None:
    from rocketq.remoting.errors import SubscriptionNotExistError

    host = Host()
    beats: list[int] = []
    host.rebalance.instance = SimpleNamespace(heartbeat_soon=lambda: beats.append(1))
    host.pull_api.results = [SubscriptionNotExistError(24, "no subscription")]
    svc = PullService(host)  # type: ignore[arg-type]
    delay = await svc._pull_once(PullRequest(MQ, ProcessQueue(), 0))
    assert beats == [1] and 0 < delay < 1
