"""Instruction counts of what ACL adds to a send on the broker, part by part, for callgrind.

    valgrind --tool=callgrind --toggle-collect=starmap_next --callgrind-out-file=/tmp/acl.%p \
        .venv/bin/python bench/acl_instructions.py PART [--count 4000]
    ROCKETQ_NO_EXTENSIONS=1 valgrind ... (the pure path)

Each PART maps one function over --count prebuilt items with `itertools.starmap`, so that
`--toggle-collect=starmap_next` counts only that loop (the set-up, imports and frame building are left out); divide the total by
--count (the `*_runs` parts: by the sends, 32 a run). `empty` is the driver's own cost per item (the
call of a lambda), to take off the others. The frames are SEND_MESSAGE_V2 with a msgpack header and a
1 KiB body as the SDK sends them (bench/send_path.py's header), signed or not, and the consumer's
signed pull and offset commit (bench/security.py's).

Parts: empty, decode_plain, decode_signed (decode_frame_payload), hook_runs (the server hook on runs
of 32 decoded signed sends, as the dispatcher calls it), hook_alone (one send), signature (the
account's bound check), verdict (the address and account verdict), pass_compare (the run's permission
compare), process_plain, process_signed (the send processor on runs of 32 decoded sends, no hook:
what the two more header fields cost it), pull_alone, offset_alone.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from itertools import starmap
from pathlib import Path
from typing import Any

from inprocess_broker import Connection, unstarted_broker
from security import ACL, USER, consume_requests, send_frames

from rocketq.remoting.acl import permission, validator
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.acl.server_hook import AclServerHook
from rocketq.remoting.acl.signing import signature_checker
from rocketq.remoting.protocol.frame import decode_frame_payload

ADDR = "127.0.0.1:50000"
RUN = 32


def main(part: str, count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-acl-") as d:
        acl_file = Path(d) / "plain_acl.yml"
        acl_file.write_text(ACL, encoding="utf-8")
        config = PlainAclConfig(str(acl_file))
    hook = AclServerHook(config)
    tables = config.tables
    plain, signed = send_frames(count, False), send_frames(count, True)
    cmds = [decode_frame_payload(f) for f in signed]
    runs = [cmds[i : i + RUN] for i in range(0, count, RUN)]
    hook.do_before_requests(ADDR, runs[0])  # the verdicts and passes kept, as in a running broker
    check = signature_checker(USER[1])
    consumer = consume_requests(count, {"access_key": USER[0], "secret_key": USER[1]})
    for r in consumer["pull"][:1] + consumer["offset"][:1]:
        hook.do_before_request(ADDR, r)
    names = permission.RESOURCE_FIELDS[310]
    same = permission.same_values
    fn: Any
    items: list[Any] = cmds
    if part.startswith("process_"):
        asyncio.run(process(part, count, plain, signed))
        return
    if part == "empty":
        fn = lambda c: None  # noqa: E731
    elif part == "decode_plain":
        fn, items = decode_frame_payload, plain
    elif part == "decode_signed":
        fn, items = decode_frame_payload, signed
    elif part == "hook_runs":
        fn, items = (lambda run: hook.do_before_requests(ADDR, run)), runs
    elif part == "hook_alone":
        fn = lambda c: hook.do_before_request(ADDR, c)  # noqa: E731
    elif part == "signature":
        fn = lambda c: check(c.ext_fields, c.body)  # noqa: E731
    elif part == "verdict":
        fn = lambda c: validator._verdict(tables, ADDR, c.ext_fields.get("AccessKey"))  # noqa: E731
    elif part == "pass_compare":
        first = cmds[0].ext_fields
        fn = lambda c: same(c.ext_fields, first, names)  # noqa: E731
    elif part == "pull_alone":
        fn, items = (lambda c: hook.do_before_request(ADDR, c)), consumer["pull"]
    elif part == "offset_alone":
        fn, items = (lambda c: hook.do_before_request(ADDR, c)), consumer["offset"]
    else:
        raise SystemExit(f"unknown part {part!r}")
    for _ in starmap(fn, [(item,) for item in items]):
        pass


async def process(part: str, count: int, plain: list[memoryview], signed: list[memoryview]) -> None:
    """The send processor on runs of decoded sends (decoded outside the count), plain or signed."""
    frames = signed if part == "process_signed" else plain
    async with unstarted_broker() as broker:
        proc, conn = broker.processors["send"], Connection()
        await asyncio.sleep(0.3)  # the allocator's first reservations
        decoded = [decode_frame_payload(f) for f in frames]
        await proc.process_requests(conn, decoded[:RUN])  # warm-up
        runs = [decoded[i : i + RUN] for i in range(RUN, count, RUN)]
        # the coroutine stepped by hand inside map (process_requests does not suspend on ASYNC_FLUSH)
        for _ in starmap(lambda run: _step(proc.process_requests(conn, run)), [(run,) for run in runs]):
            pass


def _step(coro: Any) -> Any:
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("process_requests suspended")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part")
    parser.add_argument("--count", type=int, default=4000)
    a = parser.parse_args()
    main(a.part, a.count)
