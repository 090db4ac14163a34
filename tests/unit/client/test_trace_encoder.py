"""TraceDataEncoder's text format (RocketMQ 4.9.8): our records match Java's byte for byte, and Java's decode."""

from __future__ import annotations

from rocketq.client.trace.encoder import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode,
    encode,
)

A, B = "\x01", "\x02"
MSG_ID = "7F00000100002A9F0000000000000001"
OFFSET_ID = "7F00000100002A9F00000000000001A2"


def test_pub_record_is_java_field_order_with_null_for_missing_strings() -> None:
    bean = TraceBean(topic="T", msg_id=MSG_ID, offset_msg_id=OFFSET_ID, tags=None, keys="k1 k2",
                     store_host="127.0.0.1:10911", body_length=11, msg_type=TraceMessageType.Normal_Msg)  # fmt: skip
    ctx = TraceContext(
        TraceType.Pub, 1700000000000, "DefaultRegion", "pg", cost_time=5, success=True, beans=[bean]
    )
    text, keys = encode(ctx)
    assert text == A.join(["Pub", "1700000000000", "DefaultRegion", "pg", "T", MSG_ID, "null", "k1 k2",
                           "127.0.0.1:10911", "11", "5", "0", OFFSET_ID, "true"]) + B  # fmt: skip
    assert keys == [MSG_ID, "k1", "k2"]


def test_sub_before_and_sub_after_one_record_per_message() -> None:
    beans = [TraceBean(msg_id="ID1", keys="k", retry_times=2), TraceBean(msg_id="ID2", keys=None)]
    before = TraceContext(TraceType.SubBefore, 1700000000001, "R", "cg", request_id="REQ", beans=beans)
    after = TraceContext(TraceType.SubAfter, 1700000000009, "R", "cg", cost_time=4, success=False, request_id="REQ",
                         context_code=int(ConsumeReturnType.FAILED), beans=beans)  # fmt: skip
    assert encode(before)[0] == (
        A.join(["SubBefore", "1700000000001", "R", "cg", "REQ", "ID1", "2", "k"])
        + B
        + A.join(["SubBefore", "1700000000001", "R", "cg", "REQ", "ID2", "0", "null"])
        + B
    )
    assert encode(after)[0] == (
        A.join(["SubAfter", "REQ", "ID1", "4", "false", "k", "4", "1700000000009", "cg"])
        + B
        + A.join(["SubAfter", "REQ", "ID2", "4", "false", "null", "4", "1700000000009", "cg"])
        + B
    )


def test_end_transaction_record() -> None:
    bean = TraceBean(topic="T", msg_id=MSG_ID, tags="t", keys="k", store_host="h:1", msg_type=TraceMessageType.Trans_msg_Commit,
                     transaction_id=MSG_ID, transaction_state="COMMIT_MESSAGE", from_transaction_check=False)  # fmt: skip
    text, _ = encode(TraceContext(TraceType.EndTransaction, 1, "DefaultRegion", "tg", beans=[bean]))
    assert text == A.join(["EndTransaction", "1", "DefaultRegion", "tg", "T", MSG_ID, "t", "k", "h:1", "2", MSG_ID,
                           "COMMIT_MESSAGE", "false"]) + B  # fmt: skip
    (back,) = decode(text)
    assert (
        back.beans[0].transaction_state == "COMMIT_MESSAGE"
        and back.beans[0].msg_type is TraceMessageType.Trans_msg_Commit
    )


def test_decodes_what_java_clients_write_old_and_new_pub_lengths_and_skips_damage() -> None:
    # A body as a Java client's AsyncTraceDispatcher writes it: several records, each ended by \x02.
    pub13 = A.join(
        ["Pub", "10", "R", "pg", "T", "ID1", "t", "k", "h:1", "3", "7", "3", "true"]
    )  # no offsetMsgId
    pub15 = A.join(
        ["Pub", "11", "R", "pg", "T", "ID2", "t", "k", "h:1", "3", "7", "1", "OFF", "false", "10.0.0.1"]
    )
    sub_after_old = A.join(["SubAfter", "REQ", "ID1", "2", "true", "k"])  # before contextCode was added
    body = pub13 + B + "Pub" + A + "broken" + B + pub15 + B + sub_after_old + B
    pub_a, pub_b, after = decode(body)
    assert (pub_a.beans[0].msg_id, pub_a.success, pub_a.beans[0].msg_type) == (
        "ID1",
        True,
        TraceMessageType.Delay_Msg,
    )
    assert (pub_b.beans[0].offset_msg_id, pub_b.success, pub_b.beans[0].client_host) == (
        "OFF",
        False,
        "10.0.0.1",
    )
    assert (after.cost_time, after.context_code, after.group_name) == (2, 0, "")


def test_round_trip() -> None:
    bean = TraceBean(topic="T", msg_id="ID", offset_msg_id="OFF", tags="a", keys="k", store_host="h:1", body_length=3,
                     msg_type=TraceMessageType.Trans_Msg_Half)  # fmt: skip
    ctx = TraceContext(TraceType.Pub, 5, "R", "g", cost_time=9, success=False, beans=[bean])
    (back,) = decode(encode(ctx)[0])
    assert back == ctx
