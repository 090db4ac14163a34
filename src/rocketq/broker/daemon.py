"""`rocketq broker [-c FILE] [--namesrv-addr A] [--broker-name N] [--listen-port P] [--store-path-root-dir D]
[--KEY VALUE ...]`: the broker process.

Port of org.apache.rocketmq.broker.BrokerStartup (4.9.8) to the daemon contract of docs/deploy.md: BrokerConfig and
MessageStoreConfig from one TOML or RocketMQ .properties/.conf file, overridden by command-line options;
one `READY broker <brokerIP1>:<port>` line on stdout once the broker serves and has registered; logs on
stderr and in `<storePathRootDir>/logs/broker.log`; SIGTERM/SIGINT shut down cleanly (flush, persist
offsets and configs, unregister) and exit 0. A bad key or value prints one line naming it and exits 2; a
port in use or a store that cannot be opened prints one line and exits 1. `-p` prints every setting.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.broker.config import BrokerConfig, load_broker_configs
from rocketq.common.config import DaemonArgs, config_help, parse_cli_overrides, parse_daemon_args
from rocketq.common.daemon import listen_problem, serve_until_signalled, tune_collector
from rocketq.common.errors import ConfigError, RocketQError
from rocketq.common.logs import setup_daemon_logging
from rocketq.remoting.errors import RemotingError

if TYPE_CHECKING:
    from rocketq.store.config import MessageStoreConfig

log = logging.getLogger("rocketq.broker")

USAGE = (
    "usage: rocketq broker [-c FILE] [-p] [--namesrv-addr ADDR] [--broker-name NAME] [--listen-port PORT]\n"
    "                      [--store-path-root-dir DIR] [--KEY VALUE ...]"
)
EXIT_BAD_CONFIG = 2
EXIT_START_FAILED = 1
SHUTDOWN_TIMEOUT_S = 20.0


def parse_args(argv: list[str]) -> DaemonArgs:
    return parse_daemon_args(argv, USAGE, _config_help)


def setup_logging(root_dir: Path, config: BrokerConfig) -> Path:
    """Logs to stderr and to <storePathRootDir>/logs/broker.log (level and rotation from the config)."""
    return setup_daemon_logging(root_dir / "logs" / "broker.log", config, "storePathRootDir")


def _config_help() -> str:
    from rocketq.store.config import MessageStoreConfig

    return config_help(BrokerConfig, MessageStoreConfig)


async def serve(broker_config: BrokerConfig, store_config: MessageStoreConfig) -> int:
    """Run a broker until SIGTERM/SIGINT; the exit code."""
    from rocketq.broker.controller import BrokerController, BrokerStartError

    try:
        controller = BrokerController(broker_config, store_config)
    except (ValueError, RocketQError) as exc:
        print(f"rocketq broker: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_CONFIG
    try:
        await controller.start()
    except (RemotingError, BrokerStartError) as exc:
        where = f"{broker_config.bind_address or broker_config.broker_ip1}:{broker_config.listen_port}"
        problem = listen_problem(exc, where) if isinstance(exc, RemotingError) else str(exc)
        log.error("start-up failed: %s", problem)
        await _quiet_shutdown(controller)
        print(f"rocketq broker: {problem}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    except Exception as exc:  # a bug: the traceback goes to the log, one line to the operator
        log.exception("start-up failed")
        await _quiet_shutdown(controller)
        print(f"rocketq broker: start-up failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    log.info("The broker[%s, %s] boot success.", broker_config.broker_name, controller.broker_addr)
    metrics_addr = controller.metrics.exporter.addr if controller.metrics is not None else None
    tune_collector(broker_config.gc_freeze_after_start, broker_config.gc_gen0_threshold)
    await serve_until_signalled(
        "broker", controller.broker_addr, metrics_addr, controller.shutdown, SHUTDOWN_TIMEOUT_S, log, "broker"
    )
    return 0


async def _quiet_shutdown(controller: Any) -> None:
    try:
        await asyncio.wait_for(controller.shutdown(), SHUTDOWN_TIMEOUT_S)
    except Exception:
        log.debug("cleanup after a failed start failed", exc_info=True)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        broker_config, store_config = load_broker_configs(
            args.config_file, parse_cli_overrides(args.overrides)
        )
        if args.print_config:
            from rocketq.broker.processors.admin.runtime import properties_text

            print(properties_text(broker_config, store_config), end="")
            return 0
        setup_logging(Path(store_config.store_path_root_dir).expanduser(), broker_config)
    except ConfigError as exc:
        print(f"rocketq broker: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_CONFIG
    from rocketq.remoting.transport.loops import run

    try:
        return run(serve(broker_config, store_config), broker_config.event_loop)
    except KeyboardInterrupt:
        return 0
