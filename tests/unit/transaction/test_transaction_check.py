"""The check-back service on a ManualClock: when a producer is asked, what it is sent, what an answer
does, the immunity time, too many checks, and the progress kept across a restart."""

from __future__ import annotations

from pathlib import Path

from transaction_fakes import COMMIT, GROUP, ROLLBACK, UNKNOWN, Broker

from rocketq.broker.transaction.bridge import TRANS_GROUP
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.headers.transaction import CheckTransactionStateRequestHeader

HALF, OP, REAL = C.RMQ_SYS_TRANS_HALF_TOPIC, C.RMQ_SYS_TRANS_OP_HALF_TOPIC, "TopicTx"
TIMEOUT_MS = 6_000


def half_progress(broker: Broker) -> int:
    return broker.ctx.consumer_offset_manager.query_offset(TRANS_GROUP, HALF, 0)


async def test_a_young_half_message_is_not_checked(broker: Broker, clock: ManualClock) -> None:
    broker.register_producer()
    await broker.send_half()
    clock.advance(TIMEOUT_MS - 1)
    report = await broker.checker.check_once()
    assert report.checked == [] and broker.sent_checks == []
    assert half_progress(broker) == -1  # nothing passed


async def test_an_unresolved_half_message_is_checked_with_its_new_copy(
    broker: Broker, clock: ManualClock
) -> None:
    conn = broker.register_producer()
    sent = await broker.send_half(queue_id=3, body=b"pay")
    clock.advance(TIMEOUT_MS + 1)
    report = await broker.checker.check_once()
    [(to, check)] = broker.sent_checks
    assert to is conn and check.code == RequestCode.CHECK_TRANSACTION_STATE and check.is_oneway
    header = CheckTransactionStateRequestHeader.from_ext_fields(check.ext_fields)
    copy = report.checked[0]
    assert header.tran_state_table_offset == copy.queue_offset == 1
    assert (
        header.commit_log_offset
        == copy.commit_log_offset
        != parse_offset_msg_id((sent.ext_fields or {})["msgId"])[2]
    )
    assert header.msg_id == header.transaction_id == copy.properties["UNIQ_KEY"]
    assert header.offset_msg_id == copy.offset_msg_id
    [msg] = decode_records(check.body)
    assert msg.topic == REAL and msg.queue_id == 3 and msg.body == b"pay"
    assert msg.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] == "1"
    assert msg.properties[C.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] == "0"
    assert half_progress(broker) == 1  # the original passed; the copy waits for the next round
    # The checker's answer commits the copy: visible once, and never asked about again.
    resp = await broker.answer_check(check, COMMIT)
    assert resp is not None and resp.code == 0
    assert [m.body for m in broker.read(REAL, 3)] == [b"pay"]
    clock.advance(60_000)
    report = await broker.checker.check_once()
    assert report.checked == [] and report.settled == 1 and len(broker.sent_checks) == 1
    assert half_progress(broker) == 2
    assert broker.ctx.consumer_offset_manager.query_offset(TRANS_GROUP, OP, 0) == 2  # both ops passed


async def test_an_answer_crossing_the_producers_own_commit_changes_nothing(
    broker: Broker, clock: ManualClock
) -> None:
    broker.register_producer()
    sent = await broker.send_half()
    clock.advance(TIMEOUT_MS + 1)
    await broker.checker.check_once()
    [(_conn, check)] = broker.sent_checks
    await broker.end(sent, COMMIT)  # the producer's late first END_TRANSACTION (original offsets)
    await broker.answer_check(check, COMMIT)  # and its checker's answer (the copy's offsets)
    await broker.answer_check(check, ROLLBACK)
    assert len(broker.read(REAL, 2)) == 1
    clock.advance(60_000)
    assert (await broker.checker.check_once()).checked == []


async def test_settled_and_unknown_messages_in_one_walk(broker: Broker, clock: ManualClock) -> None:
    broker.register_producer()
    a, b, c = await broker.send_half(), await broker.send_half(), await broker.send_half()
    await broker.end(a, COMMIT)
    await broker.end(c, ROLLBACK)
    await broker.end(b, UNKNOWN)
    clock.advance(TIMEOUT_MS + 1)
    report = await broker.checker.check_once()
    assert [m.properties["UNIQ_KEY"] for m in report.checked] == [broker.read(HALF)[1].properties["UNIQ_KEY"]]
    assert report.settled == 2 and half_progress(broker) == 3


async def test_too_many_checks_keep_it_in_the_check_max_time_topic_and_a_late_commit_publishes(
    broker: Broker, clock: ManualClock
) -> None:
    await broker.send_half(body=b"lost")  # transactionCheckMax=3 in this fixture; no producer at all
    rounds = []
    for _ in range(5):
        clock.advance(60_000)
        rounds.append(await broker.checker.check_once())
    assert [r.unasked for r in rounds] == [1, 1, 1, 0, 0]
    assert [r.discarded for r in rounds] == [0, 0, 0, 1, 0]
    [kept] = broker.read(C.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
    assert kept.body == b"lost" and kept.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] == "3"
    assert kept.properties[C.PROPERTY_REAL_TOPIC] == REAL
    # Java's resolveDiscardMsg writes no op message: the half message is only never checked again ...
    assert broker.read(OP) == []
    conn = broker.register_producer()
    clock.advance(60_000)
    assert (await broker.checker.check_once()).unasked == 0 and broker.sent_checks == [] and conn.sent == []
    # ... and the producer's late COMMIT (of the copy the last check named) still publishes it.
    answer = await broker.end(None, COMMIT, offset=3, phy=broker.read(HALF)[3].commit_log_offset)
    assert answer is not None and answer.code == 0
    [published] = broker.read(REAL, 2)
    assert published.body == b"lost"
    assert {op.body for op in broker.read(OP)} == {b"0", b"3"}  # the copy and the first half message settled


async def test_checks_go_to_a_live_producer_of_the_group(broker: Broker, clock: ManualClock) -> None:
    broker.register_producer("other_group")
    gone = broker.register_producer()
    gone.is_active = False
    await broker.send_half()
    clock.advance(TIMEOUT_MS + 1)
    assert (await broker.checker.check_once()).unasked == 1
    alive = broker.register_producer()
    clock.advance(60_000)
    await broker.checker.check_once()
    assert [conn for conn, _ in broker.sent_checks] == [alive]


async def test_immunity_time_defers_the_first_check_without_counting(
    broker: Broker, clock: ManualClock
) -> None:
    broker.register_producer()
    await broker.send_half(CHECK_IMMUNITY_TIME_IN_SECONDS="30")
    after = await broker.send_half()
    clock.advance(10_000)
    report = await broker.checker.check_once()
    assert report.immune == 1 and len(report.checked) == 1  # the one behind it is not held up
    assert report.checked[0].properties["UNIQ_KEY"] == broker.read(HALF)[1].properties["UNIQ_KEY"]
    clock.advance(25_000)
    report = await broker.checker.check_once()
    immune_copy = next(
        m for m in report.checked if m.properties.get(C.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
    )
    assert immune_copy.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] == "1"
    assert immune_copy.properties[C.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] == "0"
    await broker.end(after, COMMIT)


async def test_the_check_progress_survives_a_restart(
    broker: Broker, clock: ManualClock, tmp_path: Path
) -> None:
    broker.register_producer()
    for _ in range(3):
        await broker.send_half()
    clock.advance(TIMEOUT_MS + 1)
    await broker.checker.check_once()
    checks = [cmd for _conn, cmd in broker.sent_checks]
    assert len(checks) == 3
    await broker.answer_check(checks[0], COMMIT)
    broker.ctx.consumer_offset_manager.persist()
    # A new broker over the same store and config directory.
    again = Broker(broker.store, clock, tmp_path / "config", transactionCheckMax=3)
    assert await again.service.load() == 2  # the op for the copy and for the first half message
    again.register_producer()
    assert again.ctx.consumer_offset_manager.query_offset(TRANS_GROUP, HALF, 0) == 3
    clock.advance(60_000)
    report = await again.checker.check_once()
    assert report.settled == 1 and len(report.checked) == 2
    assert all(m.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] == "2" for m in report.checked)
    for _conn, check in again.sent_checks:
        await again.answer_check(check, COMMIT)
    assert len(again.read(REAL, 2)) == 3
    clock.advance(60_000)
    assert (await again.checker.check_once()).checked == []
    assert GROUP  # the producer group every check went to
