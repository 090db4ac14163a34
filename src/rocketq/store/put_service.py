"""The put path: check a message, append its record, dispatch it, and say how it went (no flush wait).

Port of DefaultMessageStore.putMessage/putMessages (checkStoreStatus, checkMessage) and of the body of
CommitLog.putMessage/putMessages before the flush and replication waits (4.9.8). Statuses, not
exceptions: a bad message is MESSAGE_ILLEGAL or PROPERTIES_SIZE_EXCEEDED with a remark naming the
problem, and nothing is written. PREPARED and ROLLBACK records take queue offset 0 and get no consume
queue unit (docs/protocol.md 6.5). Hot path: one dict lookup for what is kept per topic (its record bytes,
its index key prefix, its arrival listeners; a topic is checked once, when first seen), one for the
queue, one pass to encode properties, struct.pack_into into the mapping, one unit write; no
per-message objects beyond the result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from itertools import accumulate, repeat
from operator import contains, itemgetter
from typing import Final, NamedTuple, cast

from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK
from rocketq.common.record.codec import offset_msg_ids
from rocketq.common.record.layout import MAX_PROPERTIES_BYTES
from rocketq.common.record.properties import encode_properties_bytes
from rocketq.common.tags import tags_code as tags_code_of_tag
from rocketq.store.commit_log import CommitLog, RecordTooLargeError, topic_block
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.dispatch import Dispatcher, notify_arrival
from rocketq.store.index_service import PENDING_MAX, key_prefix
from rocketq.store.mapped_file import is_disk_full
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.protocols import ArrivalListener
from rocketq.store.status import AppendResult, PutMessageStatus, PutResult

log = logging.getLogger("rocketq.store")

_UNIQ: Final = C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_KEYS: Final = C.PROPERTY_KEYS
_second = itemgetter(1)  # a batch entry's body
_third = itemgetter(2)  # a batch entry's properties
_TAGS: Final = C.PROPERTY_TAGS
_DELAY: Final = C.PROPERTY_DELAY_TIME_LEVEL
_PUT_OK: Final = PutMessageStatus.PUT_OK
_ROLLBACK: Final = int(C.MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_TOPICS_KEPT: Final = 100_000
_time_ns = time.time_ns


class _Topic(NamedTuple):
    """What the put path keeps per topic: worked out once, when the topic is first put to."""

    record_topic: bytes  # TOPICLEN + TOPIC as a record holds them
    key_prefix: int  # index key hashes continue from this String.hashCode of "topic#"
    listeners: list[ArrivalListener]  # every arrival listener for this topic's records


def illegal(status: PutMessageStatus, remark: str) -> PutResult:
    log.warning("put rejected: %s: %s", status.value, remark)
    return PutResult(status, None, remark)


class PutService:
    """Appends and dispatches; the facade adds the flush wait and the store-state checks."""

    def __init__(
        self,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        dispatcher: Dispatcher,
        now_ms: Callable[[], int],
        max_body_bytes: int,
    ) -> None:
        self.commit_log = commit_log
        self.queues = queues
        self.dispatcher = dispatcher
        self.now_ms = now_ms
        self.max_body_bytes = max_body_bytes
        self._topics: dict[str, _Topic] = {}  # valid topics only; cleared when listeners are added
        dispatcher.on_listeners_change.append(self._topics.clear)
        self._queues_get = queues.get_by_key
        self._append = commit_log.append
        self._index = dispatcher.index
        # The index's queue of records to index (see IndexService.pending), or None without an index.
        self._index_pending = dispatcher.index.pending if dispatcher.index is not None else None
        # The system clock is read inline (one call less per put); an injected clock is called.
        self._wall_clock = now_ms == SYSTEM_CLOCK.now_ms
        # What a put answers when a reservation finds the disk full (the store marks it full).
        self.on_disk_full: Callable[[OSError, str], PutResult] | None = None

    def _failed(self, exc: OSError, what: str) -> PutResult:
        """A put that could not be written (nothing of it was): disk full, or another I/O error."""
        if is_disk_full(exc) and self.on_disk_full is not None:
            return self.on_disk_full(exc, what)
        log.error("appending to the %s failed: %r", what, exc)
        return PutResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED, None, f"create mapped file failed: {exc}")

    # -- checks --------------------------------------------------------------------------------------
    def _topic(self, topic: str) -> _Topic:
        """What is kept for a topic already checked."""
        kept = self._topics.get(topic)
        if kept is None:
            kept = _Topic(topic_block(topic), key_prefix(topic), self.dispatcher.listeners_of(topic))
            if len(self._topics) >= _TOPICS_KEPT:
                self._topics.clear()
            self._topics[topic] = kept
        return kept

    def _check(self, topic: str, queue_id: int, body: bytes) -> PutResult | None:
        problem = C.topic_name_problem(topic) if topic not in self._topics else None
        if problem is not None:
            return illegal(PutMessageStatus.MESSAGE_ILLEGAL, problem)
        if queue_id < 0:
            return illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"queue id {queue_id} is negative")
        if len(body) > self.max_body_bytes:
            return illegal(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"message body of {len(body)} bytes is over maxMessageSize {self.max_body_bytes}",
            )
        return None

    # -- single ---------------------------------------------------------------------------------------
    def put(self, msg: BrokerMessage) -> PutResult:
        return self.put_run((msg,))[0]

    def put_run(self, msgs: Sequence[BrokerMessage]) -> list[PutResult]:
        """`put` of each message in turn, each its own record and result (a bad one fails alone): what
        every put reads is read once for them all, and the clock once (the records of a run share their
        store timestamp, as a batch's do)."""
        results: list[PutResult] = []
        answer = results.append
        topics_get = self._topics.get
        max_body = self.max_body_bytes
        queues_get = self._queues_get
        append = self._append
        index_pending = self._index_pending
        store_ts = _time_ns() // 1_000_000 if self._wall_clock else self.now_ms()
        for msg in msgs:
            topic = msg.topic
            queue_id = msg.queue_id
            kept = topics_get(topic)
            if kept is None or queue_id < 0 or len(msg.body) > max_body:
                bad = self._check(topic, queue_id, msg.body)
                if bad is not None:
                    answer(bad)
                    continue
                kept = self._topic(topic)
            props_dict = msg.properties
            props = msg.properties_bytes
            if props is None:
                props = encode_properties_bytes(props_dict)  # a None value is left out, as Java does
            if len(props) > MAX_PROPERTIES_BYTES:
                answer(
                    illegal(
                        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                        f"properties of {len(props)} bytes are over {MAX_PROPERTIES_BYTES}",
                    )
                )
                continue
            queue = queues_get((topic, queue_id)) or self.queues.find_or_create(topic, queue_id)
            sys_flag = msg.sys_flag
            consumable = not sys_flag & 0x4  # NOT (0x0) and COMMIT (0x8); not PREPARED (0x4), ROLLBACK (0xC)
            queue_offset = queue.max_offset if consumable else 0
            try:
                # The unit's disk space, before the record is written: prepare_room's own early return
                # (the unit is in the current file's reserved part) checked here, one call less per put.
                if consumable and queue_offset >= queue.room_limit:
                    queue.prepare_room(queue_offset)
                phys, size, msg_id = append(msg, kept.record_topic, props, queue_offset, store_ts)
            except RecordTooLargeError as exc:
                answer(illegal(PutMessageStatus.MESSAGE_ILLEGAL, str(exc)))
                continue
            except OSError as exc:
                answer(self._failed(exc, "commit log"))
                continue
            msg.store_timestamp = store_ts
            msg.commit_log_offset = phys
            msg.queue_offset = queue_offset
            tags_code = msg.tags_code
            if not tags_code and _TAGS in props_dict:
                tags_code = tags_code_of_tag(props_dict[_TAGS])
            if index_pending is not None and sys_flag & 0xC != _ROLLBACK:
                uniq_key = props_dict.get(_UNIQ)
                keys = props_dict.get(_KEYS)
                if uniq_key or keys:
                    index_pending.append((kept.key_prefix, phys, store_ts, uniq_key, keys))
                    if len(index_pending) >= PENDING_MAX:
                        self._index.drain()  # type: ignore[union-attr]
            if consumable:
                queue.put(queue_offset, phys, size, tags_code)
                if kept.listeners:
                    notify_arrival(
                        kept.listeners, topic, queue_id, queue_offset, tags_code, store_ts, props_dict
                    )
            answer(PutResult(_PUT_OK, AppendResult(phys, size, msg_id, store_ts, queue_offset, 1)))
        return results

    # -- batch ----------------------------------------------------------------------------------------
    def put_batch(self, batch: BrokerMessageBatch) -> PutResult:
        if not batch.entries:
            return illegal(PutMessageStatus.MESSAGE_ILLEGAL, "the batch has no message")
        if batch.sys_flag & 0xC:
            return illegal(PutMessageStatus.MESSAGE_ILLEGAL, "a batch cannot carry transactional messages")
        bad = self._check(batch.topic, batch.queue_id, b"")
        if bad is not None:
            return bad
        entries = batch.entries
        # Per-entry fields through C-level maps (itemgetter, dict.get, contains): a batch is ~100 entries,
        # and a Python-level loop or generator per field was a tenth of the compiled path's time (py-spy).
        dicts = list(map(_third, entries))
        if any(map(contains, dicts, repeat(_DELAY))):  # the check itself only where the property is
            for props in dicts:
                delay = props.get(_DELAY)
                if delay and delay != "0":
                    return illegal(PutMessageStatus.MESSAGE_ILLEGAL, "a batch cannot carry delayed messages")
        stored = batch.properties_bytes
        if stored is None:
            props_list = [encode_properties_bytes(props) for props in dicts]
        elif None in stored:
            props_list = [
                cut if cut is not None else encode_properties_bytes(props)
                for cut, props in zip(stored, dicts, strict=True)
            ]
        else:
            props_list = cast(list[bytes], stored)
        longest = max(map(len, props_list))
        if longest > MAX_PROPERTIES_BYTES:
            return illegal(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties of {longest} bytes are over {MAX_PROPERTIES_BYTES}",
            )
        total_body = sum(map(len, map(_second, entries)))
        if total_body > self.max_body_bytes:
            return illegal(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"batch bodies of {total_body} bytes are over maxMessageSize {self.max_body_bytes}",
            )
        queue = self.queues.find_or_create(batch.topic, batch.queue_id)
        first_offset = queue.max_offset
        store_ts = self.now_ms()
        try:
            queue.prepare_room(first_offset, len(batch.entries))
            phys, sizes, id_prefix = self.commit_log.append_batch(batch, props_list, first_offset, store_ts)
        except RecordTooLargeError as exc:
            return illegal(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        except OSError as exc:
            return self._failed(exc, "commit log")
        ids = self._dispatch_batch(batch, dicts, queue, phys, sizes, first_offset, store_ts, id_prefix)
        return PutResult(_PUT_OK, AppendResult(phys, sum(sizes), ids, store_ts, first_offset, len(sizes)))

    def _dispatch_batch(
        self,
        batch: BrokerMessageBatch,
        dicts: list[dict[str, str]],
        queue: ConsumeQueue,
        phys: int,
        sizes: list[int],
        offset: int,
        store_ts: int,
        id_prefix: str,
    ) -> str:
        """Units, index entries and arrival notices of a batch's records (never transactional; `dicts`
        their properties); returns their msgIds, comma-joined."""
        kept = self._topic(batch.topic)
        listeners = kept.listeners
        index_pending = self._index_pending
        topic, queue_id = batch.topic, batch.queue_id
        physs = list(accumulate(sizes[:-1], initial=phys))  # each record's commit-log offset
        count = len(dicts)
        tags = list(map(dict.get, dicts, repeat(_TAGS)))
        tags_codes = [tags_code_of_tag(tag) if tag else 0 for tag in tags] if any(tags) else [0] * count
        queue.put_units(offset, physs, sizes, tags_codes)
        if index_pending is not None:
            prefix = kept.key_prefix
            uniq_keys = list(map(dict.get, dicts, repeat(_UNIQ)))
            keys_of = list(map(dict.get, dicts, repeat(_KEYS)))
            if all(uniq_keys) and not any(keys_of):  # the usual batch: each entry has its UNIQ_KEY only
                index_pending.extend(zip(repeat(prefix), physs, repeat(store_ts), uniq_keys, keys_of))
            else:
                for record_phys, uniq_key, keys in zip(physs, uniq_keys, keys_of, strict=True):
                    if uniq_key or keys:
                        index_pending.append((prefix, record_phys, store_ts, uniq_key, keys))
        if listeners:
            for props, tags_code in zip(dicts, tags_codes, strict=True):
                notify_arrival(listeners, topic, queue_id, offset, tags_code, store_ts, props)
                offset += 1
        ids = offset_msg_ids(id_prefix, physs)
        if index_pending is not None and len(index_pending) >= PENDING_MAX:
            self._index.drain()  # type: ignore[union-attr]
        return ids
