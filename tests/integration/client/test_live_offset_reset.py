"""A live offset reset (INVOKE_BROKER_TO_RESET_OFFSET): online consumers replay what the reset says.

The broker computes the offsets and tells every online member (RESET_CONSUMER_CLIENT_OFFSET); push and
lite-pull consumers of our SDK drop what they hold, seek and store the new offsets, so the replay
survives their next commit. A group with no online member gets its offsets written directly, and the
result (and the CLI, on stderr) says so.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketq.client.admin_cli import main as admin_main
from rocketq.client.errors import MQBrokerError
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def _poll(lite: LitePullConsumer, n: int) -> list[MessageExt]:
    """Poll until `n` messages came, at most 200 rounds of 100 ms."""
    got: list[MessageExt] = []
    for _ in range(200):
        got.extend(await lite.poll(timeout_ms=100))
        if len(got) >= n:
            break
    return got


async def _lag(admin: Admin, group: str, topic: str) -> int:
    return sum(p.lag for p in await admin.consumer_progress(group, topic))


async def _committed(admin: Admin, group: str, topic: str) -> dict[int, int]:
    return {p.queue.queue_id: p.consumer_offset for p in await admin.consumer_progress(group, topic)}


async def test_live_reset_replays_for_push_and_lite_pull_consumers(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicLiveReset"
    bodies = [f"r{i}".encode() for i in range(20)]
    seen: Counter[bytes] = Counter()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.update(m.body for m in msgs)
        return ConsumeResult.SUCCESS

    async with Admin(namesrv_addr=ns) as admin, Producer("pg-live-reset", namesrv_addr=ns) as producer:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
        await h.send_all(producer, topic, bodies)
        push = PushConsumer(
            "cg-live-push", namesrv_addr=ns, consume_from_where=FIRST, persist_consumer_offset_interval_ms=200
        )
        push.subscribe(topic, "*")
        push.register_listener(listener)
        lite = LitePullConsumer(
            "cg-live-lite", namesrv_addr=ns, consume_from_where=FIRST, auto_commit_interval_ms=100
        )
        lite.subscribe(topic, "*")
        async with push, lite:
            await wait_for(
                lambda: sum(seen.values()) >= 20, timeout_s=30, what="the first pass of the push consumer"
            )
            await wait_for(
                lambda: _lag_is(admin, "cg-live-push", topic, 0),
                timeout_s=30,
                what="the push consumer's commit",
            )
            first = await _poll(lite, 20)
            assert sorted(m.body for m in first) == sorted(bodies)
            await lite.commit()
            assert await _lag(admin, "cg-live-lite", topic) == 0

            # Status of the online clients, as each reports it (GET_CONSUMER_STATUS_FROM_CLIENT).
            status = await admin.consumer_status("cg-live-push", topic)
            assert list(status) == [push.client_id]
            assert sum(status[push.client_id].values()) == 20

            reset = await admin.reset_offset_by_time("cg-live-push", topic, 0)
            assert reset.live and reset.offline == {}
            assert dict(reset) == {MessageQueue(topic, "broker-a", q): 0 for q in range(2)}
            await wait_for(
                lambda: all(seen[b] >= 2 for b in bodies),
                timeout_s=30,
                what="the push consumer replaying all 20",
            )
            assert sum(seen.values()) == 40, "a replay of exactly what was reset"
            await wait_for(
                lambda: _lag_is(admin, "cg-live-push", topic, 0), timeout_s=30, what="the replay committed"
            )

            reset = await admin.reset_offset_by_time("cg-live-lite", topic, 0)
            assert reset.live
            # The lite consumer stored the reset at once: its next auto-commit does not undo it.
            await wait_for(
                lambda: _lag_is(admin, "cg-live-lite", topic, 20), timeout_s=10, what="the lite reset stored"
            )
            again = await _poll(lite, 20)
            assert sorted(m.body for m in again) == sorted(bodies)

            # Not forced: a queue already before the target keeps its offset (Broker2Client#resetOffset).
            await lite.commit()
            kept = await admin.reset_offset_by_time("cg-live-lite", topic, -1, force=False)
            assert set(kept.values()) == {10}, kept

        # Nobody online: the offsets are written directly, and the result says so.
        committed = await _committed(admin, "cg-live-push", topic)
        assert committed == {0: 10, 1: 10}
        offline = await admin.reset_offset_by_time("cg-live-push", topic, 0)
        assert not offline.live and "not online" in offline.offline["broker-a"].lower()
        assert await _committed(admin, "cg-live-push", topic) == {0: 0, 1: 0}

        # A group that never consumed the topic is refused with the broker's reason.
        with pytest.raises(MQBrokerError, match="not exist"):
            await admin.reset_offset_by_time("cg-never-here", topic, 0)

        loop = asyncio.get_running_loop()
        code = await loop.run_in_executor(
            None,
            admin_main,
            ["--namesrv-addr", ns, "reset-offset-by-time", "-g", "cg-live-push", "-t", topic, "-s", "now"],
        )
        assert code == 0
        code = await loop.run_in_executor(
            None,
            admin_main,
            ["--namesrv-addr", ns, "reset-offset-by-time", "-g", "cg-never-here", "-t", topic, "-s", "now"],
        )
        assert code == 1


async def _lag_is(admin: Admin, group: str, topic: str, lag: int) -> bool:
    return await _lag(admin, group, topic) == lag


async def test_cli_says_when_it_fell_back_to_offline_offsets(cluster, h, capfd) -> None:
    ns, topic = cluster.namesrv_addr, "TopicOfflineReset"
    async with Admin(namesrv_addr=ns) as admin, Producer("pg-offline-reset", namesrv_addr=ns) as producer:
        await admin.create_topic(topic, read_queues=1, write_queues=1)
        await h.send_all(producer, topic, [b"a", b"b", b"c"])
        async with LitePullConsumer(
            "cg-offline", namesrv_addr=ns, consume_from_where=FIRST, auto_commit=False
        ) as lite:
            lite.subscribe(topic, "*")
            assert len(await _poll(lite, 3)) == 3
            await lite.commit()
    loop = asyncio.get_running_loop()
    code = await loop.run_in_executor(
        None,
        admin_main,
        ["reset-offset-by-time", "--namesrv-addr", ns, "-g", "cg-offline", "-t", topic, "-s", "0"],
    )
    err = capfd.readouterr().err
    assert code == 0
    assert "wrote the offsets of group cg-offline directly" in err and "not online" in err.lower()
