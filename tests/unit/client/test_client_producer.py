"""Producer send logic on a fake client instance: retries, broker avoidance, budgets, prepared messages."""

from __future__ import annotations

import asyncio

import pytest
from client_routes import two_brokers
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.errors import (
    BrokerMessageIllegalError,
    ClientStateError,
    MessageIllegalError,
    NoRouteError,
    SendFailedError,
)
from rocketq.client.model import SendResult, SendStatus
from rocketq.client.producer.producer import Producer
from rocketq.client.route import to_publish_info
from rocketq.common.clock import ManualClock
from rocketq.common.message import Message, MessageQueue
from rocketq.remoting.errors import RemotingConnectError, SystemBusyError, TopicNotExistError
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeaderV2


class FakeAPI:
    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.calls: list[tuple[str, int, str]] = []
        self.fail: dict[str, Exception] = {}
        self.latency_ms = 1

    def start_send(self, addr, ext, body, timeout_ms):
        return None  # as a transport without start_sync: the producer awaits send_message

    async def send_message(
        self, addr, broker_name, header, body, msg_id, *, timeout_ms, oneway=False, queue=None
    ):
        header = SendMessageRequestHeaderV2.from_ext_fields(header).to_v1()  # the V2 header's extFields
        self.calls.append((broker_name, header.queue_id, header.properties or ""))
        self.clock.advance(self.latency_ms)
        self.last_header, self.last_body = header, body
        if broker_name in self.fail:
            raise self.fail[broker_name]
        if oneway:
            return None
        return SendResult(
            SendStatus.SEND_OK,
            msg_id,
            "OFFSETID",
            MessageQueue(header.topic, broker_name, header.queue_id),
            1,
        )


class FakeInstance:
    def __init__(self, clock: ManualClock, routes: dict[str, object]) -> None:
        self.api = FakeAPI(clock)
        self.routes = routes
        self.producers: dict[str, Producer] = {}
        self.client_id = "127.0.0.1@1#x"
        self.route_calls: list[tuple[str, str | None]] = []

    def register_producer(self, p: Producer) -> None:
        self.producers[p.group] = p

    async def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)

    async def start(self) -> None:
        pass

    async def send_heartbeat_to_all_brokers(self) -> None:
        pass

    async def update_topic_route(self, topic, *, default_topic=None, default_queue_nums=4) -> bool:
        self.route_calls.append((topic, default_topic))
        route = self.routes.get(default_topic or topic)
        if route is not None:
            for p in self.producers.values():
                p.update_publish_info(topic, to_publish_info(topic, route))  # type: ignore[arg-type]
        return route is not None

    def find_broker_addr_in_publish(self, name: str) -> str:
        return f"{name}:10911"


async def make(routes=None, **settings) -> tuple[Producer, FakeInstance, ManualClock]:
    clock = ManualClock()
    inst = FakeInstance(clock, {"T": two_brokers()} if routes is None else routes)
    p = Producer("pg", namesrv_addr="127.0.0.1:9876", clock=clock, instance=inst, **settings)  # type: ignore[arg-type]
    await p.start()
    return p, inst, clock


async def test_send_sets_uniq_key_and_round_robins() -> None:
    p, inst, _ = await make()
    msg = Message("T", b"hello", tags="A")
    r = await p.send(msg)
    assert r.msg_id == msg.uniq_key and len(r.msg_id) == 32
    for _ in range(7):
        await p.send(Message("T", b"x"))
    assert {(b, q) for b, q, _ in inst.api.calls} == {
        (b, q) for b in ("broker-a", "broker-b") for q in range(4)
    }
    assert "UNIQ_KEY\u0001" in inst.api.calls[0][2] and "TAGS\u0001A" in inst.api.calls[0][2]


async def test_retry_avoids_the_broker_that_failed() -> None:
    p, inst, _ = await make()
    inst.api.fail["broker-a"] = RemotingConnectError("refused")
    for _ in range(10):
        r = await p.send(Message("T", b"x"))
        assert r.queue.broker_name == "broker-b"
    attempts = [b for b, _, _ in inst.api.calls]
    for i, broker in enumerate(attempts[:-1]):
        if broker == "broker-a":
            assert attempts[i + 1] == "broker-b", "the retry goes to the other broker"


async def test_system_busy_is_retried_elsewhere_but_illegal_is_not() -> None:
    p, inst, _ = await make()
    inst.api.fail["broker-a"] = SystemBusyError(2, "busy")
    for _ in range(6):
        assert (await p.send(Message("T", b"x"))).queue.broker_name == "broker-b"
    inst.api.fail = {
        "broker-a": BrokerMessageIllegalError(13, "no"),
        "broker-b": BrokerMessageIllegalError(13, "no"),
    }
    inst.api.calls.clear()
    with pytest.raises(MessageIllegalError):
        await p.send(Message("T", b"x"))
    assert len(inst.api.calls) == 1


async def test_all_attempts_fail_with_a_clear_error() -> None:
    p, inst, _ = await make(retry_times_when_send_failed=2)
    inst.api.fail = {"broker-a": RemotingConnectError("down"), "broker-b": RemotingConnectError("down")}
    with pytest.raises(SendFailedError, match="3 attempt") as info:
        await p.send(Message("T", b"x"))
    assert isinstance(info.value.last_error, RemotingConnectError)


async def test_retries_stop_at_the_timeout_budget() -> None:
    p, inst, _ = await make(send_msg_timeout_ms=100, retry_times_when_send_failed=5)
    inst.api.fail = {"broker-a": RemotingConnectError("down"), "broker-b": RemotingConnectError("down")}
    inst.api.latency_ms = 60
    with pytest.raises(SendFailedError):
        await p.send(Message("T", b"x"))
    assert len(inst.api.calls) == 2


async def test_topic_not_exist_refreshes_and_retries() -> None:
    p, inst, _ = await make()
    inst.api.fail["broker-a"] = TopicNotExistError(17, "gone")
    r = await p.send(Message("T", b"x"))
    assert r.queue.broker_name == "broker-b"


async def test_new_topic_goes_through_tbw102_and_missing_route_is_no_route() -> None:
    p, inst, _ = await make(routes={"TBW102": two_brokers()})
    r = await p.send(Message("Fresh", b"x"))
    assert r.queue.topic == "Fresh"
    assert inst.route_calls[:2] == [("Fresh", None), ("Fresh", "TBW102")]
    assert inst.api.last_header.default_topic == "TBW102"
    p2, inst2, _ = await make(routes={})
    with pytest.raises(NoRouteError, match="Nowhere"):
        await p2.send(Message("Nowhere", b"x"))
    assert inst2.route_calls == [("Nowhere", None), ("Nowhere", "TBW102")], "a fresh look-up before giving up"


async def test_compression_and_retry_topic_headers() -> None:
    p, inst, _ = await make(routes={"T": two_brokers(), "%RETRY%g": two_brokers()})
    await p.send(Message("T", b"a" * 10_000))
    assert inst.api.last_header.sys_flag & 0x1 and len(inst.api.last_body) < 10_000
    retry = Message(
        "%RETRY%g", b"x", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16", "RETRY_TOPIC": "T"}
    )
    await p.send(retry)
    h = inst.api.last_header
    assert (h.reconsume_times, h.max_reconsume_times) == (3, 16)
    assert "RECONSUME_TIME" not in (h.properties or "") and "RETRY_TOPIC" in (h.properties or "")


async def test_selector_queue_batch_oneway_and_lifecycle() -> None:
    p, inst, _ = await make()
    r = await p.send(Message("T", b"x"), selector=lambda mqs, msg, arg: mqs[arg], arg=5)
    assert r.queue == MessageQueue("T", "broker-b", 1)
    r = await p.send(Message("T", b"x"), queue=MessageQueue("T", "broker-a", 2))
    assert r.queue == MessageQueue("T", "broker-a", 2)
    msgs = [Message("T", f"b{i}".encode()) for i in range(3)]
    batch = await p.send_batch(msgs)
    assert batch.msg_id == ",".join(m.uniq_key or "" for m in msgs) and inst.api.last_header.batch
    assert await p.send_oneway(Message("T", b"o")) is None
    fut = p.send_async(Message("T", b"a"))
    assert (await fut).status is SendStatus.SEND_OK
    await p.shutdown()
    with pytest.raises(ClientStateError):
        p.send_async(Message("T", b"a"))
    with pytest.raises(ClientStateError, match="after shutdown"):
        await p.start()


async def test_transaction_commit_rollback_unknown_and_check() -> None:
    from rocketq.client.model import LocalTransactionState
    from rocketq.client.producer.transaction import TransactionProducer
    from rocketq.common.message import MessageExt

    clock = ManualClock()
    inst = FakeInstance(clock, {"T": two_brokers()})
    ends: list = []

    async def end_transaction_oneway(addr, header, remark=None):
        ends.append((addr, header, remark))

    inst.api.end_transaction_oneway = end_transaction_oneway  # type: ignore[attr-defined]

    async def send_message(addr, broker_name, header, body, msg_id, *, timeout_ms, oneway=False, queue=None):
        header = SendMessageRequestHeaderV2.from_ext_fields(header).to_v1()
        inst.api.last_header = header
        return SendResult(
            SendStatus.SEND_OK,
            msg_id,
            "7F00000100002A9F0000000000000064",
            MessageQueue(header.topic, broker_name, 0),
            5,
        )

    inst.api.send_message = send_message  # type: ignore[method-assign]
    checked: list = []
    tp = TransactionProducer(
        "tg",
        namesrv_addr="127.0.0.1:9876",
        clock=clock,
        instance=inst,  # type: ignore[arg-type]
        checker=lambda m: checked.append(m) or LocalTransactionState.COMMIT,
    )
    await tp.start()
    r = await tp.send_in_transaction(
        Message("T", b"x"), executor=lambda m, arg: arg, arg=LocalTransactionState.COMMIT
    )
    assert r.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
    assert inst.api.last_header.sys_flag & 0x4 and "TRAN_MSG\u0001true" in inst.api.last_header.properties
    _, header, _ = ends[-1]
    assert (header.commit_or_rollback, header.commit_log_offset, header.tran_state_table_offset) == (
        8,
        100,
        5,
    )

    async def failing(msg, arg):
        raise RuntimeError("db down")

    r = await tp.send_in_transaction(Message("T", b"y"), executor=failing)
    assert r.local_transaction_state is LocalTransactionState.UNKNOW
    assert ends[-1][1].commit_or_rollback == 0 and "db down" in ends[-1][2]
    r = await tp.send_in_transaction(Message("T", b"z"), executor=lambda m, a: LocalTransactionState.ROLLBACK)
    assert ends[-1][1].commit_or_rollback == 12
    with pytest.raises(MessageIllegalError, match="delayed"):
        await tp.send_in_transaction(Message("T", b"d", delay_level=2), executor=lambda m, a: None)
    half = MessageExt("T", b"x", properties={"UNIQ_KEY": "U1", "PGROUP": "tg"})
    tp.check_transaction_state(
        "127.0.0.1:10911", half, {"tranStateTableOffset": "9", "commitLogOffset": "77", "transactionId": "U1"}
    )
    for _ in range(100):
        if len(ends) == 4:
            break
        await asyncio.sleep(0.01)  # the checker runs on a worker thread
    addr, header, _ = ends[-1]
    assert checked and (addr, header.from_transaction_check, header.commit_log_offset, header.msg_id) == (
        "127.0.0.1:10911",
        True,
        77,
        "U1",
    )


async def test_send_in_transaction_refuses_a_batch_before_any_request() -> None:
    from rocketq.client.producer.transaction import TransactionProducer

    inst = FakeInstance(ManualClock(), {"T": two_brokers()})
    sent: list = []

    async def send_message(*args, **kwargs):
        sent.append(args)
        raise AssertionError("no request may be sent for a batch")

    inst.api.send_message = send_message  # type: ignore[method-assign]
    tp = TransactionProducer("tg", namesrv_addr="127.0.0.1:9876", instance=inst)  # type: ignore[arg-type]
    await tp.start()
    batch = [Message("T", b"a"), Message("T", b"b")]
    with pytest.raises(MessageIllegalError, match="batch") as info:
        await tp.send_in_transaction(batch, executor=lambda m, a: None)  # type: ignore[arg-type]
    assert info.value.code == 13 and not sent
    assert all("TRAN_MSG" not in m.properties for m in batch)
    await tp.shutdown()


def test_the_send_header_is_built_exactly_as_the_v2_header_encodes() -> None:
    """The producer writes the V2 extFields directly: same keys, values and order as the typed header."""
    from rocketq.client.producer.producer import _Prepared

    clock = ManualClock()
    p = Producer("pg", namesrv_addr="127.0.0.1:9876", clock=clock, unit_mode=True, default_topic_queue_nums=8)
    mq = MessageQueue("T", "broker-b", 5)
    cases = [
        _Prepared(b"x", 0, "UNIQ_KEY\u0001abc\u0002", "abc", 0),
        _Prepared(b"x", 3, "", "abc", 7, batch=True),
    ]
    retry = _Prepared(b"x", 0, "a\u00011", "abc", 0)
    retry.reconsume_times, retry.max_reconsume_times = 2, 16
    cases.append(retry)
    for prepared in cases:
        typed = SendMessageRequestHeaderV2(
            a="pg", b="T", c="TBW102", d=8, e=5, f=prepared.sys_flag, g=clock.now_ms(), h=prepared.flag,
            i=prepared.properties, j=prepared.reconsume_times or 0, k=True, l=prepared.max_reconsume_times,
            m=prepared.batch, n="broker-b",
        )  # fmt: skip
        assert list(p._header("T", mq, prepared).items()) == list(typed.to_ext_fields().items())


@given(
    st.text(max_size=12), st.text(min_size=1, max_size=12), st.text(max_size=40),
    st.text(min_size=1, max_size=12), st.integers(-1, 2**31 - 1), st.one_of(st.none(), st.integers(0, 99)),
    st.booleans(),
)  # fmt: skip
def test_the_send_header_carries_exactly_the_json_the_codec_would_write(
    group: str, topic: str, props: str, broker: str, queue_id: int, max_reconsume: int | None, batch: bool
) -> None:
    from rocketq.client.producer.producer import _Prepared
    from rocketq.remoting.protocol.codes import SerializeType
    from rocketq.remoting.protocol.command import RemotingCommand
    from rocketq.remoting.protocol.frame import encode_frame
    from rocketq.remoting.protocol.header_json import EncodedExt

    p = Producer(group or "pg", namesrv_addr="127.0.0.1:9876", clock=ManualClock())
    prepared = _Prepared(b"x", 3, props, "abc", 0, batch=batch)
    prepared.max_reconsume_times = max_reconsume
    ext = p._header(topic, MessageQueue(topic, broker, queue_id), prepared)
    # The JSON text is formatted only when a JSON encode reads it: a msgpack encode does not.
    encode_frame(RemotingCommand(310, ext_fields=ext, serialize_type=SerializeType.MSGPACK))
    assert ext._text is None  # type: ignore[attr-defined]
    assert isinstance(ext, EncodedExt) and ext.json is not None
    plain = dict(ext)
    fast = RemotingCommand(310, opaque=7, ext_fields=ext, body=b"x")
    slow = RemotingCommand(310, opaque=7, ext_fields=plain, body=b"x")
    assert encode_frame(fast) == encode_frame(slow)
    # The msgpack codec trusts the same header (its per-entry check is skipped): the same bytes too.
    fast.serialize_type = slow.serialize_type = SerializeType.MSGPACK
    assert encode_frame(fast) == encode_frame(slow)
    ext["x"] = "1"  # a change (an RPC hook adding a field) drops the text: the codec encodes the map
    assert ext.json is None and b'"x":"1"' in encode_frame(RemotingCommand(310, ext_fields=ext))


def test_a_send_response_is_read_with_the_typed_headers_rules() -> None:
    from rocketq.client.api import MQClientAPI
    from rocketq.remoting.protocol.command import RemotingCommand
    from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
    from rocketq.remoting.protocol.headers.send import SendMessageResponseHeader

    typed = SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000000064", queue_id=2, queue_offset=41, msg_region="R1"
    )
    mq = MessageQueue("T", "broker-a", 2)
    resp = RemotingCommand(0, ext_fields=typed.to_ext_fields(), flag=1)
    r = MQClientAPI.process_send_response("broker-a", "T", "U1", resp, mq)
    assert (r.status, r.msg_id, r.offset_msg_id, r.queue_offset, r.region_id, r.trace_on) == (
        SendStatus.SEND_OK, "U1", typed.msg_id, 41, "R1", True)  # fmt: skip
    assert r.queue is mq and MQClientAPI.process_send_response(
        "broker-b", "T", "U1", resp, mq
    ).queue == MessageQueue("T", "broker-b", 2)
    with pytest.raises(MissingHeaderFieldError, match="msgId"):
        MQClientAPI.process_send_response(
            "broker-a", "T", "U1", RemotingCommand(0, ext_fields={"queueId": "1", "queueOffset": "1"}, flag=1)
        )
    with pytest.raises(BadHeaderValueError, match="queueOffset"):
        MQClientAPI.process_send_response(
            "broker-a",
            "T",
            "U1",
            RemotingCommand(0, ext_fields={**typed.to_ext_fields(), "queueOffset": "x"}, flag=1),
        )
