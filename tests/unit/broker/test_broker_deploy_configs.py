"""The example configs under deploy/ load without error and describe a two-broker cluster."""

from pathlib import Path

import pytest

from rocketq.broker.config import load_broker_configs
from rocketq.common.config import read_config_file
from rocketq.namesrv.config import NamesrvConfig

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_namesrv_config_loads() -> None:
    cfg = NamesrvConfig.build(read_config_file(DEPLOY / "namesrv.toml"), "namesrv.toml")
    assert cfg.listen_port == 9876


@pytest.mark.parametrize("name", ["broker-a.toml", "broker-b.toml", "broker-a.conf"])
def test_broker_configs_load(name: str) -> None:
    broker, store = load_broker_configs(DEPLOY / name, {}, environ={})
    assert broker.namesrv_addr_list == ["127.0.0.1:9876"]
    assert broker.broker_name == ("broker-b" if "-b" in name else "broker-a")
    assert store.max_message_size_bytes == 4 * 1024 * 1024


def test_the_two_brokers_do_not_collide() -> None:
    a, sa = load_broker_configs(DEPLOY / "broker-a.toml", {}, environ={})
    b, sb = load_broker_configs(DEPLOY / "broker-b.toml", {}, environ={})
    assert a.listen_port != b.listen_port and sa.ha_listen_port != sb.ha_listen_port
    assert sa.store_path_root_dir != sb.store_path_root_dir
    conf, _ = load_broker_configs(DEPLOY / "broker-a.conf", {}, environ={})
    assert conf == a
