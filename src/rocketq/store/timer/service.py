"""TimerMessageService: timer messages (an absolute delivery time) parked, then delivered when due.

Port of the behaviour of RocketMQ 5's TimerMessageStore with our own structure (see bucket_log.py).
The broker parks a timer message in `rmq_sys_wheel_timer` queue 0 (`redirect_to_timer`: TIMER_OUT_MS,
REAL_TOPIC, REAL_QID added, as HookUtils.transformTimerMessage); this service
1. ingests the parked messages in queue order: one already due is delivered at once, the others are
   appended to the bucket file of their window (a minute of delivery time by default);
2. keeps only the current window in memory, as a heap by (deliver ms, commit-log offset), and
   delivers each entry when due to REAL_TOPIC / REAL_QID (body, flag, sys flag, born fields, reconsume
   times and TAGS hash kept; TIMER_DEQUEUE_MS added; REAL_TOPIC / REAL_QID left in the record as
   RocketMQ 5 does);
3. moves to the next window once the current one is past and drained, deleting its file;
4. persists a checkpoint (ingest offset, window, last delivered entry) at most every
   flush interval, after fsyncing the bucket files written since the last one.
After a restart it resumes from the checkpoint: entries of the current window up to the last delivered
one are skipped, anything ingested or delivered after the checkpoint is ingested (de-duplicated) or
delivered again: nothing is lost, a crash may repeat up to one flush interval of deliveries.
Deviation: RocketMQ rounds the delivery time down to timerPrecisionMs (delivering up to that early);
here a message is never delivered before its time, and at most about one precision late.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
from pathlib import Path
from typing import Any

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageExt
from rocketq.common.persist import atomic_write_bytes, read_with_backup
from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.service import PeriodicService, start_all, stop_all
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.store.message import BrokerMessage
from rocketq.store.protocols import InternalStoreAPI
from rocketq.store.reput import real_destination, reput_message
from rocketq.store.schedule import put_in_order
from rocketq.store.timer.bucket_log import TimerBucketLog, TimerEntry
from rocketq.store.timer.redirect import PROPERTY_TIMER_DEQUEUE_MS, PROPERTY_TIMER_OUT_MS, TIMER_TOPIC

log = logging.getLogger("rocketq.store.timer")

INGEST_CHUNK = 64
DELIVER_BATCH = 32
FAILURE_PAUSE_MS = 1_000
UNIT = CQ_UNIT.size


def message_to_real_queue(ext: MessageExt, now_ms: int) -> BrokerMessage | None:
    props = dict(ext.properties)
    destination = real_destination(props)
    if destination is None:
        log.error("timer message %s has no usable REAL_TOPIC/REAL_QID; skipped", ext.offset_msg_id)
        return None
    props[PROPERTY_TIMER_DEQUEUE_MS] = str(now_ms)
    return reput_message(ext, *destination, props)


class TimerMessageService:
    def __init__(
        self,
        store: InternalStoreAPI,
        root: Path,
        clock: Clock = SYSTEM_CLOCK,
        *,
        precision_ms: int = 1_000,
        window_ms: int = 60_000,
        flush_interval_ms: int = 1_000,
    ) -> None:
        self.store = store
        self.clock = clock
        self.precision_ms = precision_ms
        self.flush_interval_ms = flush_interval_ms
        self.buckets = TimerBucketLog(root / "timerlog", window_ms)
        self.checkpoint_path = root / "config" / "timerCheckpoint.json"
        self.ingest_offset = 0
        self.window: int | None = None
        self.last_delivered: tuple[int, int] = (0, -1)
        self._heap: list[TimerEntry] = []
        self._in_heap: set[int] = set()
        self._dirty = False
        self._delivery: PeriodicService | None = None  # the delivery loop, woken by arrivals
        self._services: list[PeriodicService] = []
        self.delivered = 0

    # -- checkpoint ----------------------------------------------------------------------------------
    def load(self) -> None:
        raw = read_with_backup(self.checkpoint_path)
        if raw is not None:
            try:
                data = json.loads(raw)
                self.ingest_offset = int(data.get("ingestOffset", 0))
                window = data.get("window")
                self.window = int(window) if window is not None else None
                ms, phys = data.get("lastDelivered", [0, -1])
                self.last_delivered = (int(ms), int(phys))
            except (ValueError, TypeError, AttributeError) as exc:
                raise ValueError(f"{self.checkpoint_path} does not parse: {exc}") from None
        queue = self.store.queues.get(TIMER_TOPIC, 0)
        if queue is not None:
            self.ingest_offset = min(max(self.ingest_offset, queue.min_offset), queue.max_offset)
        if self.window is not None:
            self._load_window()

    def encode(self) -> bytes:
        return json.dumps(
            {
                "ingestOffset": self.ingest_offset,
                "window": self.window,
                "lastDelivered": list(self.last_delivered),
            }
        ).encode()

    def persist(self) -> None:
        self._dirty = False
        self.buckets.flush()
        atomic_write_bytes(self.checkpoint_path, self.encode())

    @property
    def in_memory(self) -> int:
        return len(self._heap)

    # -- one round -----------------------------------------------------------------------------------
    async def run_once(self) -> int | None:
        """Roll windows, ingest new timer messages, deliver what is due; ms until there is more to do."""
        now = self.clock.now_ms()
        self._advance(now)
        pause = await self._ingest(now)
        if pause is not None:
            return pause
        return await self._deliver(now)

    def _advance(self, now: int) -> None:
        now_window = self.buckets.window_of(now)
        if self.window is None:
            on_disk = self.buckets.windows()
            self._enter(min(on_disk[0], now_window) if on_disk else now_window)
        assert self.window is not None
        while not self._heap and self.window < now_window:
            self.buckets.drop(self.window)
            later = self.buckets.next_window_after(self.window)
            self._enter(min(later, now_window) if later is not None else now_window)

    def _enter(self, window: int) -> None:
        if window != self.window:
            self.window = window
            self.last_delivered = (0, -1)
            self._dirty = True
        self._load_window()

    def _load_window(self) -> None:
        assert self.window is not None
        self._heap = [
            e for e in self.buckets.load(self.window) if (e.deliver_ms, e.phys_offset) > self.last_delivered
        ]
        heapq.heapify(self._heap)
        self._in_heap = {e.phys_offset for e in self._heap}

    def _push(self, entry: TimerEntry) -> None:
        if entry.phys_offset not in self._in_heap:
            self._in_heap.add(entry.phys_offset)
            heapq.heappush(self._heap, entry)

    def _read(self, phys: int, size: int) -> MessageExt | None:
        record = self.store.select_one_message_by_offset(phys, size) if size > 0 else None
        if record is None:
            return None
        try:
            return decode_record(record, decompress_body=False)[0]
        except RecordDecodeError as exc:
            log.error("a parked timer record at %d does not decode (%s); skipped", phys, exc)
            return None

    async def _ingest(self, now: int) -> int | None:
        queue = self.store.queues.get(TIMER_TOPIC, 0)
        if queue is None:
            return None
        offset = max(self.ingest_offset, queue.min_offset)
        while offset < queue.max_offset:
            raw = queue.units_from(offset, INGEST_CHUNK)
            if raw is None:
                offset = self._ingested(min(queue.roll_next_file(offset), queue.max_offset))
                continue
            parked: list[TimerEntry] = []
            due: list[BrokerMessage] = []
            for i in range(0, len(raw), UNIT):
                phys, size, _tags = CQ_UNIT.unpack_from(raw, i)
                ext = self._read(phys, size)
                if ext is None:
                    continue
                entry = self._entry(ext, phys, size)
                if phys in self._in_heap:
                    continue  # re-ingested after a restart: already waiting in the current window
                if entry.deliver_ms <= now or self.buckets.window_of(entry.deliver_ms) < (self.window or 0):
                    msg = message_to_real_queue(ext, now)
                    if msg is not None:
                        due.append(msg)
                else:
                    parked.append(entry)
            self.buckets.append(parked)
            for entry in parked:
                if self.buckets.window_of(entry.deliver_ms) == self.window:
                    self._push(entry)
            if due:
                stored = await put_in_order(self.store.put_message, due)
                self.delivered += stored
                if stored < len(due):
                    log.error("delivering a due timer message failed; retrying in %d ms", FAILURE_PAUSE_MS)
                    return FAILURE_PAUSE_MS
            offset = self._ingested(offset + len(raw) // UNIT)
        return None

    def _entry(self, ext: MessageExt, phys: int, size: int) -> TimerEntry:
        try:
            deliver_ms = int(ext.properties.get(PROPERTY_TIMER_OUT_MS, "0"))
        except ValueError:
            deliver_ms = 0  # unreadable: deliver at once rather than never
        return TimerEntry(deliver_ms, phys, size)

    def _ingested(self, offset: int) -> int:
        if offset != self.ingest_offset:
            self.ingest_offset = offset
            self._dirty = True
        return offset

    async def _deliver(self, now: int) -> int | None:
        while self._heap and self._heap[0].deliver_ms <= now:
            batch: list[tuple[TimerEntry, BrokerMessage | None]] = []
            while self._heap and self._heap[0].deliver_ms <= now and len(batch) < DELIVER_BATCH:
                entry = heapq.heappop(self._heap)
                self._in_heap.discard(entry.phys_offset)
                ext = self._read(entry.phys_offset, entry.size)
                batch.append((entry, message_to_real_queue(ext, now) if ext is not None else None))
            msgs = [m for _, m in batch if m is not None]
            stored = await put_in_order(self.store.put_message, msgs)
            self.delivered += stored
            kept = 0
            for entry, msg in batch:
                if msg is not None:
                    if kept >= stored:
                        self._push(entry)  # not stored: tried again next round
                        continue
                    kept += 1
                self.last_delivered = (entry.deliver_ms, entry.phys_offset)
                self._dirty = True
            if stored < len(msgs):
                log.error("delivering a timer message failed; retrying in %d ms", FAILURE_PAUSE_MS)
                return FAILURE_PAUSE_MS
        assert self.window is not None
        until_window_end = self.buckets.window_end_ms(self.window) - now
        if self._heap:
            return max(1, min(self._heap[0].deliver_ms - now, until_window_end))
        return max(1, until_window_end)

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        # Never sleep longer than the precision: a wall-clock jump is noticed that soon.
        precision_s = self.precision_ms / 1000
        self._delivery = PeriodicService(
            "timer-deliver",
            precision_s,
            self._deliver_round,
            failure_pause_s=min(FAILURE_PAUSE_MS / 1000, precision_s),
        )
        self.store.add_arrival_listener(self._on_arrival, TIMER_TOPIC)
        flush_s = self.flush_interval_ms / 1000
        self._services = [
            self._delivery,
            PeriodicService("timer-persist", flush_s, self._persist_round, flush_s),
        ]
        await start_all(self._services)

    async def shutdown(self) -> None:
        services, self._services = self._services, []
        await stop_all(services)
        try:
            self.persist()
        except OSError as exc:
            log.error("persisting the timer checkpoint failed: %s", exc)

    def _on_arrival(self, topic: str, *_: Any) -> None:
        if topic == TIMER_TOPIC and self._delivery is not None:
            self._delivery.wakeup()

    async def _deliver_round(self) -> float:
        wait_ms = await self.run_once()
        return min(wait_ms if wait_ms is not None else self.precision_ms, self.precision_ms) / 1000

    async def _persist_round(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        windows = self.buckets.take_unflushed()
        data = self.encode()
        try:
            await asyncio.get_running_loop().run_in_executor(None, self._write_checkpoint, windows, data)
        except OSError as exc:
            log.error("persisting the timer checkpoint failed: %s", exc)
            self._dirty = True

    def _write_checkpoint(self, windows: set[int], data: bytes) -> None:
        self.buckets.flush(windows)
        atomic_write_bytes(self.checkpoint_path, data)
