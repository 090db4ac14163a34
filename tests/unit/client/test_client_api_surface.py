"""The public names of rocketq.client are exactly docs/api.md's, with their documented shapes."""

import inspect

import pytest

import rocketq.client as client
from rocketq.client import blocking, errors
from rocketq.client.admin_cli import parse_time, table
from rocketq.remoting import errors as remote

API_NAMES = {
    "Message",
    "MessageExt",
    "MessageQueue",
    "SendResult",
    "SendStatus",
    "Producer",
    "TransactionProducer",
    "LocalTransactionState",
    "PushConsumer",
    "LitePullConsumer",
    "SimpleConsumer",
    "ConsumeResult",
    "MessageModel",
    "ConsumeFromWhere",
    "MessageSelector",
    "Admin",
}


def test_all_is_exactly_the_api() -> None:
    assert set(client.__all__) == API_NAMES
    assert all(hasattr(client, name) for name in API_NAMES)


def test_blocking_twin_has_the_same_names() -> None:
    assert API_NAMES <= set(blocking.__all__)
    for name in (
        "Producer",
        "PushConsumer",
        "LitePullConsumer",
        "Admin",
        "TransactionProducer",
        "SimpleConsumer",
    ):
        assert getattr(blocking, name)._async_cls is getattr(client, name)


def test_documented_signatures() -> None:
    producer = inspect.signature(client.Producer)
    assert list(producer.parameters)[:2] == ["producer_group", "namesrv_addr"]
    p = client.Producer(
        "pg",
        namesrv_addr="127.0.0.1:9876",
        send_latency_fault_enable=False,
        retry_times_when_send_failed=2,
        send_msg_timeout_ms=3000,
    )
    assert p.config.send_msg_timeout_ms == 3000
    c = client.PushConsumer(
        "cg",
        namesrv_addr="127.0.0.1:9876",
        message_model=client.MessageModel.CLUSTERING,
        consume_from_where=client.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=16,
        consume_thread_max=20,
    )
    c.subscribe("T", "TagA || TagB")
    c.subscribe("U", client.MessageSelector.by_sql("a > 5 AND b = 'x'"))
    c.register_listener(lambda msgs: client.ConsumeResult.SUCCESS)
    c.register_orderly_listener(lambda msgs: client.ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT)
    for method in ("send", "send_batch", "send_oneway", "shutdown", "start"):
        assert inspect.iscoroutinefunction(getattr(client.Producer, method))
    assert not inspect.iscoroutinefunction(client.Producer.send_async)
    for method in ("poll", "commit", "seek"):
        assert inspect.iscoroutinefunction(getattr(client.LitePullConsumer, method))
    for method in ("receive", "ack", "change_invisible_duration"):
        assert inspect.iscoroutinefunction(getattr(client.SimpleConsumer, method))
    for method in (
        "create_topic",
        "topic_route",
        "cluster_info",
        "consumer_progress",
        "query_message_by_id",
        "query_message_by_key",
        "reset_offset_by_time",
    ):
        assert inspect.iscoroutinefunction(getattr(client.Admin, method))
    assert inspect.iscoroutinefunction(client.TransactionProducer.send_in_transaction)


def test_message_attributes() -> None:
    msg = client.Message(topic="T", body=b"...", tags="TagA", keys=["k1", "k2"], properties={"a": "1"})
    msg.delay_level = 3
    msg.deliver_time_ms = 1
    assert (msg.tags, msg.keys, msg.properties["a"], msg.delay_level) == ("TagA", ["k1", "k2"], "1", 3)
    ext = client.MessageExt("T", b"")
    for attr in (
        "msg_id",
        "offset_msg_id",
        "queue_id",
        "queue_offset",
        "commit_log_offset",
        "born_timestamp",
        "store_timestamp",
        "born_host",
        "store_host",
        "reconsume_times",
        "sys_flag",
        "body_crc",
    ):
        assert hasattr(ext, attr)


def test_errors_are_bridged() -> None:
    assert errors.MQBrokerError is remote.BrokerResponseError
    assert errors.RemotingTimeoutError is remote.RemotingTimeoutError
    assert errors.RemotingConnectError is remote.RemotingConnectError
    e = errors.broker_error(13, "too big")
    assert isinstance(e, errors.MessageIllegalError) and isinstance(e, errors.MQBrokerError) and e.code == 13
    assert isinstance(errors.broker_error(2, "busy"), remote.SystemBusyError)
    no_route = errors.NoRouteError("Orders")
    assert (
        no_route.topic == "Orders"
        and "Orders" in str(no_route)
        and isinstance(no_route, errors.MQClientError)
    )
    assert isinstance(errors.ClientStateError("x"), errors.MQClientError)


def test_enum_aliases() -> None:
    assert client.LocalTransactionState.COMMIT is client.LocalTransactionState.COMMIT_MESSAGE  # type: ignore[comparison-overlap]  # aliases
    assert client.LocalTransactionState.UNKNOWN is client.LocalTransactionState.UNKNOW
    assert client.ConsumeResult.CONSUME_SUCCESS is client.ConsumeResult.SUCCESS
    with pytest.raises(ValueError):
        client.MessageSelector.by_sql(" ")


def test_cli_helpers() -> None:
    assert parse_time("1700000000000") == 1700000000000
    assert parse_time("now") > 1700000000000
    assert parse_time("2024-01-02 03:04:05") > 0
    assert table([]) == "(none)"
    assert table([{"a": 1, "bb": "xyz"}]).splitlines() == ["a  bb", "1  xyz"]


def test_every_public_method_has_a_docstring() -> None:
    from rocketq.client.blocking_gen import CLASSES, INTERNAL

    missing = [
        f"{cls.__name__}.{name}"
        for cls, _base in CLASSES
        for name, attr in vars(cls).items()
        if not name.startswith("_")
        and inspect.isfunction(attr)
        and not attr.__doc__
        and not (name in INTERNAL and cls is not client.Admin)
    ]
    assert missing == []
