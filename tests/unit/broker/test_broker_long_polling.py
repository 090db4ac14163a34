from broker_fakes import FakeConnection

from rocketq.broker.filter import build_tag_filter
from rocketq.broker.long_polling import PullRequest, PullRequestHoldService
from rocketq.common.clock import ManualClock
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.command import RemotingCommand


class Queue:
    def __init__(self) -> None:
        self.max = 0

    def __call__(self, topic: str, queue_id: int) -> int:
        return self.max


def setup() -> tuple[PullRequestHoldService, Queue, ManualClock, list[RemotingCommand]]:
    q, clock, replayed = Queue(), ManualClock(), []
    svc = PullRequestHoldService(q, lambda conn, req: replayed.append(req), clock)
    return svc, q, clock, replayed


def park(
    svc: PullRequestHoldService, clock: ManualClock, offset: int = 0, expr: str = "*", hold: int = 15_000
) -> RemotingCommand:
    req = RemotingCommand.request(11)
    flt = build_tag_filter(expr, {java_hash_code(t) for t in expr.split("||")} if expr != "*" else set())
    svc.suspend("T", 0, PullRequest(req, FakeConnection(), offset, clock.monotonic_ms() + hold, flt), hold)
    return req


def test_arrival_wakes_a_matching_pull_only() -> None:
    svc, _q, clock, replayed = setup()
    req = park(svc, clock, expr="TagA")
    svc.on_message_arrival("T", 1, 0, java_hash_code("TagA"), 0, None)  # other queue
    svc.on_message_arrival("T", 0, 0, java_hash_code("TagB"), 0, None)  # filtered out
    assert replayed == [] and svc.held_count == 1
    svc.on_message_arrival("T", 0, 1, java_hash_code("TagA"), 0, None)
    assert replayed == [req] and svc.held_count == 0


def test_arrival_before_the_pull_offset_does_not_wake() -> None:
    svc, q, clock, replayed = setup()
    park(svc, clock, offset=5)
    q.max = 5
    svc.notify_message_arriving("T", 0, 4)
    assert replayed == []
    q.max = 6
    svc.notify_message_arriving("T", 0, 4)  # stale max offset: re-read from the store
    assert len(replayed) == 1


def test_periodic_check_times_out_and_finds_growth() -> None:
    svc, q, clock, replayed = setup()
    park(svc, clock, hold=15_000)
    svc.check_hold_requests()
    assert replayed == []
    clock.advance(15_000)
    svc.check_hold_requests()
    assert len(replayed) == 1
    park(svc, clock, offset=0)
    q.max = 1
    svc.check_hold_requests()
    assert len(replayed) == 2


def test_closed_connection_is_dropped_and_drain_answers_the_rest() -> None:
    svc, q, clock, replayed = setup()
    park(svc, clock)
    conn_holder = next(pr for prs in svc._table.values() for pr in prs)
    conn_holder.conn.is_active = False
    q.max = 1
    svc.check_hold_requests()
    assert replayed == [] and svc.held_count == 0
    park(svc, clock)
    svc.drain()
    assert len(replayed) == 1 and svc.held_count == 0


async def test_timer_expires_a_pull_on_a_running_loop() -> None:
    import asyncio

    svc, _q, clock, replayed = setup()
    park(svc, clock, hold=0)  # a zero hold fires on the next loop iterations, no real waiting
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(replayed) == 1 and svc.held_count == 0
