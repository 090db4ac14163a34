"""Daemon argument and config handling (no process started) and the harness's option building."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.cluster import _options
from rocketq.common.errors import ConfigError
from rocketq.namesrv.daemon import load_config, parse_args


def test_defaults() -> None:
    config = load_config(parse_args([]))
    assert config.listen_port == 9876
    assert config.scan_not_active_broker_interval_ms == 10_000
    assert config.broker_channel_expired_time_ms == 120_000
    assert config.bind_address == "127.0.0.1"


def test_every_spelling_of_a_key_works() -> None:
    for spelling in ("--listen-port", "--listenPort", "--listen_port"):
        assert load_config(parse_args([spelling, "1234"])).listen_port == 1234
    assert load_config(parse_args(["--brokerChannelExpiredTime=5000"])).broker_channel_expired_time_ms == 5000


def test_command_line_overrides_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=1111\norderMessageEnable=true\n")
    config = load_config(parse_args(["-c", str(conf), "--listen-port", "2222"]))
    assert (config.listen_port, config.order_message_enable) == (2222, True)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--nope", "1"], "nope"),
        (["--listen-port", "70000"], "listenPort"),
        (["--listen-port"], "listen-port"),
        (["stray"], "stray"),
        (["-c"], "-c"),
        (["-c", "/nonexistent/namesrv.conf"], "/nonexistent/namesrv.conf"),
    ],
)
def test_bad_input_names_the_problem(argv: list[str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_config(parse_args(argv))


def test_harness_options() -> None:
    argv = _options(
        {"listen-port": 0, "logDir": "/x"}, {"listenPort": 5, "c": "/f.toml", "flag": True, "gone": None}
    )
    assert argv == ["-c", "/f.toml", "--listenPort", "5", "--logDir", "/x", "--flag", "true"]
