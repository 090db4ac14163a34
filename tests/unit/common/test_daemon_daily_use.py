"""The daemons for daily use: .properties read as java.util.Properties, keys documented, logs rotated, --version."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.common.config import RocketConfig, config_help, parse_daemon_args, parse_properties
from rocketq.common.logs import DaemonFileHandler, DaemonLogConfig, setup_daemon_logging
from rocketq.namesrv.config import NamesrvConfig
from rocketq.store.config import MessageStoreConfig


def test_properties_are_read_as_java_does() -> None:
    text = (
        "# comment\n! also a comment\n"
        "brokerName=broker-b\n"
        "brokerClusterName : ClusterX\n"
        "listenPort 10921\n"
        "   namesrvAddr\t127.0.0.1:9876;\\\n"
        "      127.0.0.1:9877\n"
        "key\\ with\\=odd\\:chars = v\\u00e9\\tx\n"
        "empty=\n"
        "flag\n"
    )
    assert parse_properties(text) == {
        "brokerName": "broker-b",
        "brokerClusterName": "ClusterX",
        "listenPort": "10921",
        "namesrvAddr": "127.0.0.1:9876;127.0.0.1:9877",
        "key with=odd:chars": "v\u00e9\tx",
        "empty": "",
        "flag": "",
    }


@pytest.mark.parametrize("models", [(NamesrvConfig,), (BrokerConfig, MessageStoreConfig)])
def test_help_lists_every_key_with_its_default_and_a_description(
    models: tuple[type[RocketConfig], ...],
) -> None:
    text = config_help(*models)
    for model in models:
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
            assert f"  {info.alias or name} (default: " in text
    assert "  flushDiskType (default: ASYNC_FLUSH)" in text or NamesrvConfig in models


def test_help_and_version_options_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        parse_daemon_args(["--help"], "usage: x", lambda: config_help(NamesrvConfig))
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("usage: x") and "kvConfigPath (default: " in out and "logLevel (default: INFO)" in out
    )
    with pytest.raises(SystemExit):
        parse_daemon_args(["--version"], "usage: x")
    assert capsys.readouterr().out.startswith("rocketq ")
    assert parse_daemon_args(["--printConfigItem"], "usage: x").print_config


def test_log_level_and_size_rotation(tmp_path: Path) -> None:
    config = DaemonLogConfig.build({"logLevel": "WARN", "logFileMaxSize": "400", "logFileBackups": "2"})
    logger = logging.getLogger("rocketq")
    before = list(logger.handlers)
    try:
        path = setup_daemon_logging(tmp_path / "logs" / "d.log", config, "logDir")
        probe = logging.getLogger("rocketq.test.rotation")
        probe.info("not written: below WARN")
        for i in range(40):
            probe.warning("line %02d %s", i, "x" * 40)
        for handler in logger.handlers:
            handler.flush()
        names = sorted(p.name for p in path.parent.iterdir())
        assert names == ["d.log", "d.log.1", "d.log.2"], "two backups kept, older ones dropped"
        assert all(p.stat().st_size <= 400 for p in path.parent.iterdir())
        assert "line 39" in path.read_text() and "below WARN" not in "".join(
            p.read_text() for p in path.parent.iterdir()
        )
    finally:
        for handler in logger.handlers[:]:
            if handler not in before:
                logger.removeHandler(handler)
                handler.close()


@pytest.mark.skipif(
    not Path("/dev/full").exists(), reason="no /dev/full (a device whose writes fail with ENOSPC)"
)
def test_a_log_file_on_a_full_disk_drops_lines_and_says_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Every write to /dev/full fails with ENOSPC, as on a full disk: the handler neither raises nor prints
    logging's traceback per line; one line on stderr says the file cannot be written."""
    handler = DaemonFileHandler("/dev/full", maxBytes=0)
    try:
        for i in range(200):
            handler.emit(
                logging.LogRecord("rocketq.test", logging.WARNING, __file__, 1, "line %d", (i,), None)
            )
        assert handler.failing
    finally:
        handler.close()
    err = capsys.readouterr().err
    assert err.count("cannot be written") == 1 and "No space left on device" in err
    assert "Traceback" not in err and "Logging error" not in err


@pytest.mark.parametrize("command", ["namesrv", "broker", "admin", "bench", "cluster"])
def test_every_subcommand_answers_version(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rocketq", command, "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.startswith("rocketq "), out.stderr


@pytest.mark.parametrize("argv", [["broker", "--help"], ["broker", "-p"], ["namesrv", "-p"]])
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    # `rocketq broker -p | head -1` where head is already gone: the first write meets a closed pipe.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "rocketq", *argv], stdout=write_end, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(write_end)
    err = out.stderr.decode()
    assert out.returncode == 0 and "Traceback" not in err and "BrokenPipeError" not in err, err
