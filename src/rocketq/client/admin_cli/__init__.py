"""`rocketq admin --namesrv-addr ADDR <verb> ...`: cluster administration, as RocketMQ's mqadmin.

Every verb has its kebab-case name and its mqadmin name (`update-topic` and `updateTopic`), mqadmin's
option letters and long names (`-n/--namesrvAddr`, `-t/--topic`, `-c/--clusterName`, ...) beside ours,
and help text on every option. One module per family of verbs (topic, broker, group, message, namesrv);
each has `register(table)` adding its sub-parsers to the VerbTable of core.py, which also holds the
output (tables with control characters escaped; --json with whole values) and the time formats. This
module builds the parser, runs the chosen verb, and prints a shell completion script (completion.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence

from rocketq.client.admin import Admin
from rocketq.client.admin_cli import acl, broker, completion, group, message, namesrv, topic
from rocketq.client.admin_cli.core import (
    Rows,
    Verb,
    VerbTable,
    add_security_options,
    parse_time,
    security_settings,
    table,
)
from rocketq.client.trace.view import add_trace_verb
from rocketq.common.errors import RocketQError

__all__ = ["main", "parse_time", "table"]

VERB_MODULES = (topic, broker, group, message, namesrv, acl)


def _parser() -> tuple[argparse.ArgumentParser, VerbTable]:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-n",
        "--namesrv-addr",
        "--namesrvAddr",
        dest="namesrv_addr",
        default=argparse.SUPPRESS,
        help="name servers host:port;host:port (default: $NAMESRV_ADDR)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print JSON (whole values; bodies as UTF-8 text or base64, bodyEncoding says which) instead of a table",
    )
    add_security_options(common)
    parser = argparse.ArgumentParser(
        prog="rocketq admin", description="Administer a rocketq / RocketMQ cluster.", parents=[common]
    )
    verbs = VerbTable(parser.add_subparsers(dest="verb", metavar="VERB", required=True), common)
    for module in VERB_MODULES:
        module.register(verbs)
    add_trace_verb(verbs.verb)
    completion.register(verbs)
    return parser, verbs


async def _run(fn: Verb, args: argparse.Namespace) -> Rows:
    async with Admin(namesrv_addr=args.namesrv_addr, **security_settings(args)) as admin:
        return await fn(admin, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser, verbs = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.verb in verbs.local:
        print(verbs.local[args.verb]())
        return 0
    if not getattr(args, "namesrv_addr", None):
        args.namesrv_addr = os.environ.get("NAMESRV_ADDR", "")
        if not args.namesrv_addr:
            print("rocketq admin: --namesrv-addr is required (or set NAMESRV_ADDR)", file=sys.stderr)
            return 2
    try:
        rows = asyncio.run(_run(verbs.verbs[args.verb], args))
    except RocketQError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"rocketq admin {args.verb}: {exc}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2, default=str, ensure_ascii=False))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
