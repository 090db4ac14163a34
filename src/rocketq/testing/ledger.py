"""What producers were told, and what consumers got back: self-checking bodies and a ledger of acks.

Fault tests send bodies made by `make_body`: a sequence number, the phase ("cycle") of the test it
was sent in, filler of a length that varies with the sequence number, and a SHA-256 over all of it.
`check_body` tells whether a delivered body is whole and byte-identical without any other state, so a
torn or corrupt record is recognised wherever it turns up. The `Ledger` keeps every acknowledgement
(broker, queue, offset, body) and every failed send; `compare` holds them against what a consumer
read back and reports per cycle: sent, acknowledged, acknowledged-and-consumed, lost, corrupt.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

_MAGIC = b"RQ1"
_DIGEST_BYTES = 16  # of SHA-256, hex: 32 characters
_FILLER = bytes(range(33, 127)) * 64  # printable, so a failing comparison reads well


def make_body(seq: int, cycle: int, size: int = 200) -> bytes:
    """A body of about `size` (+- a quarter) bytes that names `seq` and `cycle` and carries its own hash."""
    spread = max(1, size // 2)
    filler_len = max(0, size - 64) // 2 + (seq * 7919) % spread
    start = seq % 94
    payload = b"%s|%d|%d|%s" % (_MAGIC, seq, cycle, _FILLER[start : start + filler_len])
    return payload + b"|" + hashlib.sha256(payload).hexdigest()[: 2 * _DIGEST_BYTES].encode()


def check_body(body: bytes) -> tuple[int, int] | None:
    """(seq, cycle) of a whole body made by `make_body`; None when it is torn, corrupt or foreign."""
    payload, sep, digest = body.rpartition(b"|")
    if not sep or hashlib.sha256(payload).hexdigest()[: 2 * _DIGEST_BYTES].encode() != digest:
        return None
    parts = payload.split(b"|", 3)
    if len(parts) != 4 or parts[0] != _MAGIC:
        return None
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        return None


Position = tuple[str, int, int]  # broker name, queue id, queue offset


@dataclass(slots=True)
class Ack:
    """One acknowledged send: where the broker said the message landed."""

    seq: int
    cycle: int
    position: Position
    body: bytes


@dataclass
class Ledger:
    """Every send attempt's outcome, by sequence number and cycle (filled by SendStream)."""

    acks: dict[int, Ack] = field(default_factory=dict)
    sent: Counter[int] = field(default_factory=Counter)  # cycle -> sends started
    failed: Counter[int] = field(default_factory=Counter)  # cycle -> sends that raised
    failed_seqs: set[int] = field(default_factory=set)
    errors: Counter[str] = field(default_factory=Counter)  # exception type -> count
    error_samples: dict[str, str] = field(default_factory=dict)  # exception type -> its first message

    def record_ack(self, seq: int, cycle: int, position: Position, body: bytes) -> None:
        self.acks[seq] = Ack(seq, cycle, position, body)

    def record_failure(self, seq: int, cycle: int, error: BaseException) -> None:
        self.failed[cycle] += 1
        self.failed_seqs.add(seq)
        name = type(error).__name__
        self.errors[name] += 1
        self.error_samples.setdefault(name, str(error)[:300])

    @property
    def acked_count(self) -> int:
        return len(self.acks)

    def highest_acked_offsets(self) -> dict[tuple[str, int], int]:
        """(broker, queue id) -> the highest acknowledged queue offset."""
        out: dict[tuple[str, int], int] = {}
        for ack in self.acks.values():
            broker, queue_id, offset = ack.position
            key = (broker, queue_id)
            if offset > out.get(key, -1):
                out[key] = offset
        return out


@dataclass(slots=True)
class CycleRow:
    cycle: int
    sent: int = 0
    acked: int = 0
    failed: int = 0
    acked_consumed: int = 0
    lost: int = 0
    unacked_stored: int = 0  # sends that raised (or were retried) whose message is stored anyway

    def cells(self) -> tuple[int, ...]:
        return (
            self.cycle,
            self.sent,
            self.acked,
            self.acked_consumed,
            self.lost,
            self.failed,
            self.unacked_stored,
        )


@dataclass
class Comparison:
    """The ledger against what was consumed (see `compare`)."""

    rows: dict[int, CycleRow]
    consumed: int
    lost: list[Ack]
    mismatched: list[tuple[Ack, bytes]]  # acknowledged at a position that now holds other bytes
    corrupt: list[tuple[Position, bytes]]  # consumed bodies that do not check
    duplicates: int  # extra copies of a sequence number (a retried send stored twice)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.mismatched or self.corrupt)

    def table(self, title: str = "") -> str:
        head = ("cycle", "sent", "acked", "acked+consumed", "lost", "failed sends", "unacked but stored")
        rows = [r.cells() for _, r in sorted(self.rows.items())]
        total = CycleRow(-1)
        for r in self.rows.values():
            total.sent += r.sent
            total.acked += r.acked
            total.acked_consumed += r.acked_consumed
            total.lost += r.lost
            total.failed += r.failed
            total.unacked_stored += r.unacked_stored
        widths = [max(len(h), 7) for h in head]
        lines = [title] if title else []
        lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
        for cells in rows:
            lines.append("  ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True)))
        lines.append(
            "  ".join(str(c).rjust(w) for c, w in zip(("all", *total.cells()[1:]), widths, strict=True))
        )
        lines.append(
            f"consumed {self.consumed} messages; lost {len(self.lost)}, mismatched {len(self.mismatched)}, "
            f"corrupt {len(self.corrupt)}, duplicates of retried sends {self.duplicates}"
        )
        return "\n".join(lines)

    def problems(self, limit: int = 5) -> str:
        parts = []
        if self.lost:
            parts.append(
                f"lost (acknowledged, never consumed): {[(a.seq, a.cycle, a.position) for a in self.lost[:limit]]}"
            )
        if self.mismatched:
            parts.append(
                f"acknowledged position holds other bytes: {[(a.seq, a.position, b[:60]) for a, b in self.mismatched[:limit]]}"
            )
        if self.corrupt:
            parts.append(f"corrupt bodies delivered: {[(p, b[:60]) for p, b in self.corrupt[:limit]]}")
        return "; ".join(parts)


def compare(ledger: Ledger, consumed: dict[Position, bytes]) -> Comparison:
    """Hold every acknowledgement against the consumed messages (position -> body)."""
    rows: dict[int, CycleRow] = {}

    def row(cycle: int) -> CycleRow:
        if cycle not in rows:
            rows[cycle] = CycleRow(cycle)
        return rows[cycle]

    for cycle, count in ledger.sent.items():
        row(cycle).sent = count
    for cycle, count in ledger.failed.items():
        row(cycle).failed = count
    seen: Counter[int] = Counter()
    corrupt: list[tuple[Position, bytes]] = []
    stored_cycle: dict[int, int] = {}
    for position, body in consumed.items():
        checked = check_body(body)
        if checked is None:
            corrupt.append((position, body))
            continue
        seen[checked[0]] += 1
        stored_cycle[checked[0]] = checked[1]
    lost: list[Ack] = []
    mismatched: list[tuple[Ack, bytes]] = []
    for ack in ledger.acks.values():
        r = row(ack.cycle)
        r.acked += 1
        got = consumed.get(ack.position)
        if got is None:
            lost.append(ack)
            r.lost += 1
        elif got != ack.body:
            mismatched.append((ack, got))
            r.lost += 1
        else:
            r.acked_consumed += 1
    for seq, cycle in stored_cycle.items():
        if seq not in ledger.acks:
            row(cycle).unacked_stored += 1
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    return Comparison(rows, len(consumed), lost, mismatched, corrupt, duplicates)
