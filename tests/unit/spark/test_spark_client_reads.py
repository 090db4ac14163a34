"""SyncClient.read_records drives a queue range's pulls in runs of the loop, not one run per pull: the same
answers in order, the errors after the answers before them, and no pull left in flight when the reader
stops early (a pull API in memory, answering as a broker capped at a few messages per pull does)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.client.model import PullResult, PullStatus
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.spark.client import DataLossError, QueueRoute, SyncClient

ROUTE = QueueRoute("T", "broker-a", 0, "127.0.0.1:10911")


class QueueApi:
    """pull_message_body over one queue holding offsets [low, high), at most `cap` messages an answer."""

    def __init__(self, low: int, high: int, cap: int = 5, stall_at: int | None = None) -> None:
        self.low, self.high, self.cap, self.stall_at = low, high, cap, stall_at
        self.pulls = 0
        self.open = 0  # pulls started and not yet ended (answered or cancelled)

    async def pull_message_body(self, addr: str, header: Any, timeout_ms: float) -> tuple[PullResult, bytes]:
        self.pulls += 1
        self.open += 1
        try:
            await asyncio.sleep(0)  # answered on a later turn of the loop, as over a socket
            at = header.queue_offset
            if self.stall_at is not None and at >= self.stall_at:
                await asyncio.Event().wait()  # never answered: only a cancel ends it
            if at < self.low:
                return PullResult(PullStatus.OFFSET_ILLEGAL, self.low, self.low, self.high), b""
            until = min(at + header.max_msg_nums, at + self.cap, self.high)
            if at >= until:
                return PullResult(PullStatus.NO_NEW_MSG, at, self.low, self.high), b""
            body = b"".join(
                encode_record(MessageExt("T", b"m%d" % o, queue_id=0, queue_offset=o))
                for o in range(at, until)
            )
            return PullResult(PullStatus.FOUND, until, self.low, self.high), body
        finally:
            self.open -= 1


def _client(api: QueueApi) -> SyncClient:
    client = SyncClient("127.0.0.1:9876")
    client._api = api  # type: ignore[assignment]
    return client


def _offsets(client: SyncClient, start: int, end: int, **kw: Any) -> list[int]:
    return [
        m.queue_offset
        for _body, msgs in client.read_records(
            ROUTE, start, end, decode_records_lazy, lambda m: m.queue_offset, batch=8, **kw
        )
        for m in msgs
    ]


@pytest.mark.parametrize("depth", [1, 3, 16])
def test_every_offset_once_in_order(depth: int) -> None:
    api = QueueApi(0, 203)
    with _client(api) as client:
        assert _offsets(client, 7, 190, depth=depth) == list(range(7, 190))
    assert api.open == 0


def test_answers_before_a_loss_come_first_then_the_error() -> None:
    api = QueueApi(0, 50)
    seen: list[int] = []
    with _client(api) as client, pytest.raises(DataLossError, match=r"messages 50\.\.59"):
        for _body, msgs in client.read_records(
            ROUTE, 0, 60, decode_records_lazy, lambda m: m.queue_offset, batch=8, depth=16
        ):
            seen.extend(m.queue_offset for m in msgs)
    assert seen == list(range(50))
    assert api.open == 0


def test_loss_skipped_without_fail_on_data_loss() -> None:
    api = QueueApi(20, 40)
    with _client(api) as client:
        assert _offsets(client, 0, 40, depth=4, fail_on_data_loss=False) == list(range(20, 40))


def test_stopping_early_cancels_the_pulls_in_flight() -> None:
    api = QueueApi(0, 1000, stall_at=100)
    with _client(api) as client:
        answers = client.read_records(ROUTE, 0, 1000, decode_records_lazy, lambda m: m.queue_offset, depth=16)
        next(answers)
        assert asyncio.all_tasks(client._loop)  # the next pulls are in flight
        answers.close()
        assert not asyncio.all_tasks(client._loop)
        assert api.open == 0
        assert api.pulls < 100  # not the whole range
