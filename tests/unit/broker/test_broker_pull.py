import asyncio
from typing import Any

from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.long_polling import PullRequestHoldService
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.common.constants import PullSysFlag
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.store.message import BrokerMessage

SUB = PullSysFlag.FLAG_SUBSCRIPTION
SUSPEND = PullSysFlag.FLAG_SUSPEND
COMMIT = PullSysFlag.FLAG_COMMIT_OFFSET


def pull_request(
    offset: int = 0, sys_flag: int = SUB, sub: str | None = "*", queue_id: int = 0, **kw: Any
) -> RemotingCommand:
    h = PullMessageRequestHeader(
        consumer_group="cg",
        topic="T",
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sys_flag,
        commit_offset=kw.pop("commit_offset", 0),
        suspend_timeout_millis=15_000,
        sub_version=kw.pop("sub_version", 0),
        subscription=sub,
        **kw,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields())


async def put(store: FakeStore, body: bytes, tag: str | None = None) -> None:
    props = {"TAGS": tag} if tag else {}
    await store.put_message(
        BrokerMessage("T", 0, body, properties=props, tags_code=java_hash_code(tag) if tag else 0)
    )


def setup(groups: Any = None, **cfg: Any) -> tuple[PullMessageProcessor, FakeStore, FakeConnection]:
    store = FakeStore()
    ctx = make_context(store, groups, **cfg)
    ctx.topic_config_manager.update_topic_config(TopicConfig("T", 2, 2, 6))
    proc = PullMessageProcessor(ctx)
    hold = PullRequestHoldService(store.get_max_offset_in_queue, proc.replay, ctx.clock)
    ctx.pull_hold_service = hold
    store.add_arrival_listener(hold.on_message_arrival)
    return proc, store, FakeConnection()


def fields(resp: RemotingCommand) -> dict[str, int]:
    ext = resp.ext_fields or {}
    return {k: int(ext[k]) for k in ("suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset")}


async def test_found_filters_by_tag_and_answers_all_headers() -> None:
    proc, store, conn = setup()
    await put(store, b"a", "TagA")
    await put(store, b"b", "TagB")
    await put(store, b"c", "TagA")
    resp = await proc.process_request(conn, pull_request(sub="TagA"))
    assert resp is not None and resp.code == ResponseCode.SUCCESS and resp.remark == "FOUND"
    assert resp.body == b"<a:0><c:2>"
    assert fields(resp) == {"suggestWhichBrokerId": 0, "nextBeginOffset": 3, "minOffset": 0, "maxOffset": 3}
    # the answer's map is the response header's encoding: the same text, keys in the same order
    expected = PullMessageResponseHeader(0, 3, 0, 3).to_ext_fields()
    assert list((resp.ext_fields or {}).items()) == list(expected.items())


async def test_status_table_and_next_offsets() -> None:
    proc, store, conn = setup()
    cases = [(0, ResponseCode.PULL_NOT_FOUND, 0), (5, ResponseCode.PULL_OFFSET_MOVED, 0)]  # empty queue
    for offset, code, nxt in cases:
        resp = await proc.process_request(conn, pull_request(offset))
        assert resp is not None and resp.code == code and fields(resp)["nextBeginOffset"] == nxt
    for i in range(3):
        await put(store, b"m%d" % i, "TagB")
    store.min_offsets[("T", 0)] = 1
    expected = [
        (3, ResponseCode.PULL_NOT_FOUND, 3, "OFFSET_OVERFLOW_ONE"),
        (9, ResponseCode.PULL_OFFSET_MOVED, 3, "OFFSET_OVERFLOW_BADLY"),
        (0, ResponseCode.PULL_OFFSET_MOVED, 1, "OFFSET_TOO_SMALL"),
    ]
    for offset, code, nxt, remark in expected:
        resp = await proc.process_request(conn, pull_request(offset))
        assert resp is not None and (resp.code, fields(resp)["nextBeginOffset"], resp.remark) == (
            code,
            nxt,
            remark,
        )
        assert set(fields(resp)) == {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"}
    resp = await proc.process_request(conn, pull_request(1, sub="TagA"))
    assert (
        resp is not None
        and resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        and fields(resp)["nextBeginOffset"] == 3
    )
    await asyncio.sleep(0)  # the OffsetMovedEvent records are written in the background
    events = store.queues[("OFFSET_MOVED_EVENT", 0)]
    assert len(events) == 3 and events[0].properties["TAGS"] == "cg"


async def test_long_poll_is_held_and_answered_on_arrival() -> None:
    proc, store, conn = setup()
    req = pull_request(0, SUB | SUSPEND, sub="TagA")
    assert await proc.process_request(conn, req) is None
    await put(store, b"other", "TagB")  # filtered out: still held
    for _ in range(3):
        await asyncio.sleep(0)
    assert conn.sent == []
    await put(store, b"mine", "TagA")
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(conn.sent) == 1
    resp = conn.sent[0]
    assert resp.opaque == req.opaque and resp.code == ResponseCode.SUCCESS and resp.body == b"<mine:1>"


async def test_held_pull_times_out_with_pull_not_found() -> None:
    proc, _store, conn = setup()
    req = pull_request(0, SUB | SUSPEND)
    assert await proc.process_request(conn, req) is None
    proc.ctx.clock.advance(15_000)  # type: ignore[attr-defined]  # make_context's ManualClock
    proc.ctx.pull_hold_service.check_hold_requests()
    for _ in range(3):
        await asyncio.sleep(0)
    assert [r.code for r in conn.sent] == [ResponseCode.PULL_NOT_FOUND]


async def test_commit_offset_flag_commits_once() -> None:
    proc, store, conn = setup()
    await put(store, b"a")
    await proc.process_request(conn, pull_request(1, SUB | COMMIT, commit_offset=1))
    offsets = proc.ctx.consumer_offset_manager
    assert offsets.query_offset("cg", "T", 0) == 1
    proc.replay(conn, pull_request(1, SUB | COMMIT, commit_offset=0))
    assert offsets.query_offset("cg", "T", 0) == 1


async def test_subscription_from_heartbeat() -> None:
    proc, store, conn = setup()
    resp = await proc.process_request(conn, pull_request(0, 0))
    assert resp is not None and resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    # Java's words and FAQ line (PullMessageProcessor), the group named
    assert (
        resp.remark
        == "the consumer's group info not exist: cg\nSee http://rocketmq.apache.org/docs/faq/ for further details."
    )
    cm = proc.ctx.consumer_manager
    info = ClientChannelInfo(conn, "c1", "JAVA", 409, 0)
    sub = SubscriptionData(topic="T", sub_string="TagA", code_set={java_hash_code("TagA")}, sub_version=10)
    cm.register_consumer(
        "cg",
        info,
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        [sub],
    )
    await put(store, b"x", "TagB")
    resp = await proc.process_request(conn, pull_request(0, 0, sub_version=10))
    assert resp is not None and resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    resp = await proc.process_request(conn, pull_request(0, 0, sub_version=11))
    assert resp is not None and resp.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


async def test_refusals() -> None:
    proc, _store, conn = setup()
    cases = [
        (pull_request(queue_id=2), ResponseCode.SYSTEM_ERROR, "queueId[2] is illegal"),
        (pull_request(sub="a > 1", expression_type="SQL92"), ResponseCode.SYSTEM_ERROR, "by SQL92"),
    ]
    for req, code, remark in cases:
        resp = await proc.process_request(conn, req)
        assert resp is not None and resp.code == code and remark in (resp.remark or ""), resp
    ext = pull_request().ext_fields or {}
    resp = await proc.process_request(conn, RemotingCommand.request(11, {**ext, "topic": "Nope"}))
    assert resp is not None and resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert (
        resp.remark
        == "topic[Nope] not exist, apply first please! \nSee http://rocketmq.apache.org/docs/faq/ for further details."
    )
    proc.ctx.topic_config_manager.update_topic_config(TopicConfig("T", 2, 2, 2))
    resp = await proc.process_request(conn, pull_request())
    assert resp is not None and resp.code == ResponseCode.NO_PERMISSION
    proc2, _, _ = setup(autoCreateSubscriptionGroup=False)
    resp = await proc2.process_request(conn, pull_request())
    assert resp is not None and resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
