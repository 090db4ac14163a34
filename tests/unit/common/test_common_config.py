from pathlib import Path

import pytest
from pydantic import Field

from rocketq.common.config import RocketConfig, parse_cli_overrides, read_config_file
from rocketq.common.errors import ConfigError


class SampleConfig(RocketConfig):
    listen_port: int = Field(9876, alias="listenPort")
    flush_interval_ms: int = Field(500, alias="flushIntervalCommitLog")
    broker_name: str = Field("broker-a", alias="brokerName")


def test_build_accepts_rocketmq_python_and_kebab_names() -> None:
    cfg = SampleConfig.build({"listenPort": "10000", "flush_interval_ms": 100, "broker-name": "b"})
    assert (cfg.listen_port, cfg.flush_interval_ms, cfg.broker_name) == (10000, 100, "b")


def test_unknown_key_names_the_key() -> None:
    with pytest.raises(ConfigError, match="'listenPorts'"):
        SampleConfig.build({"listenPorts": "1"}, source="broker.conf")


def test_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="listenPort"):
        SampleConfig.build({"listenPort": "abc"})


def test_properties_and_toml_files(tmp_path: Path) -> None:
    props = tmp_path / "broker.conf"
    props.write_text("# comment\nbrokerName = broker-b\nlistenPort=10911\n! also comment\n")
    assert read_config_file(props) == {"brokerName": "broker-b", "listenPort": "10911"}
    toml = tmp_path / "broker.toml"
    toml.write_text('brokerName = "x"\n[store]\nflushIntervalCommitLog = 200\n')
    assert read_config_file(toml) == {"brokerName": "x", "flushIntervalCommitLog": 200}
    bad = tmp_path / "bad.toml"
    bad.write_text("= nope")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        read_config_file(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.conf")


def test_cli_overrides() -> None:
    assert parse_cli_overrides(["--listenPort", "1", "--broker-name=b"]) == {
        "listenPort": "1",
        "broker-name": "b",
    }
    with pytest.raises(ConfigError, match="needs a value"):
        parse_cli_overrides(["--listenPort"])
    with pytest.raises(ConfigError, match="unexpected argument"):
        parse_cli_overrides(["oops"])
