"""`rocketq admin --namesrv-addr ADDR <verb> ...`: cluster administration, as RocketMQ's mqadmin.

One module per family of verbs (topic, group, message, broker); each has `register(table)` adding its
sub-parsers to the VerbTable of core.py, which also holds the output and the time formats. This module
builds the parser and runs the chosen verb.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence

from rocketq.client.admin import Admin
from rocketq.client.admin_cli import broker, group, message, topic
from rocketq.client.admin_cli.core import Rows, Verb, VerbTable, parse_time, table
from rocketq.common.errors import RocketQError

__all__ = ["main", "parse_time", "table"]

VERB_MODULES = (topic, broker, group, message)


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Verb]]:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--namesrv-addr", "--namesrvAddr", dest="namesrv_addr", default=argparse.SUPPRESS, help="name servers host:port;host:port")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON instead of a table")
    parser = argparse.ArgumentParser(prog="rocketq admin", description="Administer a rocketq / RocketMQ cluster.", parents=[common])
    verbs = VerbTable(parser.add_subparsers(dest="verb", metavar="VERB", required=True), common)
    for module in VERB_MODULES:
        module.register(verbs)
    return parser, verbs.verbs


async def _run(fn: Verb, args: argparse.Namespace) -> Rows:
    async with Admin(namesrv_addr=args.namesrv_addr) as admin:
        return await fn(admin, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser, verbs = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "namesrv_addr", None):


        args.namesrv_addr = os.environ.get("NAMESRV_ADDR", "")
        if not args.namesrv_addr:
            print("rocketq admin: --namesrv-addr is required (or set NAMESRV_ADDR)", file=sys.stderr)
            return 2
    try:
        rows = asyncio.run(_run(verbs[args.verb], args))
    except RocketQError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(table(rows))
    return 0




if __name__ == "__main__":
    raise SystemExit(main())
