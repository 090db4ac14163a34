"""The bad-input catalogue (docs/fault-tests.md) against live daemons started through `cluster_factory`.

Two kinds of bad input:
- a frame that cannot be a request (oversize, header longer than the frame, bad JSON, invalid UTF-8,
  unknown serialize type, ...): there is nothing to answer, so the daemon closes *that* connection,
  logs it once and goes on;
- a request that can be read but is wrong (unknown code, missing header field, message over 4 MiB,
  illegal topic, system topic, pull far out of range, delay level 99): it gets its RocketMQ response
  code and a remark naming the problem, on a connection that stays open.
After each case a well-formed client on another connection, opened before the case and never
reopened, still sends and pulls (BrokerProbe.roundtrip). One NameServer and one broker serve the
whole module (every case must leave them serving anyway); each test gets its own observer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio

from rocketq.client import Message, MessageExt, Producer, SimpleConsumer
from rocketq.common import constants as C
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import decode_record
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.frame import encode_frame
from rocketq.testing.broker_probe import SMALL_STORE_OVERRIDES, BrokerProbe, pull_request, send_request
from rocketq.testing.cluster import DaemonProcess, LocalCluster
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import HOSTILE_FRAMES, ConnectionClosedError, RawConnection

FOUR_MIB = 4 * 1024 * 1024

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Target:
    cluster: LocalCluster
    observer: BrokerProbe  # the well-formed client on its own connection

    @property
    def broker(self) -> DaemonProcess:
        return self.cluster.brokers[0]

    @property
    def namesrv(self) -> DaemonProcess:
        return self.cluster.namesrvs[0]

    async def still_serving(self) -> None:
        """The observer's connection is the one opened at the start, and it still sends and pulls."""
        assert not self.observer.conn.is_closed, "the observer's connection was closed"
        await self.observer.roundtrip()
        assert self.broker.running and self.namesrv.running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> AsyncIterator[LocalCluster]:
    failed_before = request.session.testsfailed
    async with LocalCluster(
        tmp_path_factory.mktemp("bad-input"), broker_overrides=SMALL_STORE_OVERRIDES
    ) as cluster:
        yield cluster
    if request.session.testsfailed > failed_before:
        print(f"\n######## daemon logs ({cluster.tmp_dir})\n{cluster.log_tails()}")


@pytest_asyncio.fixture(loop_scope="module")
async def target(shared_cluster: LocalCluster) -> AsyncIterator[Target]:
    assert shared_cluster.brokers[0].running and shared_cluster.namesrvs[0].running, "a daemon died"
    observer = await BrokerProbe.open(shared_cluster.brokers[0].addr, topic="Observer")
    await observer.roundtrip()
    yield Target(shared_cluster, observer)
    await observer.close()


async def logged_once(daemon: DaemonProcess, text: str) -> None:
    """`text` appears in the daemon's log exactly once (waiting for it to be written)."""
    await wait_for(lambda: text in daemon.log_text(), what=f"{text!r} in the {daemon.role} log")
    assert daemon.log_text().count(text) == 1, f"{text!r} was logged more than once"


# -- frames that are not requests: only their own connection is closed ---------------------------
@pytest.mark.parametrize("role", ["broker", "namesrv"])
async def test_hostile_frames_close_only_their_connection(
    target: Target, role: str, subtests: pytest.Subtests
) -> None:
    daemon = target.broker if role == "broker" else target.namesrv
    bystander = await RawConnection.open(daemon.addr)  # another connection to the same daemon
    for name, data in HOSTILE_FRAMES.items():
        with subtests.test(msg=name):
            conn = await RawConnection.open(daemon.addr)
            try:
                await conn.send_bytes(data)
            except ConnectionClosedError:
                pass  # closed while we were still writing: what we want
            assert await conn.wait_closed(5.0) in ("eof", "reset")
            assert conn.frames_received == 0, "a frame that is not a request got an answer"
            await logged_once(daemon, f"bad frame from 127.0.0.1:{conn.local_port},")
            await conn.close()
            await target.still_serving()
            answer = await bystander.call(RequestCode.GET_BROKER_CLUSTER_INFO if role == "namesrv" else 9999)
            assert answer.is_response
    await bystander.close()


async def test_a_truncated_frame_then_close_disturbs_nothing(target: Target) -> None:
    frame = encode_frame(send_request("Truncated", b"x" * 1000))
    conn = await RawConnection.open(target.broker.addr)
    await conn.send_bytes(frame[: len(frame) // 2])
    await target.still_serving()  # the broker waits for the rest without blocking anyone
    assert not conn.is_closed
    conn.abort()
    await conn.close()
    await target.still_serving()
    # the half message was never stored
    assert await target.observer.max_offset("Truncated", 0) == 0


async def test_a_half_frame_left_hanging_keeps_only_its_connection_waiting(target: Target) -> None:
    frame = encode_frame(send_request("Hanging", b"y" * 100))
    conn = await RawConnection.open(target.broker.addr)
    await conn.send_bytes(frame[:7])  # not even the whole header tag
    for _ in range(3):
        await target.still_serving()
    await conn.send_bytes(frame[7:])  # the rest arrives late: the request is served after all
    await wait_for(lambda: conn.frames_received == 1, what="the late request's answer")
    assert await target.observer.max_offset("Hanging", 0) == 1
    await conn.close()


# -- requests that are wrong: answered with a code and a remark ----------------------------------
@pytest.mark.parametrize("role", ["broker", "namesrv"])
async def test_an_unknown_request_code(target: Target, role: str) -> None:
    daemon = target.broker if role == "broker" else target.namesrv
    async with await RawConnection.open(daemon.addr) as conn:
        response = await conn.call(4242)
        assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert response.remark == " request type 4242 not supported"  # Java's remark, leading space and all
        again = await conn.call(4243)  # the connection stays open for the next one
        assert again.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        await logged_once(daemon, f"127.0.0.1:{conn.local_port}: request type 4242 not supported")
    await target.still_serving()


@pytest.mark.parametrize(
    ("code", "ext", "field"),
    [
        (RequestCode.SEND_MESSAGE, {"producerGroup": "pg", "defaultTopic": "TBW102"}, "topic"),
        (
            RequestCode.SEND_MESSAGE_V2,
            {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0"},
            "g",
        ),  # V2 letters: g = bornTimestamp
        (RequestCode.PULL_MESSAGE, {"topic": "T", "queueId": "0", "queueOffset": "0"}, "consumerGroup"),
        (RequestCode.GET_MAX_OFFSET, {"topic": "T"}, "queueId"),
        (RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}, "defaultTopic"),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "queueId": "0"}, "topic"),
    ],
    ids=["send-v1", "send-v2", "pull", "max-offset", "create-topic", "query-offset"],
)
async def test_a_missing_header_field_is_named(
    target: Target, code: int, ext: dict[str, str], field: str
) -> None:
    async with await RawConnection.open(target.broker.addr) as conn:
        response = await conn.call(code, ext, b"body")
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert f"'{field}'" in (response.remark or ""), response.remark
        assert (await conn.call(RequestCode.GET_BROKER_RUNTIME_INFO)).code == ResponseCode.SUCCESS
    await target.still_serving()


async def test_a_missing_header_field_at_the_namesrv(target: Target) -> None:
    async with await RawConnection.open(target.namesrv.addr) as conn:
        response = await conn.call(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        assert response.code == ResponseCode.SYSTEM_ERROR and "'topic'" in (response.remark or "")
        response = await conn.call(RequestCode.REGISTER_BROKER, {"brokerAddr": "127.0.0.1:1"})
        assert response.code == ResponseCode.SYSTEM_ERROR and "'brokerName'" in (response.remark or "")
        assert (await conn.call(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
    await target.still_serving()


async def test_a_message_over_4_mib_is_illegal(target: Target) -> None:
    async with await RawConnection.open(target.broker.addr) as conn:
        response = await conn.request(send_request("Big", b"b" * (FOUR_MIB + 1)))
        assert response.code == ResponseCode.MESSAGE_ILLEGAL
        assert "maxMessageSize" in (response.remark or "") and str(FOUR_MIB + 1) in (response.remark or "")
        exactly = await conn.request(send_request("Big", b"b" * FOUR_MIB))  # the limit itself is fine
        assert exactly.code == ResponseCode.SUCCESS, exactly.remark
        await logged_once(target.broker, f"from 127.0.0.1:{conn.local_port} refused with 13")
    await target.still_serving()
    assert await target.observer.max_offset("Big", 0) == 1


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        ("bad topic!", "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        ("t" * 128, "is longer than topic max length"),
        ("  ", "The specified topic is blank."),
    ],
    ids=["illegal-characters", "too-long", "blank"],
)
async def test_an_illegal_topic_name(target: Target, topic: str, remark: str) -> None:
    async with await RawConnection.open(target.broker.addr) as conn:
        response = await conn.request(send_request(topic, b"x"))
        assert response.code == ResponseCode.SYSTEM_ERROR  # TopicValidator.validateTopic's code
        assert remark in (response.remark or ""), response.remark
    await target.still_serving()


@pytest.mark.parametrize("topic", sorted(C.NOT_ALLOWED_SEND_TOPICS))
async def test_sending_to_a_system_topic_is_forbidden(target: Target, topic: str) -> None:
    async with await RawConnection.open(target.broker.addr) as conn:
        response = await conn.request(send_request(topic, b"x"))
        assert response.code == ResponseCode.NO_PERMISSION
        assert response.remark == f"Sending message to topic[{topic}] is forbidden."
    await target.still_serving()


async def test_a_pull_far_out_of_range(target: Target) -> None:
    for i in range(3):
        await target.observer.send("Range", b"r%d" % i)
    async with await RawConnection.open(target.broker.addr) as conn:
        beyond = await conn.request(pull_request("Range", 0, 10**12))
        assert beyond.code == ResponseCode.PULL_OFFSET_MOVED and beyond.remark == "OFFSET_OVERFLOW_BADLY"
        ext = beyond.ext_fields or {}
        assert (ext["nextBeginOffset"], ext["minOffset"], ext["maxOffset"], ext["suggestWhichBrokerId"]) == (
            "3",
            "0",
            "3",
            "0",
        )
        below = await conn.request(pull_request("Range", 0, -7))
        assert below.code == ResponseCode.PULL_OFFSET_MOVED and below.remark == "OFFSET_TOO_SMALL"
        assert (below.ext_fields or {})["nextBeginOffset"] == "0"
        # following nextBeginOffset works
        moved_to = int(ext["nextBeginOffset"])
        caught_up = await conn.request(pull_request("Range", 0, moved_to))
        assert caught_up.code == ResponseCode.PULL_NOT_FOUND
    await target.still_serving()


async def test_delay_level_99_is_clamped_to_the_highest_level(target: Target) -> None:
    sent = await target.observer.send("Later", b"ninety-nine", {C.PROPERTY_DELAY_TIME_LEVEL: "99"})
    _, _, phys_offset = parse_offset_msg_id(sent.msg_id)
    async with await RawConnection.open(target.broker.addr) as conn:
        view = await conn.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys_offset})
        assert view.code == ResponseCode.SUCCESS, view.remark
    stored, _ = decode_record(view.body)
    # Java CommitLog.putMessage: a level above the maximum becomes the maximum (18 -> queue 17)
    assert (stored.topic, stored.queue_id) == (C.RMQ_SYS_SCHEDULE_TOPIC, 17)
    assert stored.properties[C.PROPERTY_DELAY_TIME_LEVEL] == "18"
    assert stored.properties[C.PROPERTY_REAL_TOPIC] == "Later"
    assert stored.properties[C.PROPERTY_REAL_QUEUE_ID] == "0"
    assert stored.body == b"ninety-nine"
    assert await target.observer.max_offset(C.RMQ_SYS_SCHEDULE_TOPIC, 17) == 1
    assert await target.observer.max_offset("Later", 0) == 0  # not delivered before its time
    await target.still_serving()


async def test_errors_in_a_pipeline_do_not_disturb_the_requests_around_them(target: Target) -> None:
    """Good and bad requests interleaved on one connection: each gets its own answer, in any order."""
    async with await RawConnection.open(target.broker.addr) as conn:
        requests = []
        for i in range(30):
            if i % 3 == 0:
                requests.append((send_request("Mixed", b"good-%d" % i), ResponseCode.SUCCESS))
            elif i % 3 == 1:
                requests.append((send_request("bad topic", b"x"), ResponseCode.SYSTEM_ERROR))
            else:
                requests.append((pull_request("Mixed", 0, 10**9), ResponseCode.PULL_OFFSET_MOVED))
        futures = [conn.start_request(cmd) for cmd, _ in requests]
        answers = await asyncio.wait_for(asyncio.gather(*futures), 15)
        assert [a.code for a in answers] == [code for _, code in requests]
    await target.still_serving()
    assert await target.observer.max_offset("Mixed", 0) == 10


async def test_a_bad_sql_expression(target: Target) -> None:
    """A pull carrying a SQL92 subscription that does not parse, and CHECK_CLIENT_CONFIG with it."""
    bad = "a > 3 AND (b = 'x'"
    async with await RawConnection.open(target.broker.addr) as conn:
        pull = pull_request("Observer", 0, 0)
        assert pull.ext_fields is not None
        pull.ext_fields.update({"subscription": bad, "expressionType": "SQL92"})
        answer = await conn.request(pull)
        assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED, (answer.code, answer.remark)
        assert answer.remark and "SQL92" in answer.remark and "column 19" in answer.remark, answer.remark
        body = (
            b'{"clientId":"bad-sql@1","group":"probe_cg","subscriptionData":{"topic":"Observer",'
            b'"expressionType":"SQL92","subString":"' + bad.encode() + b'","classFilterMode":false}}'
        )
        # Java's checkClientConfig asks enablePropertyFilter before it compiles (off on this broker).
        check = await conn.call(RequestCode.CHECK_CLIENT_CONFIG, None, body)
        assert check.code == ResponseCode.SYSTEM_ERROR, (check.code, check.remark)
        assert check.remark == "The broker does not support consumer to filter message by SQL92"
        assert not conn.is_closed
    await target.still_serving()


async def test_a_stale_receipt_handle(target: Target) -> None:
    """ACK_MESSAGE twice with one receipt handle, and with a handle that is not one."""
    await target.observer.create_topic("PopStale", queues=1)
    namesrv = target.namesrv.addr
    async with Producer("pg-pop-stale", namesrv_addr=namesrv) as producer:
        await producer.send(Message("PopStale", b"once"))
    async with SimpleConsumer(
        "cg-pop-stale", namesrv_addr=namesrv, subscriptions={"PopStale": "*"}
    ) as consumer:
        received: list[MessageExt] = []

        async def got_it() -> bool:
            received.extend(await consumer.receive(1, invisible_duration_ms=60_000))
            return bool(received)

        await wait_for(got_it, timeout_s=20, what="the message popped")
        msg = received[0]
        fields = {
            "consumerGroup": "cg-pop-stale",
            "topic": "PopStale",
            "queueId": msg.queue_id,
            "extraInfo": " ".join(msg.properties[C.PROPERTY_POP_CK].split(" ")[:7]),
            "offset": msg.queue_offset,
        }
        async with await RawConnection.open(target.broker.addr) as conn:
            first = await conn.call(RequestCode.ACK_MESSAGE, fields)
            assert first.code == ResponseCode.SUCCESS, first.remark
            again = await conn.call(RequestCode.ACK_MESSAGE, fields)
            assert again.code == ResponseCode.NO_MESSAGE, (again.code, again.remark)
            assert again.remark and "stale receipt handle" in again.remark, again.remark
            garbage = await conn.call(RequestCode.ACK_MESSAGE, {**fields, "extraInfo": "not a handle"})
            assert garbage.code == ResponseCode.MESSAGE_ILLEGAL, (garbage.code, garbage.remark)
            assert garbage.remark, "the answer says what is wrong with the handle"
            assert not conn.is_closed
    await target.still_serving()
