from pathlib import Path

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
    assert BrokerConfig.model_validate({"registerNameServerPeriod": period}).register_period_ms == clamped


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


def test_load_splits_a_file_and_cli_between_broker_and_store(tmp_path: Path) -> None:
    from rocketq.broker.config import load_broker_configs

    toml = tmp_path / "broker.toml"
    toml.write_text(
        '[broker]\nbrokerName = "broker-b"\nlistenPort = 0\n[store]\nstorePathRootDir = "/tmp/s"\nmaxMessageSize = 100\n'
    )
    broker, store = load_broker_configs(
        toml, {"listen-port": "1234", "store-path-root-dir": "/tmp/t"}, environ={}
    )
    assert broker.broker_name == "broker-b" and broker.listen_port == 1234
    assert store.store_path_root_dir == "/tmp/t" and store.max_message_size_bytes == 100
    conf = tmp_path / "broker-a.conf"
    conf.write_text("# comment\nbrokerName=broker-a\nflushDiskType=SYNC_FLUSH\nnamesrvAddr=127.0.0.1:9876\n")
    broker, store = load_broker_configs(conf, {}, environ={"NAMESRV_ADDR": "1.1.1.1:1"})
    assert broker.namesrv_addr == "127.0.0.1:9876" and store.flush_disk_type.name == "SYNC_FLUSH"
    broker, _ = load_broker_configs(None, {}, environ={"NAMESRV_ADDR": "1.1.1.1:1"})
    assert broker.namesrv_addr_list == ["1.1.1.1:1"]


def test_load_names_unknown_keys_and_bad_values(tmp_path: Path) -> None:
    from rocketq.broker.config import load_broker_configs

    conf = tmp_path / "b.conf"
    conf.write_text("brokerName=b\nflushDiskTyp=SYNC_FLUSH\n")
    with pytest.raises(ConfigError, match="flushDiskTyp"):
        load_broker_configs(conf, {}, environ={})
    with pytest.raises(ConfigError, match="fileReservedTime"):
        load_broker_configs(None, {"fileReservedTime": "soon"}, environ={})
    with pytest.raises(ConfigError, match="nope"):
        load_broker_configs(None, {"nope": "1"}, environ={})
