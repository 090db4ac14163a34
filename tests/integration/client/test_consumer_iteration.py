"""`async for msg in consumer` on LitePullConsumer and SimpleConsumer, against real daemons."""

from __future__ import annotations

import asyncio

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    MessageExt,
    Producer,
    SimpleConsumer,
)


async def _collect(
    consumer: LitePullConsumer | SimpleConsumer, n: int, ack: bool = False
) -> list[MessageExt]:
    got: list[MessageExt] = []

    async def loop() -> None:
        async for msg in consumer:
            got.append(msg)
            if ack:
                assert isinstance(consumer, SimpleConsumer)
                await consumer.ack(msg)
            if len(got) >= n:
                break

    await asyncio.wait_for(loop(), 60)
    return got


async def test_async_for_over_lite_pull_and_simple_consumers(cluster, h) -> None:
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic("TopicIter", read_queues=2, write_queues=2)
    bodies = [f"it{i}".encode() for i in range(8)]
    async with Producer("pg-iter", namesrv_addr=ns) as producer:
        await h.send_all(producer, "TopicIter", bodies)
    lite = LitePullConsumer(
        "cg-iter-lite",
        namesrv_addr=ns,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
    )
    lite.subscribe("TopicIter", "*")
    async with lite:
        got = await _collect(lite, len(bodies))
        assert sorted(m.body for m in got) == sorted(bodies)
        await lite.commit()
    simple = SimpleConsumer("cg-iter-simple", namesrv_addr=ns, await_duration_ms=1000)
    simple.subscribe("TopicIter", "*")
    async with simple, Producer("pg-iter-2", namesrv_addr=ns) as producer:
        more = [f"pop{i}".encode() for i in range(4)]
        await h.send_all(producer, "TopicIter", more)
        # A new POP group may start at the queues' first offsets: the earlier messages may come too.
        got = await _collect(simple, len(more), ack=True)
        while not set(more) <= {m.body for m in got}:
            got += await _collect(simple, 1, ack=True)
        assert {m.body for m in got} <= set(more) | set(bodies)
    # once shut down, iteration ends by itself
    assert [m async for m in lite] == []
