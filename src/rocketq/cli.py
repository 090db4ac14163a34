"""The `rocketq` console script: parses the subcommand and hands the rest to the role's entry point.

No logic lives here. Each subcommand names a module with `main(argv: list[str]) -> int`, imported only
when that subcommand runs, so `rocketq --help` stays fast and a missing optional part fails alone.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from rocketq import __version__

# subcommand -> (module with main(argv) -> int, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "namesrv": ("rocketq.namesrv.daemon", "run a NameServer (route registry, default port 9876)"),
    "broker": (
        "rocketq.broker.daemon",
        "run a broker (message store and remoting server, default port 10911)",
    ),
    "admin": ("rocketq.client.admin_cli", "administer a cluster: topics, groups, offsets, messages"),
    "bench": ("rocketq.client.bench", "benchmark produce / consume / latency against a cluster"),
    "dashboard": ("rocketq.dashboard.cli", "serve the web dashboard of a cluster (default 127.0.0.1:8080)"),
    "cluster": ("rocketq.launcher", "run a local cluster in the foreground (cluster up -c FILE)"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketq",
        description="rocketq: a RocketMQ-compatible broker cluster and client SDK in Python.",
    )
    parser.add_argument("--version", action="version", version=f"rocketq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv or argv[0] not in SUBCOMMANDS:
        parser.parse_args(argv)  # handles --help, --version and unknown commands
        parser.print_help()
        return 2
    if "--version" in argv[1:]:  # every subcommand answers it, before parsing anything else
        print(f"rocketq {__version__}")
        return 0
    module_name, _help = SUBCOMMANDS[argv[0]]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"rocketq {argv[0]}: not available ({exc})", file=sys.stderr)
        return 2
    try:
        code = int(module.main(argv[1:]) or 0)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`rocketq admin ... | head`): end quietly, as a Unix tool does. Python
        # would report the failed flush of stdout at exit, so it is pointed at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
