"""Connection against a captured transport: decoding, bad frames, write coalescing, flow control, idle."""

from __future__ import annotations

import asyncio
import struct

import pytest
from transport_doubles import FakeOwner, MockTransport

from rocketq.remoting.errors import RemotingConnectError, RemotingSendRequestError
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import FrameDecoder, encode_frame
from rocketq.remoting.transport.admission import READ_TURN_BYTES
from rocketq.remoting.transport.connection import Connection, format_addr


def _cmds(n: int, body: bytes = b"") -> list[RemotingCommand]:
    return [RemotingCommand.request(10, {"i": str(i)}, body) for i in range(n)]


def _decode_all(data: bytes) -> list[RemotingCommand]:
    return FrameDecoder().feed(data)


async def test_addresses_and_socket_settings(
    conn: Connection, transport: MockTransport, owner: FakeOwner
) -> None:
    assert (conn.remote_addr, conn.local_addr) == ("10.0.0.7:51234", "127.0.0.1:10911")
    assert transport.limits == (1000, 100)
    assert conn.is_active and conn.is_writable and owner.events == ["made"]
    assert format_addr(("::1", 9876, 0, 0)) == "::1:9876" and format_addr(None) == ""
    assert "10.0.0.7:51234" in repr(conn)


async def test_frames_split_anyhow_arrive_in_order(conn: Connection, owner: FakeOwner) -> None:
    sent = _cmds(3, b"body")
    data = b"".join(encode_frame(c) for c in sent)
    for i in range(len(data)):  # one byte at a time
        conn.data_received(data[i : i + 1])
    received = [c for batch in owner.batches for c in batch]
    assert [(c.opaque, c.ext_fields, c.body) for c in received] == [
        (c.opaque, c.ext_fields, c.body) for c in sent
    ]


async def test_one_read_with_many_frames_is_one_batch(conn: Connection, owner: FakeOwner) -> None:
    conn.data_received(b"".join(encode_frame(c) for c in _cmds(50)))
    assert len(owner.batches) == 1 and len(owner.batches[0]) == 50


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xff\xff\xff" + b"x" * 8,  # negative length
        struct.pack(">iI", 100, 500) + b"x" * 100,  # header longer than the frame
        struct.pack(">iI", 8, (7 << 24) | 4) + b"{}{}",  # unknown serialize type
        struct.pack(">iI", 6, 2) + b"{x",  # JSON that does not parse
    ],
)
async def test_bad_frame_closes_the_connection_once(
    conn: Connection,
    owner: FakeOwner,
    transport: MockTransport,
    garbage: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn.data_received(garbage)
    assert transport.closed and not conn.is_active
    assert owner.events == ["made", "frame_error"] and conn.close_reason is not None
    conn.data_received(garbage)  # more bytes from the same peer are ignored, not logged again
    assert owner.events == ["made", "frame_error"]
    assert caplog.text.count("bad frame from 10.0.0.7:51234") == 1


async def test_lone_frame_is_written_at_once_and_a_burst_is_joined(
    conn: Connection, transport: MockTransport
) -> None:
    first, *rest = _cmds(4, b"x")
    conn.send_request(first)
    assert transport.write_calls == 1  # written through at once
    for cmd in rest:
        conn.send_request(cmd)
    assert transport.write_calls == 1  # queued behind the first, same loop iteration
    conn._flush()  # what the scheduled flush does at the next iteration
    assert transport.write_calls == 2
    assert [c.opaque for c in _decode_all(transport.data)] == [first.opaque] + [c.opaque for c in rest]


async def test_corked_batch_leaves_as_one_write(conn: Connection, transport: MockTransport) -> None:
    responses = [c.make_response(0, body=b"r") for c in _cmds(3)]
    conn.cork()
    for r in responses:
        conn.send_response(r)
    assert transport.write_calls == 0
    conn.uncork()
    assert transport.write_calls == 1 and len(_decode_all(transport.data)) == 3


async def test_large_body_is_not_copied_into_the_frame(conn: Connection, transport: MockTransport) -> None:
    body = b"z" * 100_000
    cmd = RemotingCommand.request(10, None, body, serialize_type=SerializeType.MSGPACK)
    conn.send_request(cmd)
    (decoded,) = _decode_all(transport.data)
    assert decoded.body == body and decoded.serialize_type == SerializeType.MSGPACK


async def test_closed_connection_refuses_requests_and_drops_responses(
    conn: Connection, transport: MockTransport
) -> None:
    request = _cmds(1)[0]
    conn.close("test")
    assert transport.closed and conn.close_reason == "test"
    with pytest.raises(RemotingSendRequestError, match="connection closed"):
        conn.send_request(request)
    assert conn.send_response(request.make_response(0)) is False
    conn.close()  # idempotent


async def test_close_flushes_what_is_queued(conn: Connection, transport: MockTransport) -> None:
    conn.cork()
    conn.send_response(_cmds(1)[0].make_response(0))
    conn.close()
    assert transport.closed and len(_decode_all(transport.data)) == 1


async def test_flow_control_drain_and_overflow(conn: Connection, transport: MockTransport) -> None:
    conn.pause_writing()
    assert not conn.is_writable
    waiter = asyncio.ensure_future(conn.drain())
    await asyncio.sleep(0)
    assert not waiter.done()
    conn.resume_writing()
    await asyncio.wait_for(waiter, 1)
    assert conn.is_writable

    conn.pause_writing()
    transport.buffer_size = 6000  # above max_write_buffer (5000): the peer does not read
    conn.send_request(_cmds(1)[0])  # written through (nothing written since the last read)
    assert transport.aborted and conn.close_reason == "write buffer overflow"


async def test_overflow_is_caught_on_the_coalesced_path_too(
    conn: Connection, transport: MockTransport
) -> None:
    conn.send_request(_cmds(1)[0])  # through
    conn.pause_writing()
    transport.buffer_size = 6000
    conn.send_request(_cmds(1)[0])  # queued behind it: checked as it is queued, not at the flush
    assert transport.aborted and conn.close_reason == "write buffer overflow"


async def test_overflow_is_caught_at_each_answer_while_corked(
    conn: Connection, transport: MockTransport
) -> None:
    """A batch of answers to a peer that does not read is stopped at the answer that passes the bound,
    not after the whole batch was queued (500 pulls of 4 MB used to buffer 1.6 GB first)."""
    conn.cork()
    big = RemotingCommand.request(10, None, b"x" * 2000)
    for _ in range(2):
        conn.send_response(big)
    assert not transport.aborted  # 4 KB queued: above the high-water mark (1000), below the bound (5000)
    conn.send_response(big)
    assert transport.aborted and conn.close_reason == "write buffer overflow"
    assert not conn.send_response(big)  # closed: later answers are dropped, not queued
    assert conn._out_bytes == 0 and not conn._out


async def test_a_run_of_answers_is_queued_as_send_response_queues_each(
    conn: Connection, transport: MockTransport
) -> None:
    small = [c.make_response(0, body=b"r") for c in _cmds(3)]
    conn.cork()
    conn.send_responses(small)
    assert transport.write_calls == 0
    conn.uncork()
    assert transport.write_calls == 1
    assert [c.opaque for c in _decode_all(transport.data)] == [r.opaque for r in small]
    conn.send_responses(small)  # not corked: each the way send_response takes it (then coalesced)
    await asyncio.sleep(0)
    assert len(_decode_all(transport.data)) == 6


async def test_a_run_of_answers_stops_at_the_answer_that_overflows(
    conn: Connection, transport: MockTransport
) -> None:
    big = RemotingCommand.request(10, None, b"x" * 2000)
    conn.cork()
    conn.send_responses([big, big, big, big])  # the third passes the bound (5000): closed there
    assert transport.aborted and conn.close_reason == "write buffer overflow"
    assert conn._out_bytes == 0 and not conn._out  # the fourth dropped, not queued


async def test_connection_lost_reports_and_fails_drain_waiters(conn: Connection, owner: FakeOwner) -> None:
    conn.pause_writing()
    waiter = asyncio.ensure_future(conn.drain())
    await asyncio.sleep(0)
    conn.connection_lost(ConnectionResetError("reset by peer"))
    with pytest.raises(RemotingConnectError):
        await waiter
    await asyncio.wait_for(conn.wait_closed(), 1)
    assert owner.events == ["made", "lost"] and not conn.is_active
    assert "reset by peer" in (conn.close_reason or "")


async def test_idle_timer_rearms_on_activity_and_closes_when_idle(
    conn: Connection, owner: FakeOwner, transport: MockTransport
) -> None:
    loop = asyncio.get_running_loop()
    conn._last_activity = loop.time() - 60  # half the idle time ago
    conn._check_idle()
    assert not transport.closed and conn._idle_handle is not None
    conn._last_activity = loop.time() - 121
    conn._check_idle()
    assert transport.closed and owner.events == ["made", "idle"] and conn.close_reason == "idle"


async def test_reads_and_writes_count_as_activity(conn: Connection, transport: MockTransport) -> None:
    loop = asyncio.get_running_loop()
    conn._last_activity = 0.0
    conn.data_received(encode_frame(_cmds(1)[0]))
    assert conn._last_activity >= loop.time() - 1
    conn._last_activity = 0.0
    conn.send_request(_cmds(1)[0])
    conn._flush()
    assert conn._last_activity >= loop.time() - 1


async def test_no_idle_timer_when_disabled(owner: FakeOwner, transport: MockTransport) -> None:
    from rocketq.remoting.transport.connection import ConnectionSettings

    connection = Connection(owner, ConnectionSettings(idle_s=0))
    connection.connection_made(transport)  # type: ignore[arg-type]
    assert connection._idle_handle is None


async def test_a_large_frame_is_read_into_its_own_buffer_a_turn_at_a_time(
    conn: Connection, owner: FakeOwner, transport: MockTransport
) -> None:
    """BufferedProtocol reads: small frames go through the loop's read buffer; a large frame's bytes go
    straight into its own buffer, and after READ_TURN_BYTES the connection lets other connections read."""
    big = RemotingCommand.request(10, None, b"z" * (3 * READ_TURN_BYTES))
    stream = encode_frame(_cmds(1)[0]) + encode_frame(big)
    read_buffer = conn.get_buffer(-1).obj  # the loop's read buffer: nothing large is on its way yet
    pos = 0
    into_frame = 0
    while pos < len(stream):
        if transport.paused:  # its turn ended: the loop's next turn resumes it
            await asyncio.sleep(0)
            assert not transport.paused
        target = conn.get_buffer(-1)
        n = min(len(target), len(stream) - pos, 300_000)
        assert n <= READ_TURN_BYTES
        target[:n] = stream[pos : pos + n]
        into_frame += target.obj is not read_buffer
        pos += n
        conn.buffer_updated(n)
    received = [c for batch in owner.batches for c in batch]
    assert [(c.code, c.body) for c in received] == [(10, b""), (10, big.body)]
    assert into_frame > 0 and transport.pauses >= 2
