"""What every `rocketq admin` verb shares: option parsing helpers, the time formats, table and JSON output.

Output is a table by default and JSON with --json (for scripts). Exit status: 0 on success, 1 when the
cluster refused or could not be reached (one line on stderr says why), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rocketq.client.admin import Admin
from rocketq.common.message import MessageExt

Rows = list[dict[str, Any]]
Verb = Callable[[Admin, argparse.Namespace], Awaitable[Rows]]


def parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def parse_time(text: str) -> int:
    """Epoch ms from `now`, a number of ms, or 'YYYY-MM-DD HH:MM:SS' (local time)."""
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        return int(text)
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d#%H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return int(dt.datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a time: {text!r} (use epoch ms, now, or 'YYYY-MM-DD HH:MM:SS')")


def fmt_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ms > 0 else "-"


def table(rows: Rows) -> str:
    if not rows:
        return "(none)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def msg_rows(msgs: Sequence[MessageExt]) -> Rows:
    return [
        {
            "msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "topic": m.topic, "broker": m.broker_name or f"{m.store_host[0]}:{m.store_host[1]}",
            "queue": m.queue_id, "offset": m.queue_offset, "tags": m.tags or "", "keys": " ".join(m.keys),
            "stored": fmt_ms(m.store_timestamp), "body": body_text(m.body),
        }
        for m in msgs
    ]


def body_text(body: bytes, limit: int = 64) -> str:
    text = body.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class VerbTable:
    """The verbs of the CLI: each verb module's `register(table)` adds its sub-parsers here.

    Every verb is reachable under its kebab-case name and, when it has one, its mqadmin name (camelCase);
    `common` holds the options every verb takes (name servers, output format, credentials).
    """

    def __init__(self, sub: Any, common: argparse.ArgumentParser) -> None:
        self._sub = sub
        self.common = common
        self.verbs: dict[str, Verb] = {}

    def verb(self, name: str, fn: Verb, help_text: str, mqadmin: str | None = None) -> argparse.ArgumentParser:
        aliases = [mqadmin] if mqadmin and mqadmin != name else []
        for each in (name, *aliases):
            self.verbs[each] = fn
        return self._sub.add_parser(  # type: ignore[no-any-return]
            name, aliases=aliases, help=help_text, description=help_text, parents=[self.common]
        )
