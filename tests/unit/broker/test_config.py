import pytest
from pydantic import Field

from rocketq.broker.config import BrokerConfig, split_config
from rocketq.common.config import RocketConfig
from rocketq.common.errors import ConfigError


class FakeStoreConfig(RocketConfig):
    store_path_root_dir: str = Field("/tmp/x", alias="storePathRootDir")
    max_message_size: int = Field(4 * 1024 * 1024, alias="maxMessageSize")


def test_defaults_match_apache() -> None:
    cfg = BrokerConfig()
    assert cfg.broker_ip1 == "127.0.0.1"
    assert cfg.auto_create_topic_enable and cfg.auto_create_subscription_group
    assert cfg.default_topic_queue_nums == 8
    assert cfg.broker_permission == 6
    assert cfg.register_period_ms == 30_000
    assert cfg.broker_addr() == "127.0.0.1:10911"
    assert cfg.broker_addr(4242) == "127.0.0.1:4242"


@pytest.mark.parametrize(("period", "clamped"), [(1_000, 10_000), (45_000, 45_000), (600_000, 60_000)])
def test_register_period_is_clamped(period: int, clamped: int) -> None:
    assert BrokerConfig(registerNameServerPeriod=period).register_period_ms == clamped


def test_rocketmq_names_and_python_names() -> None:
    cfg = BrokerConfig.build({"brokerName": "b1", "listen-port": "0", "namesrvAddr": "a:1; b:2"})
    assert cfg.broker_name == "b1" and cfg.listen_port == 0
    assert cfg.namesrv_addr_list == ["a:1", "b:2"]


def test_split_routes_keys_and_names_an_unknown_one() -> None:
    broker, store = split_config(
        {"brokerName": "b", "storePathRootDir": "/d", "max-message-size": "10"}, FakeStoreConfig, "f.conf"
    )
    assert broker == {"brokerName": "b"}
    assert store == {"storePathRootDir": "/d", "max-message-size": "10"}
    with pytest.raises(ConfigError, match="brokerNmae"):
        split_config({"brokerNmae": "b"}, FakeStoreConfig, "f.conf")


def test_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="listenPort"):
        BrokerConfig.build({"listenPort": "abc"}, "f.toml")
    with pytest.raises(ConfigError, match="brokerName"):
        BrokerConfig.build({"brokerName": "has space"}, "f.toml")
