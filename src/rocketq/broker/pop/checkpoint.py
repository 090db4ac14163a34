"""The POP bookkeeping records: a checkpoint per pop of one queue, an ack per message, a done mark.

Ports of org.apache.rocketmq.store.pop.{PopCheckPoint, AckMsg} (RocketMQ 5) with their JSON field names
(`so` start offset, `pt` pop time, `it` invisible time, `bm` bit map, `n` num, `q` queue id, `t` topic,
`c` consumer group, `ro` revive offset, `d` queue-offset diffs, `bn` broker name; an ack adds `ao`). They
are stored as messages of the revive topic `rmq_sys_REVIVE_LOG_<cluster>` (tags `ck`, `ack`, and our
`done`, written when a timed-out checkpoint has been revived) so that they survive a restart with the
commit log. A checkpoint is known by (group, topic, queue id, start offset, pop time): exactly what a
receipt handle (extraInfo) carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

REVIVE_TOPIC_PREFIX: Final = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP: Final = "CID_RMQ_SYS_REVIVE_GROUP"
CK_TAG: Final = "ck"
ACK_TAG: Final = "ack"
DONE_TAG: Final = "done"


def revive_topic(cluster: str) -> str:
    """PopAckConstants.buildClusterReviveTopic."""
    return REVIVE_TOPIC_PREFIX + cluster


class CkKey(NamedTuple):
    group: str
    topic: str
    queue_id: int
    start_offset: int
    pop_time: int


@dataclass(slots=True)
class PopCheckPoint:
    cid: str
    topic: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    queue_offset_diff: list[int] = field(default_factory=list)
    broker_name: str = ""
    bit_map: int = 0
    revive_offset: int = -1  # queue offset of this checkpoint in the revive log

    @property
    def num(self) -> int:
        return len(self.queue_offset_diff)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> CkKey:
        return CkKey(self.cid, self.topic, self.queue_id, self.start_offset, self.pop_time)

    def offset_at(self, index: int) -> int:
        return self.start_offset + self.queue_offset_diff[index]

    def index_of(self, queue_offset: int) -> int | None:
        try:
            return self.queue_offset_diff.index(queue_offset - self.start_offset)
        except ValueError:
            return None

    @property
    def end_offset(self) -> int:
        """The queue offset after the last message of this pop."""
        return self.start_offset + (max(self.queue_offset_diff) + 1 if self.queue_offset_diff else 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "bm": self.bit_map, "bn": self.broker_name, "c": self.cid, "d": self.queue_offset_diff,
            "it": self.invisible_time, "n": self.num, "pt": self.pop_time, "q": self.queue_id,
            "ro": self.revive_offset, "so": self.start_offset, "t": self.topic,
        }  # fmt: skip

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> PopCheckPoint:
        diffs = [int(d) for d in obj.get("d") or []] or list(range(int(obj.get("n", 0))))
        return cls(
            cid=str(obj["c"]), topic=str(obj["t"]), queue_id=int(obj["q"]), start_offset=int(obj["so"]),
            pop_time=int(obj["pt"]), invisible_time=int(obj["it"]), queue_offset_diff=diffs,
            broker_name=str(obj.get("bn") or ""), bit_map=int(obj.get("bm", 0)), revive_offset=int(obj.get("ro", -1)),
        )  # fmt: skip


@dataclass(slots=True)
class AckMsg:
    """An ack of one message of a checkpoint (also the body of our `done` mark, with ack_offset -1)."""

    consumer_group: str
    topic: str
    queue_id: int
    start_offset: int
    pop_time: int
    ack_offset: int = -1
    broker_name: str = ""

    @property
    def key(self) -> CkKey:
        return CkKey(self.consumer_group, self.topic, self.queue_id, self.start_offset, self.pop_time)

    def to_json(self) -> dict[str, Any]:
        return {
            "ao": self.ack_offset, "bn": self.broker_name, "c": self.consumer_group, "pt": self.pop_time,
            "q": self.queue_id, "so": self.start_offset, "t": self.topic,
        }  # fmt: skip

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> AckMsg:
        return cls(
            consumer_group=str(obj["c"]), topic=str(obj["t"]), queue_id=int(obj["q"]), start_offset=int(obj["so"]),
            pop_time=int(obj["pt"]), ack_offset=int(obj.get("ao", -1)), broker_name=str(obj.get("bn") or ""),
        )  # fmt: skip


def encode(record: PopCheckPoint | AckMsg) -> bytes:
    return json.dumps(record.to_json(), separators=(",", ":")).encode()


def decode(tag: str | None, body: bytes) -> PopCheckPoint | AckMsg | None:
    """The record of a revive-log message by its tag; None for a tag or body that is not ours."""
    try:
        obj = json.loads(body)
        if tag == CK_TAG:
            return PopCheckPoint.from_json(obj)
        if tag in (ACK_TAG, DONE_TAG):
            return AckMsg.from_json(obj)
    except (ValueError, KeyError, TypeError):
        return None
    return None
