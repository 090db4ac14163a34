"""Our SimpleConsumer (POP) and Producer against Apache's 5.x NameServer and broker as well as ours.

RocketMQ 5's broker serves POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME over the remoting
protocol (no proxy): our SimpleConsumer sends exactly those, so the same scenarios run, parametrised,
against `rocketq namesrv` + `rocketq broker` and against Apache's daemons started from the 5.3.3 jars of
java5/pom.xml (apache_support.py, CLASSPATH_5_FILE). One cluster of each for the module; topics and groups
differ per scenario. Where the two brokers answer differently on purpose (docs/compat.md, "SimpleConsumer
against Apache's 5.x broker"), the test says which answer each gives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from apache_support import CLASSPATH_5_FILE, COMMIT_LOG_FILE_BYTES, ApacheCluster, running
from interop import create_topic, python_receive
from java_support import skip_or_fail_when_missing

from rocketq.client import Admin, Message, Producer, SimpleConsumer
from rocketq.remoting.errors import BrokerResponseError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.simple_consumer import receive_until
from rocketq.testing.waiting import wait_for

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
if (_skip := skip_or_fail_when_missing(CLASSPATH_5_FILE)) is not None:
    pytestmark.append(_skip)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["rocketq", "apache5"])
async def ns(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The NameServer address of a cluster of the kind `request.param` names."""
    work = tmp_path_factory.mktemp(f"simple-on-{request.param}")
    if request.param == "rocketq":
        async with LocalCluster(
            work, broker_overrides={"mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES}
        ) as ours:
            yield ours.namesrv_addr
        return
    async with running(
        ApacheCluster(work / "apache", work / "store", classpath_file=CLASSPATH_5_FILE)
    ) as apache:
        yield apache.namesrv_addr


def is_apache(request: pytest.FixtureRequest) -> bool:
    return bool(request.node.callspec.params["ns"] == "apache5")


async def send(ns: str, topic: str, messages: list[Message]) -> None:
    async with Producer(f"pg-{topic}", namesrv_addr=ns) as producer:
        for m in messages:
            result = await producer.send(m)
            assert result.send_status.name == "SEND_OK" and result.msg_id


@pytest.mark.timeout(120)
async def test_receive_ack_change_invisible_time_and_redelivery(
    ns: str, request: pytest.FixtureRequest
) -> None:
    topic = "SimpleBasics"
    await create_topic(ns, topic, queues=2)
    await send(
        ns,
        topic,
        [
            Message(topic, body, tags="T", keys=[body.decode()], properties={"k": "v é"})
            for body in (b"acked", b"extended", b"forgotten")
        ],
    )
    async with SimpleConsumer(
        "sg-basics", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
    ) as consumer:
        asked_at = time.monotonic()  # before the pops: a lower bound that load can only make longer
        got = {m.body: m for m in await receive_until(consumer, 3, invisible_ms=3_000, timeout_s=30)}
        assert set(got) == {b"acked", b"extended", b"forgotten"}
        for body, m in got.items():
            assert (m.topic, m.tags, m.keys, m.properties["k"], m.reconsume_times) == (
                topic,
                "T",
                [body.decode()],
                "v é",
                0,
            )
        await consumer.ack(got[b"acked"])
        await consumer.change_invisible_duration(got[b"extended"], 20_000)
        # Not acked: visible again once its 3 s are over, from the group's pop retry topic, one reconsume more.
        [back] = await receive_until(consumer, 1, invisible_ms=20_000, timeout_s=30)
        assert back.body == b"forgotten" and back.topic == topic and back.reconsume_times == 1
        assert back.keys == ["forgotten"] and back.properties["k"] == "v é"
        assert (
            time.monotonic() - asked_at >= 2.5
        )  # not before its invisible time ran out (broker clock's margin)
        await consumer.ack(back)
        await consumer.ack(got[b"extended"])  # its new receipt handle, from change_invisible_duration
        if is_apache(request):
            await consumer.ack(got[b"acked"])  # Java writes one more ack record and answers SUCCESS
        else:
            with pytest.raises(BrokerResponseError) as stale:  # ours says the handle is spent
                await consumer.ack(got[b"acked"])
            assert stale.value.code == ResponseCode.NO_MESSAGE
        assert await consumer.receive(16, 3_000) == []  # everything was acked: nothing comes back


@pytest.mark.timeout(120)
async def test_tag_filter(ns: str) -> None:
    topic = "SimpleTags"
    await create_topic(ns, topic, queues=2)
    await send(
        ns,
        topic,
        [
            Message(topic, f"{tag}-{i}".encode(), tags=tag)
            for i in range(3)
            for tag in ("TagA", "TagB", "TagC")
        ],
    )
    async with SimpleConsumer(
        "sg-tags", namesrv_addr=ns, subscriptions={topic: "TagA || TagC"}, await_duration_ms=1000
    ) as consumer:
        got = await receive_until(consumer, 6, invisible_ms=10_000, timeout_s=30)
        for m in got:
            await consumer.ack(m)
        assert sorted(m.body for m in got) == sorted(
            f"{t}-{i}".encode() for i in range(3) for t in ("TagA", "TagC")
        )
        assert await consumer.receive(16, 10_000) == []  # the TagB ones never come


@pytest.mark.timeout(120)
async def test_long_polling_receive_returns_when_a_message_arrives(ns: str) -> None:
    topic = "SimplePoll"
    await create_topic(ns, topic, queues=1)
    async with SimpleConsumer(
        "sg-poll", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=15_000
    ) as consumer:
        waiting = asyncio.ensure_future(consumer.receive(16, 5_000))
        await send(ns, topic, [Message(topic, b"wake")])
        [msg] = await asyncio.wait_for(waiting, 30)
        assert msg.body == b"wake"
        await consumer.ack(msg)


@pytest.mark.timeout(120)
async def test_never_acked_past_the_groups_maximum(ns: str, request: pytest.FixtureRequest) -> None:
    """Ours moves it to %DLQ%<group>; Apache's 5.x broker alone revives it again and again (its proxy's
    PopMessageResultFilter sends it to the DLQ, and no proxy is in between here)."""
    topic, group = "SimpleNeverAcked", "sg-never-acked"
    await create_topic(ns, topic, queues=1)
    async with Admin(namesrv_addr=ns) as admin:
        await admin.update_subscription_group(group, retry_max_times=1)
    await send(ns, topic, [Message(topic, b"never-acked")])
    deliveries: list[int] = []
    async with SimpleConsumer(
        group, namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000
    ) as consumer:

        async def delivered(times: int) -> bool:
            deliveries.extend(m.reconsume_times for m in await consumer.receive(16, 1_000))
            return times in deliveries

        await wait_for(lambda: delivered(1), timeout_s=30, interval_s=0, what="the first redelivery")
        if is_apache(request):
            await wait_for(
                lambda: delivered(2), timeout_s=30, interval_s=0, what="a redelivery past the maximum"
            )
            return
    [dead] = await python_receive(ns, "cg-never-acked-dlq", f"%DLQ%{group}", 1)
    assert dead.body == b"never-acked" and deliveries == [0, 1]
