"""ProcessQueue accounting: count, size, span, the offset safe to commit, orderly take/commit/rollback."""

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.common.clock import ManualClock
from rocketq.common.message import MessageExt


def msgs(*offsets: int, size: int = 10) -> list[MessageExt]:
    return [MessageExt("T", b"x" * size, queue_offset=o) for o in offsets]


def test_put_counts_and_sizes_and_ignores_duplicates() -> None:
    pq = ProcessQueue()
    assert pq.put_messages(msgs(0, 1, 2)) is True  # first put starts a consume round
    assert pq.put_messages(msgs(2, 3)) is False  # already consuming
    assert (pq.msg_count, pq.msg_size, pq.queue_offset_max) == (4, 40, 3)
    assert pq.max_span == 3


def test_commit_offset_is_lowest_unconsumed() -> None:
    pq = ProcessQueue()
    batch = msgs(10, 11, 12, 13)
    pq.put_messages(batch)
    assert pq.remove_messages([batch[2]]) == 10  # 10 still in flight
    assert pq.remove_messages([batch[1]]) == 10
    assert pq.remove_messages([batch[0]]) == 13
    assert pq.lowest_unconsumed_offset() == 13
    assert pq.remove_messages([batch[3]]) == 14  # nothing held: one past the highest pulled
    assert pq.lowest_unconsumed_offset() is None
    assert (pq.msg_count, pq.msg_size) == (0, 0)
    assert pq.remove_messages(batch) == -1  # nothing held at all


def test_span_shrinks_from_both_ends() -> None:
    pq = ProcessQueue()
    batch = msgs(*range(100, 110))
    pq.put_messages(batch)
    assert pq.max_span == 9
    pq.remove_messages([batch[0], batch[9]])
    assert pq.max_span == 7
    pq.remove_messages(batch[1:9])
    assert pq.max_span == 0


def test_out_of_order_put_keeps_lowest() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(50, 51))
    pq.put_messages(msgs(20))
    assert pq.lowest_unconsumed_offset() == 20
    assert pq.max_span == 31


def test_max_offset_property_sets_backlog() -> None:
    pq = ProcessQueue()
    batch = msgs(5, 6)
    batch[-1].properties["MAX_OFFSET"] = "100"
    pq.put_messages(batch)
    assert pq.msg_acc_cnt == 94


def test_orderly_take_commit_rollback() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 1, 2, 3, 4))
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [0, 1]
    assert pq.lowest_unconsumed_offset() == 0  # in flight still counts
    pq.rollback()
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [0, 1, 2]
    assert pq.commit() == 3
    assert (pq.msg_count, pq.msg_size) == (2, 20)
    assert pq.commit() == -1
    rest = pq.take_messages(10)
    assert [m.queue_offset for m in rest] == [3, 4]
    pq.make_messages_to_consume_again(rest[1:])
    assert pq.commit() == 4
    assert [m.queue_offset for m in pq.take_messages(10)] == [4]
    assert pq.commit() == 5
    assert pq.take_messages(1) == []
    assert pq.consuming is False
    assert (pq.msg_count, pq.msg_size) == (0, 0)


def test_clear_and_expiry_on_manual_clock() -> None:
    clock = ManualClock()
    pq = ProcessQueue(generation=3, clock=clock)
    pq.put_messages(msgs(1, 2))
    pq.clear()
    assert (pq.msg_count, pq.msg_size, pq.has_temp_message()) == (0, 0, False)
    pq.mark_locked()
    clock.advance(30_001)
    assert pq.is_lock_expired(30_000)
    assert pq.is_pull_expired(30_000)
    pq.mark_pulled()
    assert not pq.is_pull_expired(30_000)
    assert "gen=3" in repr(pq)


def test_held_messages_sorted() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(3, 4))
    pq.put_messages(msgs(1))
    assert [m.queue_offset for m in pq.held_messages()] == [1, 3, 4]
