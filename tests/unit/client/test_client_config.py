import pytest

from rocketq.client.config import ClientConfig, ConsumeFromWhere, ConsumerConfig, MessageModel, ProducerConfig
from rocketq.common.errors import ConfigError


def test_defaults_match_java() -> None:
    p = ProducerConfig()
    assert (
        p.send_msg_timeout_ms,
        p.retry_times_when_send_failed,
        p.compress_msg_body_over_howmuch_bytes,
    ) == (3000, 2, 4096)
    assert p.max_message_size_bytes == 4 * 1024 * 1024
    assert (p.poll_name_server_interval_ms, p.heartbeat_broker_interval_ms) == (30_000, 30_000)
    c = ConsumerConfig()
    assert (
        c.persist_consumer_offset_interval_ms,
        c.pull_threshold_for_queue,
        c.consume_concurrently_max_span,
    ) == (5000, 1000, 2000)
    assert (c.broker_suspend_max_time_ms, c.consumer_timeout_ms_when_suspend, c.rebalance_interval_ms) == (
        15_000,
        30_000,
        20_000,
    )
    assert c.message_model is MessageModel.CLUSTERING
    assert c.effective_max_reconsume_times(orderly=False) == 16
    assert c.effective_max_reconsume_times(orderly=True) == 0x7FFFFFFF


def test_java_names_and_enum_names_accepted() -> None:
    c = ConsumerConfig.build(
        {
            "consumerGroup": "g",
            "messageModel": "broadcasting",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
        }
    )
    assert c.consumer_group == "g"
    assert c.message_model is MessageModel.BROADCASTING
    assert c.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    p = ProducerConfig.model_validate({"sendMsgTimeout": 100, "namesrv_addr": " a:1 ; b:2 ;"})
    assert p.send_msg_timeout_ms == 100
    assert p.namesrv_list() == ["a:1", "b:2"]


def test_bad_values_rejected() -> None:
    with pytest.raises(ConfigError, match="sendMsgTimeout"):
        ProducerConfig.build({"sendMsgTimeout": 0})
    with pytest.raises(ConfigError, match="nope"):
        ClientConfig.build({"nope": 1})


def test_namesrv_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:9999")
    assert ClientConfig().namesrv_addr == "127.0.0.1:9999"
