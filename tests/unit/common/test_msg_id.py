import pytest

from rocketq.common.msg_id import UniqueIdGenerator, create_offset_msg_id, parse_offset_msg_id


def test_offset_msg_id_matches_protocol_example() -> None:
    assert create_offset_msg_id("192.168.0.20", 10911, 123456) == "C0A8001400002A9F000000000001E240"
    assert parse_offset_msg_id("C0A8001400002A9F000000000001E240") == ("192.168.0.20", 10911, 123456)


def test_offset_msg_id_ipv6_is_56_hex_digits() -> None:
    mid = create_offset_msg_id("::1", 10911, 7)
    assert len(mid) == 56
    assert parse_offset_msg_id(mid) == ("::1", 10911, 7)


def test_parse_rejects_other_lengths() -> None:
    with pytest.raises(ValueError):
        parse_offset_msg_id("ABC")


def test_parse_refuses_a_client_message_id() -> None:
    # A UNIQ_KEY is 32 hex digits too; its pid and random digits stand where the port would be, so it
    # must not be taken for an address to dial (the dashboard's "offset message id" field, say).
    uniq = "0A000001" + "1F2B" + "6D830E87" + "E8000000" + "0040"
    with pytest.raises(ValueError, match=r"port .* out of range"):
        parse_offset_msg_id(uniq)
    with pytest.raises(ValueError, match="port 0 out of range"):
        parse_offset_msg_id("7F000001" + "00000000" + "0000000000000000")
    with pytest.raises(ValueError, match="negative commit-log offset"):
        parse_offset_msg_id("7F000001" + "00002A9F" + "FFFFFFFFFFFFFFFF")


def test_unique_ids_are_unique_and_32_hex() -> None:
    gen = UniqueIdGenerator("10.0.0.1")
    ids = {gen.next_id(1_700_000_000_000) for _ in range(5000)}
    assert len(ids) == 5000
    assert all(len(i) == 32 and i.startswith("0A000001") for i in ids)


def test_unique_id_keeps_16_bits_of_the_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    # (short) UtilAll.getPid() in MessageClientIDSetter: bit 15 of the pid is kept, not masked away
    monkeypatch.setattr("os.getpid", lambda: 0x1ABCD)
    assert UniqueIdGenerator("10.0.0.1").next_id(1_700_000_000_000)[8:12] == "ABCD"


def test_two_generators_in_one_process_differ() -> None:
    a, b = UniqueIdGenerator(), UniqueIdGenerator()
    assert a.next_id(1_700_000_000_000) != b.next_id(1_700_000_000_000)


def test_unique_id_tail_is_time_in_month_and_the_counter_as_a_java_short() -> None:
    import datetime
    import struct

    gen = UniqueIdGenerator("10.0.0.1")
    now = 1_700_000_000_000
    month_start = datetime.datetime.fromtimestamp(now / 1000).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    since = now - int(month_start.timestamp() * 1000)
    for counter in range(0x10002):  # past 0x7FFF (a negative short) and past the 16-bit wrap
        got = gen.next_id(now)
        c = counter & 0xFFFF
        want = struct.pack(">Ih", since, c - 0x10000 if c >= 0x8000 else c).hex().upper()
        if counter in (0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x10001):
            assert got[-12:] == want
    # a later month rolls the time base: the time part starts again near zero
    next_month = int((month_start + datetime.timedelta(days=40)).replace(day=1).timestamp() * 1000)
    assert gen.next_id(next_month + 5)[-12:-4] == "00000005"


def test_the_counter_is_its_low_16_bits_as_4_hex_digits_and_wraps() -> None:
    import itertools

    gen = UniqueIdGenerator("10.0.0.1")
    gen._counter = itertools.count(0xFFFD)
    tails = [gen.next_id(1_700_000_000_000)[-4:] for _ in range(5)]
    assert tails == ["FFFD", "FFFE", "FFFF", "0000", "0001"]
    gen._counter = itertools.count(0x1A2B + 0x70000)
    assert gen.next_id(1_700_000_000_000)[-4:] == "1A2B"
