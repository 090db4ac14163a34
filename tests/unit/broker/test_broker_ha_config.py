"""Roles and replication settings as the broker's loader makes them (Java BrokerStartup's rules)."""

from pathlib import Path

import pytest

from rocketq.broker.config import load_broker_configs
from rocketq.common.errors import ConfigError
from rocketq.store.config import BrokerRole

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_the_example_slave_is_broker_a_s_slave_on_other_ports() -> None:
    master, master_store = load_broker_configs(DEPLOY / "broker-a.toml", {}, environ={})
    slave, slave_store = load_broker_configs(DEPLOY / "broker-a-s.toml", {}, environ={})
    assert (slave.broker_name, slave.broker_id, slave_store.broker_role) == ("broker-a", 1, BrokerRole.SLAVE)
    assert master_store.broker_role is BrokerRole.ASYNC_MASTER and master.broker_id == 0
    assert {slave.listen_port, slave_store.ha_listen_port}.isdisjoint(
        {master.listen_port, master_store.ha_listen_port}
    )
    assert slave_store.store_path_root_dir != master_store.store_path_root_dir
    assert slave_store.mapped_file_size_commit_log_bytes == master_store.mapped_file_size_commit_log_bytes


def test_ha_listen_port_is_listen_port_plus_one_unless_set() -> None:
    assert load_broker_configs(None, {"listenPort": "20911"}, environ={})[1].ha_listen_port == 20912
    assert load_broker_configs(None, {"listenPort": "0"}, environ={})[1].ha_listen_port == 0
    assert (
        load_broker_configs(None, {"listenPort": "20911", "haListenPort": "0"}, environ={})[1].ha_listen_port
        == 0
    )
    _, store = load_broker_configs(None, {"listenPort": "20911", "haListenPort": "30000"}, environ={})
    assert store.ha_listen_port == 30000


def test_broker_id_and_role_agree() -> None:
    broker, store = load_broker_configs(None, {"brokerId": "2"}, environ={})
    assert (broker.broker_id, store.broker_role) == (2, BrokerRole.SLAVE)
    broker, store = load_broker_configs(None, {"brokerId": "2", "brokerRole": "SYNC_MASTER"}, environ={})
    assert (broker.broker_id, store.broker_role) == (0, BrokerRole.SYNC_MASTER)  # Java makes a master's id 0
    with pytest.raises(ConfigError, match="brokerId > 0"):
        load_broker_configs(None, {"brokerRole": "SLAVE"}, environ={})
