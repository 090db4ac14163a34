"""Consumer-group churn for fault tests: members that join and leave on a schedule, every delivery logged.

`ChurningGroup` keeps `slots` PushConsumers of one CLUSTERING group; `step()` makes one membership
change (a running member leaves with a clean shutdown, or a stopped slot joins with a new consumer,
keeping at least one member), and every change is time-stamped. Each delivery is logged with its time,
the consumer incarnation, the queue and offset, and the body's sequence number (bodies made by
rocketq.testing.ledger.make_body). `analyse` then tells which sequence numbers were never delivered,
which were delivered more than once, and whether every duplicate is explained by a membership
change between its deliveries that came soon after its first delivery (a message in flight at a
rebalance: consumed, but its offset not yet committed when the queue moved).
"""

from __future__ import annotations

import bisect
import random
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rocketq.client import ConsumeResult, MessageExt, PushConsumer
from rocketq.client.config import ConsumeFromWhere, MessageModel
from rocketq.testing.ledger import check_body


@dataclass(slots=True)
class Delivery:
    time: float
    consumer: str  # incarnation name
    broker: str
    queue_id: int
    offset: int
    seq: int  # -1 when the body did not check


@dataclass
class ChurnReport:
    expected: int
    delivered: int
    missing: list[int]
    corrupt: int
    duplicates: dict[int, list[Delivery]]  # seq -> its deliveries (2 or more)
    unexplained: list[int]  # duplicates with no membership change soon after the first delivery
    changes: int
    incarnations: int

    @property
    def duplicate_deliveries(self) -> int:
        return sum(len(d) - 1 for d in self.duplicates.values())

    def summary(self) -> str:
        return (
            f"{self.expected} messages, {self.delivered} deliveries by {self.incarnations} consumer incarnations "
            f"over {self.changes} membership changes: missing {len(self.missing)}, corrupt {self.corrupt}, "
            f"duplicated messages {len(self.duplicates)} ({self.duplicate_deliveries} extra deliveries), "
            f"duplicates not explained by a rebalance {len(self.unexplained)}"
        )


class ChurningGroup:
    """Up to `slots` members of `group` consuming `topic`; `step()` changes the membership once."""

    def __init__(
        self, namesrv_addr: str, group: str, topic: str, *, slots: int = 4, seed: int = 0, **settings: Any
    ) -> None:
        self.namesrv_addr = namesrv_addr
        self.group = group
        self.topic = topic
        self.settings = settings
        self.members: list[PushConsumer | None] = [None] * slots
        self.names: list[str] = [""] * slots
        self.deliveries: list[Delivery] = []
        self.changes: list[tuple[float, str]] = []  # (time, "join c3#2" / "leave c1#0")
        self._incarnations = 0
        self._rng = random.Random(seed)

    @property
    def running(self) -> list[int]:
        return [i for i, member in enumerate(self.members) if member is not None]

    def _listener(self, name: str) -> Any:
        deliveries = self.deliveries

        async def listener(msgs: list[MessageExt]) -> ConsumeResult:
            now = time.monotonic()
            for msg in msgs:
                checked = check_body(msg.body)
                seq = checked[0] if checked is not None else -1
                deliveries.append(Delivery(now, name, msg.broker_name, msg.queue_id, msg.queue_offset, seq))
            return ConsumeResult.SUCCESS

        return listener

    async def join(self, slot: int) -> None:
        name = f"c{slot}#{self._incarnations}"
        self._incarnations += 1
        consumer = PushConsumer(
            self.group,
            namesrv_addr=self.namesrv_addr,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            instance_name=name,
            **self.settings,
        )
        consumer.subscribe(self.topic, "*")
        consumer.register_listener(self._listener(name))
        await consumer.start()
        self.members[slot], self.names[slot] = consumer, name
        self.changes.append((time.monotonic(), f"join {name}"))

    async def leave(self, slot: int) -> None:
        consumer, name = self.members[slot], self.names[slot]
        if consumer is None:
            return
        self.members[slot] = None
        self.changes.append((time.monotonic(), f"leave {name}"))
        await consumer.shutdown()

    async def step(self) -> str:
        """One membership change: a random slot toggles (a lone member never leaves)."""
        slot = self._rng.randrange(len(self.members))
        if self.members[slot] is not None and len(self.running) > 1:
            await self.leave(slot)
        elif self.members[slot] is None:
            await self.join(slot)
        else:
            free = [i for i, m in enumerate(self.members) if m is None]
            await self.join(self._rng.choice(free))
        return self.changes[-1][1]

    async def close(self) -> None:
        for slot in self.running:
            await self.leave(slot)

    def consumed_seqs(self) -> set[int]:
        return {d.seq for d in self.deliveries if d.seq >= 0}

    def analyse(self, expected: int, in_flight_window_s: float) -> ChurnReport:
        """Deliveries against sequence numbers 0..expected-1.

        A duplicate is explained when a membership change came within `in_flight_window_s` of its
        first delivery (before it: the old owner was still consuming what it had pulled; after it:
        the offset was not committed yet) and before its last delivery.
        """
        by_seq: dict[int, list[Delivery]] = defaultdict(list)
        corrupt = 0
        for delivery in self.deliveries:
            if delivery.seq < 0:
                corrupt += 1
            else:
                by_seq[delivery.seq].append(delivery)
        change_times = [t for t, _ in self.changes]
        duplicates = {seq: ds for seq, ds in by_seq.items() if len(ds) > 1}
        unexplained = []
        for seq, ds in duplicates.items():
            first, last = ds[0].time, ds[-1].time
            # A change that the first delivery was still in flight at: up to `window` after it.
            index = bisect.bisect_left(change_times, first - in_flight_window_s)
            until = min(last, first + in_flight_window_s)
            if not any(t <= until for t in change_times[index:]):
                unexplained.append(seq)
        return ChurnReport(
            expected=expected,
            delivered=len(self.deliveries),
            missing=sorted(set(range(expected)) - set(by_seq)),
            corrupt=corrupt,
            duplicates=duplicates,
            unexplained=sorted(unexplained),
            changes=len(self.changes),
            incarnations=self._incarnations,
        )
