"""Helpers of the message-lifecycle integration tests: topics, recording listeners, raw broker calls."""

from __future__ import annotations

import time
from typing import Any

from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, MessageExt, PushConsumer
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingClient
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def create_topic(ns: str, topic: str, queues: int = 2) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=queues, write_queues=queues)

        async def routed() -> bool:
            try:
                return bool((await admin.topic_route(topic)).queue_datas)
            except Exception:
                return False

        await wait_for(routed, timeout_s=15, what=f"a route for {topic}")


class Recorder:
    """A push listener recording (arrival wall time in ms, message); answers with `decide(msg)`."""

    def __init__(self, decide: Any = None) -> None:
        self.seen: list[tuple[int, MessageExt]] = []
        self.decide = decide

    def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        now = time.time_ns() // 1_000_000
        result = ConsumeResult.SUCCESS
        for msg in msgs:
            self.seen.append((now, msg))
            if self.decide is not None:
                result = self.decide(msg)
        return result

    def bodies(self) -> list[bytes]:
        return [m.body for _, m in self.seen]

    def of(self, body: bytes) -> list[tuple[int, MessageExt]]:
        return [(t, m) for t, m in self.seen if m.body == body]


def push_consumer(
    ns: str, group: str, topic: str, listener: Any, *, orderly: bool = False, **kw: Any
) -> PushConsumer:
    consumer = PushConsumer(group, namesrv_addr=ns, consume_from_where=FIRST, **kw)
    consumer.subscribe(topic, "*")
    if orderly:
        consumer.register_orderly_listener(listener)
    else:
        consumer.register_listener(listener)
    return consumer


async def delay_offsets(broker_addr: str) -> dict[int, int]:
    """GET_ALL_DELAY_OFFSET (45) straight to a broker: its per-level schedule progress."""
    client = RemotingClient()
    try:
        resp = await client.invoke_sync(
            broker_addr, RemotingCommand.request(RequestCode.GET_ALL_DELAY_OFFSET), 5000
        )
    finally:
        await client.shutdown()
    assert resp.code == 0, resp.remark
    return {int(k): int(v) for k, v in fastjson.loads(resp.body)["offsetTable"].items()}


async def update_broker_config(broker_addr: str, **values: object) -> None:
    """UPDATE_BROKER_CONFIG (25) straight to a broker, e.g. brokerPermission=4 (read only)."""
    body = "".join(f"{k}={v}\n" for k, v in values.items()).encode()
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, body)
        resp = await client.invoke_sync(broker_addr, request, 5000)
    finally:
        await client.shutdown()
    assert resp.code == 0, resp.remark


async def dlq_messages(admin: Admin, group: str, key: str) -> list[MessageExt]:
    """The messages of %DLQ%<group> with KEYS `key`, found by admin query (the DLQ is not consumed).

    One Admin for a whole wait: starting and stopping one per poll races the client's unregistration
    with route updates of the shared client instance.
    """
    try:
        return await admin.query_message_by_key(f"%DLQ%{group}", key)
    except Exception:
        return []
