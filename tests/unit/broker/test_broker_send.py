from typing import Any

import pytest
from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.processors.send import SendMessageProcessor, _waits_store_msg_ok
from rocketq.common.message import Message, encode_properties
from rocketq.common.record.codec import encode_batch
from rocketq.common.record.properties import encode_properties_bytes
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
from rocketq.store.config import MessageStoreConfig
from rocketq.store.status import PutMessageStatus

PROPS = {"UNIQ_KEY": "ABC", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2"}


def header(
    topic: str = "T", queue_id: int = 1, props: dict[str, str] | None = None, **kw: Any
) -> SendMessageRequestHeader:
    fields: dict[str, Any] = dict(
        producer_group="pg",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=7,
        properties=encode_properties(PROPS if props is None else props),
    )
    fields.update(kw)
    return SendMessageRequestHeader(**fields)


def request(
    h: SendMessageRequestHeader, body: bytes = b"hello", v2: bool = False, code: int | None = None
) -> RemotingCommand:
    if v2:
        return RemotingCommand.request(code or RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext_fields(), body)
    return RemotingCommand.request(code or RequestCode.SEND_MESSAGE, h.to_ext_fields(), body)


def setup(**cfg: Any) -> tuple[SendMessageProcessor, FakeStore, FakeConnection]:
    store = FakeStore()
    return SendMessageProcessor(make_context(store, **cfg)), store, FakeConnection("10.0.0.5:4321")


@pytest.mark.parametrize("v2", [False, True])
async def test_send_creates_topic_and_stores_what_apache_stores(v2: bool) -> None:
    proc, store, conn = setup()
    resp = await proc.process_request(conn, request(header(), v2=v2))
    assert resp is not None and resp.code == ResponseCode.SUCCESS, resp
    ext = resp.ext_fields or {}
    assert ext["queueId"] == "1" and ext["queueOffset"] == "0"
    assert ext["msgId"] == "7F00000100002A9F0000000000000000"
    assert ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] == "true"
    msg = store.queues[("T", 1)][0]
    assert msg.properties == {"UNIQ_KEY": "ABC", "TAGS": "TagA", "KEYS": "k1 k2", "CLUSTER": "DefaultCluster"}
    assert msg.born_host == ("10.0.0.5", 4321) and msg.store_host == ("127.0.0.1", 10911)
    assert msg.tags_code == java_hash_code("TagA") and msg.flag == 7 and msg.body == b"hello"
    assert proc.ctx.topic_config_manager.select_topic_config("T").write_queue_nums == 4


async def test_negative_queue_id_picks_a_writable_queue() -> None:
    proc, _store, conn = setup()
    for _ in range(20):
        resp = await proc.process_request(conn, request(header(queue_id=-1)))
        assert resp is not None and resp.code == 0
        assert 0 <= int((resp.ext_fields or {})["queueId"]) < 4


@pytest.mark.parametrize(
    ("cfg", "h", "body", "code", "remark"),
    [
        # Java's remarks (AbstractSendMessageProcessor.msgCheck, SendMessageProcessor.handlePutMessageResult)
        (
            {"autoCreateTopicEnable": False},
            header(),
            b"x",
            ResponseCode.TOPIC_NOT_EXIST,
            "topic[T] not exist, apply first please!\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
        ),
        (
            {},
            header(),
            b"x" * 1025,
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. msg body length limit 1024B",
        ),
        ({"brokerPermission": 4}, header(), b"x", ResponseCode.NO_PERMISSION, "sending message is forbidden"),
        ({}, header(topic="SCHEDULE_TOPIC_XXXX"), b"x", ResponseCode.NO_PERMISSION, "is forbidden"),
        ({}, header(topic="bad topic"), b"x", ResponseCode.SYSTEM_ERROR, "illegal characters"),
        (
            {},
            header(queue_id=99),
            b"x",
            ResponseCode.SYSTEM_ERROR,
            "request queueId[99] is illegal, TopicConfig [topicName=T, "
            "readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] Producer: ",
        ),
    ],
)
async def test_refusals_carry_code_remark_and_send_extfields(
    cfg: dict[str, Any], h: SendMessageRequestHeader, body: bytes, code: int, remark: str
) -> None:
    proc, store, conn = setup(**cfg)
    resp = await proc.process_request(conn, request(h, body))
    assert resp is not None and resp.code == code and remark in (resp.remark or "")
    assert (resp.ext_fields or {})["MSG_REGION"] == "DefaultRegion"
    assert store.queues == {}


async def test_read_only_topic_is_refused() -> None:
    from rocketq.remoting.protocol.bodies.register import TopicConfig

    proc, _store, conn = setup()
    proc.ctx.topic_config_manager.update_topic_config(TopicConfig("RO", 4, 4, 4))
    resp = await proc.process_request(conn, request(header(topic="RO")))
    assert resp is not None and resp.code == ResponseCode.NO_PERMISSION


async def test_missing_header_field_is_named() -> None:
    proc, _store, conn = setup()
    ext = header().to_ext_fields()
    del ext["topic"]
    resp = await proc.process_request(conn, RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"x"))
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "topic" in (resp.remark or "")


async def test_delayed_message_goes_to_the_schedule_topic() -> None:
    proc, store, conn = setup()
    resp = await proc.process_request(conn, request(header(props={"DELAY": "3", "UNIQ_KEY": "A"})))
    assert resp is not None and resp.code == 0
    assert (resp.ext_fields or {})["queueId"] == "1"
    msg = store.queues[("SCHEDULE_TOPIC_XXXX", 2)][0]
    assert msg.properties["REAL_TOPIC"] == "T" and msg.properties["REAL_QID"] == "1"
    assert msg.tags_code == proc.ctx.clock.now_ms() + 10_000


async def test_retry_topic_past_max_reconsume_goes_to_dlq_after_the_clients_delay() -> None:
    proc, store, conn = setup()
    h = header(topic="%RETRY%cg", queue_id=0, props={"DELAY": "5"}, reconsume_times=3, max_reconsume_times=3)
    resp = await proc.process_request(conn, request(h))
    assert resp is not None and resp.code == 0
    # The client's DELAY is kept (Java): parked in SCHEDULE_TOPIC_XXXX, bound for the DLQ.
    [msg] = store.queues[("SCHEDULE_TOPIC_XXXX", 4)]
    assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == (
        "%DLQ%cg",
        "0",
    ) and msg.reconsume_times == 3
    h = header(topic="%RETRY%cg", queue_id=0, props={}, reconsume_times=3, max_reconsume_times=3)
    resp = await proc.process_request(conn, request(h))
    assert resp is not None and resp.code == 0
    [msg] = store.queues[("%DLQ%cg", 0)]  # without a DELAY, straight there
    assert "DELAY" not in msg.properties and msg.reconsume_times == 3
    h = header(topic="%RETRY%cg", queue_id=0, props={}, reconsume_times=1, max_reconsume_times=3)
    resp = await proc.process_request(conn, request(h))
    assert resp is not None and ("%RETRY%cg", 0) in store.queues


async def test_half_message_is_parked_in_the_half_topic() -> None:
    proc, store, conn = setup()
    h = header(props={"TRAN_MSG": "true", "PGROUP": "pg"}, sys_flag=4)
    resp = await proc.process_request(conn, request(h))
    assert resp is not None and resp.code == 0
    msg = store.queues[("RMQ_SYS_TRANS_HALF_TOPIC", 0)][0]
    assert msg.sys_flag == 0 and msg.properties["REAL_TOPIC"] == "T"
    proc2, _, _ = setup(rejectTransactionMessage=True)
    resp = await proc2.process_request(conn, request(h))
    assert resp is not None and resp.code == ResponseCode.NO_PERMISSION


async def test_batch_stores_each_entry_with_the_batch_properties() -> None:
    proc, store, conn = setup()
    body = encode_batch([Message("T", b"a", tags="A"), Message("T", b"b", keys="k")])
    h = header(props={"WAIT": "true"}, batch=True)
    resp = await proc.process_request(conn, request(h, body, v2=True, code=RequestCode.SEND_BATCH_MESSAGE))
    assert resp is not None and resp.code == 0, resp
    ext = resp.ext_fields or {}
    assert len(ext["msgId"].split(",")) == 2 and ext["queueOffset"] == "0"
    a, b = store.queues[("T", 1)]
    assert a.properties == {"TAGS": "A", "WAIT": "true", "CLUSTER": "DefaultCluster"}
    assert b.body == b"b" and b.properties["KEYS"] == "k"


async def test_batch_refusals() -> None:
    proc, _store, conn = setup()
    body = encode_batch([Message("T", b"a")])
    for h, b in [
        (header(props={"DELAY": "2"}, batch=True), body),
        (header(props={}, batch=True), b"\x00\x01"),
    ]:
        resp = await proc.process_request(conn, request(h, b, v2=True, code=RequestCode.SEND_BATCH_MESSAGE))
        assert resp is not None and resp.code == ResponseCode.MESSAGE_ILLEGAL, resp


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (PutMessageStatus.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_DISK_TIMEOUT),
        (PutMessageStatus.SERVICE_NOT_AVAILABLE, ResponseCode.SERVICE_NOT_AVAILABLE),
        (PutMessageStatus.MESSAGE_ILLEGAL, ResponseCode.MESSAGE_ILLEGAL),
        (PutMessageStatus.OS_PAGECACHE_BUSY, ResponseCode.SYSTEM_ERROR),
    ],
)
async def test_store_status_mapping(
    status: PutMessageStatus, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    proc, store, conn = setup()
    store.next_status = status
    resp = await proc.process_request(conn, request(header()))
    assert resp is not None and resp.code == code
    # A refusal of the store is logged by the store (one in REFUSAL_LOG_EVERY), not again per put here.
    logged = "refused with" in caplog.text
    assert logged is (status is not PutMessageStatus.SERVICE_NOT_AVAILABLE and not status.is_ok)
    if status.is_ok:  # stored, the flush lagged: the full header still comes back
        assert (resp.ext_fields or {})["queueOffset"] == "0" and resp.remark is None
    else:
        assert resp.remark


async def test_oneway_gets_no_answer() -> None:
    proc, store, conn = setup()
    req = request(header())
    req.mark_oneway()
    assert await proc.process_request(conn, req) is None
    assert ("T", 1) in store.queues


async def test_a_delay_above_the_maximum_is_capped() -> None:
    proc, store, conn = setup()
    resp = await proc.process_request(conn, request(header(props={"DELAY": "40"})))
    assert resp is not None and resp.code == 0
    msg = store.queues[("SCHEDULE_TOPIC_XXXX", 17)][0]
    assert msg.properties["DELAY"] == "18" and msg.tags_code == proc.ctx.clock.now_ms() + 7_200_000


def _comparable(resp: RemotingCommand | None) -> tuple[Any, ...]:
    assert resp is not None
    return resp.code, resp.remark, dict(resp.ext_fields or {}), resp.opaque


async def test_sends_of_one_read_taken_together_answer_as_each_alone() -> None:
    """process_requests (the transport's runs) stores and answers each request as process_request does:
    a refused one (forbidden topic, missing header field, body too large) is answered alone."""

    def requests() -> list[RemotingCommand]:
        missing = request(header(topic="M"), v2=True)
        del missing.ext_fields["b"]  # type: ignore[union-attr]
        return [
            request(header(topic="T", queue_id=0)),
            request(header(topic="SCHEDULE_TOPIC_XXXX"), v2=True),
            request(header(topic="T", queue_id=1), v2=True),
            missing,
            request(header(topic="U", queue_id=2), body=b"x" * 2000, v2=True),
            request(header(topic="U", queue_id=2, props={"DELAY": "2", "WAIT": "true"}), v2=True),
            request(header(topic="T", queue_id=0), v2=True),
        ]

    together, alone = requests(), requests()
    for a, b in zip(together, alone, strict=True):
        b.opaque = a.opaque
    proc, store, conn = setup()
    answers = await proc.process_requests(conn, together)
    proc2, store2, conn2 = setup()
    expected = [await proc2.process_request(conn2, r) for r in alone]
    assert [_comparable(a) for a in answers] == [_comparable(e) for e in expected]
    assert [a.code for a in answers if a is not None] == [0, 16, 0, 1, 13, 0, 0]
    assert {k: [m.body for m in v] for k, v in store.queues.items()} == {
        k: [m.body for m in v] for k, v in store2.queues.items()
    }


async def test_a_run_with_a_batch_request_goes_one_at_a_time(caplog: pytest.LogCaptureFixture) -> None:
    proc, store, conn = setup()
    batch = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2,
        header(topic="T", queue_id=0, batch=True).to_v2().to_ext_fields(),
        encode_batch([Message("T", b"a"), Message("T", b"b")]),
    )
    refused = request(header(topic="SCHEDULE_TOPIC_XXXX"), v2=True)
    answers = await proc.process_requests(conn, [request(header(queue_id=0), v2=True), refused, batch])
    assert [a.code for a in answers if a is not None] == [0, ResponseCode.NO_PERMISSION, 0]
    assert [m.body for m in store.queues[("T", 0)]] == [b"hello", b"a", b"b"]
    assert caplog.text.count("SCHEDULE_TOPIC_XXXX") == 1  # the refusal logged once


def sync_flush_setup() -> tuple[SendMessageProcessor, FakeStore, FakeConnection]:
    store = FakeStore()
    ctx = make_context(store)
    ctx.store_config = MessageStoreConfig.model_validate(
        {"maxMessageSize": 1024, "flushDiskType": "SYNC_FLUSH"}
    )
    return SendMessageProcessor(ctx), store, FakeConnection("10.0.0.5:4321")


@pytest.mark.parametrize(
    ("text", "waits"),
    [
        ("", True),
        ("UNIQ_KEY\x01A\x02", True),
        ("WAIT\x01true\x02", True),
        ("WAIT\x01TRUE", True),
        ("WAIT\x01false\x02", False),
        ("KEYS\x01k\x02WAIT\x01no\x02", False),  # Boolean.parseBoolean: anything but "true" is false
        ("XWAIT\x01false\x02", True),  # another property's name ending in WAIT
        ("WAIT\x01false\x02WAIT\x01true\x02", True),  # the last one counts
        ("WAIT\x01\x02", True),  # an empty value is no property
    ],
)
def test_wait_store_msg_ok_read_as_java_reads_it(text: str, waits: bool) -> None:
    assert _waits_store_msg_ok(text) is waits


@pytest.mark.parametrize("v2", [False, True])
async def test_wait_false_reaches_a_sync_flush_store_and_is_not_stored(v2: bool) -> None:
    # Java's SendMessageProcessor takes WAIT out of the stored properties and puts it back into the
    # message, whose isWaitStoreMsgOK the store reads: a producer's WAIT=false is no flush wait.
    proc, store, conn = sync_flush_setup()
    resp = await proc.process_request(conn, request(header(props={**PROPS, "WAIT": "false"}), v2=v2))
    assert resp is not None and resp.code == ResponseCode.SUCCESS, resp
    msg = store.queues[("T", 1)][0]
    assert msg.properties["WAIT"] == "false"
    stored = {**PROPS, "CLUSTER": "DefaultCluster"}
    del stored["WAIT"]
    assert msg.properties_bytes == encode_properties_bytes(stored)
    # WAIT=true (every Java producer sends it) is neither stored nor kept
    resp = await proc.process_request(conn, request(header(), v2=v2))
    assert resp is not None and resp.code == ResponseCode.SUCCESS, resp
    assert "WAIT" not in store.queues[("T", 1)][1].properties
