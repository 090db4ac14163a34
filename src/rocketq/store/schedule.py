"""ScheduleMessageService: delivers delayed messages from SCHEDULE_TOPIC_XXXX back to their real queue.

Port of org.apache.rocketmq.store.schedule.ScheduleMessageService (4.9.8). One task per delay
level walks queue `level - 1` of SCHEDULE_TOPIC_XXXX in order; a unit's tags code is its delivery time.
A due message is re-stored into REAL_TOPIC / REAL_QID with its body, flag, sys flag, born fields and
reconsume times, and the tags code of its TAGS again. As Java does (its properties string is computed
before DELAY is cleared), the re-stored record still carries DELAY, REAL_TOPIC and REAL_QID. The per-level
progress is persisted in `config/delayOffset.json` (Java's fastjson shape, `{"offsetTable":{1:0,..}}`,
atomic write) every flushDelayOffsetInterval and at shutdown, and is clamped into the queue on load.
Deviations: a failed re-put is retried from the same offset with a growing pause (Java 4.9.8 does too
on the synchronous path; older versions dropped it); a level task sleeps until its next unit is due or
a new one arrives instead of polling every 100 ms; up to 32 due messages of a level are appended in
one go (appends stay in order; their flush waits overlap under SYNC_FLUSH).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rocketq.common import constants as C
from rocketq.common import fastjson
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.persist import atomic_write_bytes, read_with_backup
from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.service import PeriodicService, start_all, stop_all
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.store.delay import DelayLevels
from rocketq.store.message import BrokerMessage
from rocketq.store.protocols import InternalStoreAPI
from rocketq.store.reput import real_destination, reput_message
from rocketq.store.status import PutResult

log = logging.getLogger("rocketq.store.schedule")

DELIVER_BATCH = 32
FIRST_RETRY_PAUSE_MS = 100
MAX_RETRY_PAUSE_MS = 10_000
IDLE_RECHECK_MS = 30_000  # a level with nothing pending re-checks this often even without a wake-up
UNIT = CQ_UNIT.size


def delay_offset_path(store_root: Path) -> Path:
    return store_root / "config" / "delayOffset.json"


def record_to_real_queue(record: bytes) -> BrokerMessage | None:
    """The message to re-store for a stored schedule record, or None when it cannot be delivered."""
    try:
        ext = decode_record(record, decompress_body=False)[0]
    except RecordDecodeError as exc:
        log.error("a schedule record does not decode (%s); skipped", exc)
        return None
    props = dict(ext.properties)
    destination = real_destination(props)
    if destination is None or destination[0] == C.RMQ_SYS_TRANS_HALF_TOPIC:
        log.error(
            "schedule record %s has no usable REAL_TOPIC/REAL_QID (%r/%r); skipped",
            ext.offset_msg_id,
            props.get(C.PROPERTY_REAL_TOPIC),
            props.get(C.PROPERTY_REAL_QUEUE_ID),
        )
        return None
    return reput_message(ext, *destination, props)


async def put_in_order(
    put: Callable[[BrokerMessage], Awaitable[PutResult]], msgs: list[BrokerMessage]
) -> int:
    """Append `msgs` in order (each append happens before the next starts) and wait for all of them.

    Returns how many from the front were stored; a failure stops the count there (the ones after it
    may be stored too: a retry then stores them again, at-least-once as Java).
    """
    tasks = [asyncio.ensure_future(put(m)) for m in msgs]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    done = 0
    for result in results:
        if isinstance(result, BaseException) or not result.is_ok:
            break
        done += 1
    return done


class ScheduleMessageService:
    """Per-level delivery of due delayed messages, with persisted progress."""

    def __init__(
        self,
        store: InternalStoreAPI,
        levels: DelayLevels,
        offset_path: Path,
        clock: Clock = SYSTEM_CLOCK,
        *,
        persist_interval_ms: int = 10_000,
    ) -> None:
        self.store = store
        self.levels = levels
        self.path = offset_path
        self.clock = clock
        self.persist_interval_ms = persist_interval_ms
        self.offsets: dict[int, int] = {}
        self._dirty = False
        self._levels: dict[int, PeriodicService] = {}  # level -> its delivery loop
        self._services: list[PeriodicService] = []
        self._retry_pause: dict[int, int] = {}
        self.delivered = 0

    # -- progress ------------------------------------------------------------------------------------
    def load(self) -> None:
        """Read delayOffset.json (or its backup) and clamp each offset into its queue (correctDelayOffset)."""
        raw = read_with_backup(self.path)
        if raw is not None:
            try:
                table = fastjson.loads(raw).get("offsetTable") or {}
                self.offsets = {int(k): int(v) for k, v in table.items()}
            except (ValueError, AttributeError, TypeError) as exc:
                raise ValueError(f"{self.path} does not parse: {exc}") from None
        for level, offset in list(self.offsets.items()):
            queue = self.store.queues.get(C.RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            if queue is None:
                continue
            corrected = min(max(offset, queue.min_offset), queue.max_offset)
            if corrected != offset:
                log.error(
                    "delay level %d offset %d outside [%d, %d]; corrected to %d",
                    level,
                    offset,
                    queue.min_offset,
                    queue.max_offset,
                    corrected,
                )
                self.offsets[level] = corrected

    def encode(self) -> bytes:
        """The GET_ALL_DELAY_OFFSET body and the file content: `{"offsetTable":{level:offset}}`."""
        return fastjson.dumps({"offsetTable": dict(sorted(self.offsets.items()))}, unquoted_int_keys=True)

    def persist(self) -> None:
        self._dirty = False
        atomic_write_bytes(self.path, self.encode())

    def running_stats(self) -> dict[str, str]:
        """Java buildRunningStats: scheduleMessageOffset_<level> -> "<delivered>,<max offset>"."""
        stats = {}
        for level, offset in sorted(self.offsets.items()):
            top = self.store.get_max_offset_in_queue(C.RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            stats[f"scheduleMessageOffset_{level}"] = f"{offset},{top}"
        return stats

    # -- delivery --------------------------------------------------------------------------------------
    def _due_at(self, level: int, tags_code: int, now: int) -> int:
        """Java correctDeliverTimestamp: a time further away than the level's delay means now."""
        return now if tags_code > now + self.levels.delay_ms(level) else tags_code

    async def deliver_due(self, level: int) -> int | None:
        """Deliver what is due on `level`; ms until the next unit is due, or None when nothing waits."""
        queue = self.store.queues.get(C.RMQ_SYS_SCHEDULE_TOPIC, level - 1)
        if queue is None:
            return None
        offset = max(self.offsets.get(level, 0), queue.min_offset)
        while offset < queue.max_offset:
            raw = queue.units_from(offset, DELIVER_BATCH)
            if raw is None:  # no file holds it (a hole after a crash): go to the next file
                offset = self._advance(level, min(queue.roll_next_file(offset), queue.max_offset))
                continue
            now = self.clock.now_ms()
            due: list[BrokerMessage] = []
            skipped = 0  # units before the first due message that need no delivery
            wait_ms: int | None = None
            for i in range(0, len(raw), UNIT):
                phys, size, tags_code = CQ_UNIT.unpack_from(raw, i)
                at = self._due_at(level, tags_code, now)
                if at > now:
                    wait_ms = at - now
                    break
                msg = self._load(phys, size)
                if msg is None:
                    if not due:
                        skipped += 1
                        continue
                    break  # deliver what is gathered first; this one is skipped next round
                due.append(msg)
            if skipped:
                offset = self._advance(level, offset + skipped)
            if due:
                stored = await put_in_order(self.store.put_message, due)
                offset = self._advance(level, offset + stored)
                self.delivered += stored
                if stored < len(due):
                    return self._failed(level, offset)
                self._retry_pause.pop(level, None)
            if wait_ms is not None:
                return wait_ms
        return None

    def _load(self, phys: int, size: int) -> BrokerMessage | None:
        if size <= 0:
            return None
        record = self.store.select_one_message_by_offset(phys, size)
        if record is None:
            log.warning("schedule unit at commit-log offset %d is gone (cleaned up); skipped", phys)
            return None
        return record_to_real_queue(record)

    def _advance(self, level: int, offset: int) -> int:
        if self.offsets.get(level) != offset:
            self.offsets[level] = offset
            self._dirty = True
        return offset

    def _failed(self, level: int, offset: int) -> int:
        pause = self._retry_pause.get(level, FIRST_RETRY_PAUSE_MS // 2) * 2
        pause = min(pause, MAX_RETRY_PAUSE_MS)
        if level not in self._retry_pause:
            log.error(
                "delay level %d: re-storing the message at schedule offset %d failed; retrying", level, offset
            )
        self._retry_pause[level] = pause
        return pause

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.store.add_arrival_listener(self._on_arrival, C.RMQ_SYS_SCHEDULE_TOPIC)
        for level in range(1, self.levels.max_level + 1):
            self._levels[level] = PeriodicService(
                f"schedule-level-{level}", IDLE_RECHECK_MS / 1000, functools.partial(self._level_round, level),
                failure_pause_s=MAX_RETRY_PAUSE_MS / 1000,
            )  # fmt: skip
        interval = self.persist_interval_ms / 1000
        self._services = [
            *self._levels.values(),
            PeriodicService("schedule-persist", interval, self._persist_round, interval),
        ]
        await start_all(self._services)

    async def shutdown(self) -> None:
        services, self._services = self._services, []
        await stop_all(services)
        self._levels = {}
        try:
            self.persist()
        except OSError as exc:
            log.error("persisting %s failed: %s", self.path, exc)

    def _on_arrival(self, topic: str, queue_id: int, *_: Any) -> None:
        if topic == C.RMQ_SYS_SCHEDULE_TOPIC:
            service = self._levels.get(queue_id + 1)
            if service is not None:
                service.wakeup()

    async def _level_round(self, level: int) -> float | None:
        """One delivery round of a level; the seconds until its next round (None: the idle recheck)."""
        wait_ms = await self.deliver_due(level)
        if wait_ms is None:
            return None
        if level in self._retry_pause:  # a failing put: no wake-up shortcut
            await asyncio.sleep(max(wait_ms, 1) / 1000)
            return 0.0
        return max(wait_ms, 1) / 1000

    async def _persist_round(self) -> None:
        if self._dirty:
            self._dirty = False
            data = self.encode()  # on the loop: the table is only touched there
            try:
                await asyncio.get_running_loop().run_in_executor(None, atomic_write_bytes, self.path, data)
            except OSError as exc:
                log.error("persisting %s failed: %s", self.path, exc)
                self._dirty = True
