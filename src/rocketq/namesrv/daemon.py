"""`rocketq namesrv [-c FILE] [-p] [--listen-port N] [--KEY VALUE ...]`: the NameServer process.

Port of org.apache.rocketmq.namesrv.NamesrvStartup (4.9.8). The daemon contract: settings from a
TOML or Java .properties file (`-c`), overridden by `--KEY VALUE` options (RocketMQ, snake or kebab
spelling); one `READY namesrv <host>:<port>` line on stdout once connections are accepted; logs on
stderr and in `<logDir>/namesrv.log`; SIGTERM/SIGINT shut down cleanly with exit 0. A bad key or
value prints one line naming it and exits 2; a port that cannot be bound prints one line and exits 1.
`-p` prints every setting (Java's printConfigItem) and exits 0.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from rocketq.common.config import (
    DaemonArgs,
    config_help,
    parse_cli_overrides,
    parse_daemon_args,
    read_config_file,
)
from rocketq.common.daemon import listen_problem, serve_until_signalled
from rocketq.common.errors import ConfigError
from rocketq.common.logs import setup_daemon_logging
from rocketq.namesrv.config import NamesrvConfig
from rocketq.remoting.errors import RemotingError
from rocketq.remoting.metrics import MetricsExporterError

log = logging.getLogger("rocketq.namesrv")

USAGE = "usage: rocketq namesrv [-c FILE] [-p] [--listen-port N] [--KEY VALUE ...]"
EXIT_BAD_CONFIG = 2
EXIT_START_FAILED = 1
SHUTDOWN_TIMEOUT_S = 10.0


def parse_args(argv: list[str]) -> DaemonArgs:
    return parse_daemon_args(argv, USAGE, lambda: config_help(NamesrvConfig))


def load_config(args: DaemonArgs) -> NamesrvConfig:
    """File values, then command-line overrides; ConfigError names the bad key and where it came from."""
    values: dict[str, Any] = {}
    if args.config_file is not None:
        values = read_config_file(args.config_file)
        NamesrvConfig.build(values, source=args.config_file)
    overrides = parse_cli_overrides(args.overrides)
    if not overrides:
        return NamesrvConfig.build(values, source=args.config_file or "configuration")
    # Later keys win in build(), whatever their spelling, so the command line overrides the file.
    return NamesrvConfig.build({**values, **overrides}, source="command line")


def setup_logging(config: NamesrvConfig) -> Path:
    """Logs to stderr and to <logDir>/namesrv.log (level and rotation from the config); the log file."""
    return setup_daemon_logging(Path(config.log_dir).expanduser() / "namesrv.log", config, "logDir")


def _ready_host(bind_address: str) -> str:
    if bind_address in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind_address == "::":
        return "[::1]"
    return f"[{bind_address}]" if ":" in bind_address else bind_address


async def serve(config: NamesrvConfig) -> int:
    """Run a NameServer until SIGTERM/SIGINT; the exit code."""
    from rocketq.namesrv.controller import NamesrvController

    try:
        controller = NamesrvController(config)
    except ConfigError as exc:  # TLS files or ACL credentials that cannot be used
        print(f"rocketq namesrv: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_CONFIG
    try:
        await controller.start()
    except RemotingError as exc:
        await controller.shutdown()
        problem = listen_problem(exc, f"{config.bind_address}:{config.listen_port}")
        print(f"rocketq namesrv: {problem}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    except MetricsExporterError as exc:
        await controller.shutdown()
        print(f"rocketq namesrv: {exc}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    log.info("The Name Server boot success. listen %s:%d", config.bind_address, controller.port)
    metrics_addr = controller.metrics.exporter.addr if controller.metrics is not None else None
    ready_addr = f"{_ready_host(config.bind_address)}:{controller.port}"
    await serve_until_signalled(
        "namesrv", ready_addr, metrics_addr, controller.shutdown, SHUTDOWN_TIMEOUT_S, log, "Name Server"
    )
    log.info("the Name Server stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        config = load_config(args)
        if args.print_config:
            from rocketq.namesrv.processors.admin import config_properties_text

            print(config_properties_text(config), end="")
            return 0
        setup_logging(config)
    except ConfigError as exc:
        print(f"rocketq namesrv: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_CONFIG
    from rocketq.remoting.transport.loops import run

    try:
        return run(serve(config), loop=config.event_loop)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
