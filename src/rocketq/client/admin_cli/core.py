"""What every `rocketq admin` verb shares: option parsing helpers, the time formats, table and JSON output.

Output is a table by default and JSON with --json (for scripts). Exit status: 0 on success, 1 when the
cluster refused or could not be reached (one line on stderr says why), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import os
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


# mqadmin's formats first (UtilAll.YYYY_MM_DD_HH_MM_SS_SSS, and printMsg's), then the ISO-like ones.
TIME_FORMATS = (
    "%Y-%m-%d#%H:%M:%S:%f",
    "%Y-%m-%d#%H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d",
)
TIME_HELP = (
    "epoch ms, now, or a local time as yyyy-MM-dd#HH:mm:ss:SSS (mqadmin), 'yyyy-MM-dd HH:mm:ss' or yyyy-MM-dd"
)


def parse_time(text: str) -> int:
    """Epoch ms from `now`, a number of ms, or a local time in one of TIME_FORMATS (mqadmin's first)."""
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        return int(text)
    for fmt in TIME_FORMATS:
        try:
            return int(dt.datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a time: {text!r} (use {TIME_HELP})")


def fmt_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ms > 0 else "-"


# Table cells: control characters (a message body may hold any byte) are shown escaped, never written to
# the terminal; long cells are cut. --json prints the values whole.
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]} | {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_CONTROL |= {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
CELL_LIMIT = 80


def cell(value: Any) -> str:
    text = str(value).translate(_CONTROL)
    return text if len(text) <= CELL_LIMIT else text[: CELL_LIMIT - 3] + "..."


def table(rows: Rows) -> str:
    if not rows:
        return "(none)"
    cols = list(rows[0])
    cells = [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(cols))]
    lines += ["  ".join(v.ljust(widths[i]) for i, v in enumerate(row)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def body_fields(body: bytes) -> dict[str, str]:
    """A message body for output: the text when it is UTF-8, else base64, and which of the two it is."""
    try:
        return {"body": body.decode("utf-8"), "bodyEncoding": "utf-8"}
    except UnicodeDecodeError:
        return {"body": base64.b64encode(body).decode("ascii"), "bodyEncoding": "base64"}


def msg_rows(msgs: Sequence[MessageExt]) -> Rows:
    return [
        {
            "msgId": m.msg_id,
            "offsetMsgId": m.offset_msg_id,
            "topic": m.topic,
            "broker": m.broker_name or f"{m.store_host[0]}:{m.store_host[1]}",
            "queue": m.queue_id,
            "offset": m.queue_offset,
            "tags": m.tags or "",
            "keys": " ".join(m.keys),
            "stored": fmt_ms(m.store_timestamp),
            **body_fields(m.body),
        }
        for m in msgs
    ]


class VerbTable:
    """The verbs of the CLI: each verb module's `register(table)` adds its sub-parsers here.

    Every verb is reachable under its kebab-case name and, when it has one, its mqadmin name (camelCase);
    `common` holds the options every verb takes (name servers, output format, credentials).
    """

    def __init__(self, sub: Any, common: argparse.ArgumentParser) -> None:
        self._sub = sub
        self.common = common
        self.verbs: dict[str, Verb] = {}
        self.parsers: dict[str, argparse.ArgumentParser] = {}
        # verbs answered without a cluster (no --namesrv-addr needed): name -> text to print
        self.local: dict[str, Callable[[], str]] = {}

    def verb(
        self, name: str, fn: Verb, help_text: str, mqadmin: str | None = None
    ) -> argparse.ArgumentParser:
        aliases = [mqadmin] if mqadmin and mqadmin != name else []
        for each in (name, *aliases):
            self.verbs[each] = fn
        parser = self._sub.add_parser(
            name, aliases=aliases, help=help_text, description=help_text, parents=[self.common]
        )
        self.parsers[name] = parser
        return parser  # type: ignore[no-any-return]

    def alias(self, alias: str, name: str) -> None:
        """One more name for a verb (e.g. 5.x's queryConsumeQueue for 4.9's queryCq)."""
        self.verbs[alias] = self.verbs[name]
        self._sub._name_parser_map[alias] = self.parsers[name]  # argparse has no public way to alias later


# The environment variables `rocketq admin` reads credentials from when no option gives them.
ACCESS_KEY_ENV = "ROCKETQ_ACCESS_KEY"
SECRET_KEY_ENV = "ROCKETQ_SECRET_KEY"


def add_security_options(common: argparse.ArgumentParser) -> None:
    """ACL credentials and TLS, options every verb takes."""
    common.add_argument(
        "--access-key",
        dest="access_key",
        default=argparse.SUPPRESS,
        help=f"ACL access key (or ${ACCESS_KEY_ENV})",
    )
    common.add_argument(
        "--secret-key",
        dest="secret_key",
        default=argparse.SUPPRESS,
        help=f"ACL secret key (or ${SECRET_KEY_ENV})",
    )
    common.add_argument(
        "--use-tls",
        "--useTLS",
        dest="use_tls",
        action="store_true",
        default=argparse.SUPPRESS,
        help="connect with TLS",
    )
    common.add_argument(
        "--tls-ca-file",
        dest="tls_ca_file",
        default=argparse.SUPPRESS,
        help="CA the servers' certificates must chain to",
    )


def security_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Credentials and TLS of the command (options, else the environment), as client keyword arguments."""
    return {
        "access_key": getattr(args, "access_key", None) or os.environ.get(ACCESS_KEY_ENV) or None,
        "secret_key": getattr(args, "secret_key", None) or os.environ.get(SECRET_KEY_ENV) or None,
        "use_tls": bool(getattr(args, "use_tls", False)),
        "tls_ca_file": getattr(args, "tls_ca_file", None),
    }
