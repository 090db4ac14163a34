"""Topic deletion, runtime info, and a full disk met while reserving commit-log space."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

import pytest

from rocketq.common import constants as C
from rocketq.store.mapped_file import MappedFile
from rocketq.store.status import GetMessageStatus, PutMessageStatus

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory


async def test_delete_topics_drops_their_queues_only(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    for topic in ("Keep", "Drop", C.RMQ_SYS_SCHEDULE_TOPIC):
        for queue_id in range(2):
            assert (await store.put_message(message(topic, queue_id))).is_ok
    assert store.delete_topics({"Drop", "Unknown"}) == 1
    assert store.get_message("g", "Drop", 0, 0, 32).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert not (store.config.consume_queue_dir / "Drop").exists()
    assert store.get_max_offset_in_queue("Keep", 1) == 1
    # A deleted topic starts again from offset 0.
    result = await store.put_message(message("Drop", 0))
    assert result.append is not None and result.append.logical_offset == 0
    assert store.clean_unused_topics({"Keep"}) == 1  # "Drop" again; the schedule topic always stays
    assert store.queues.topics() == {"Keep", C.RMQ_SYS_SCHEDULE_TOPIC}


async def test_runtime_info_has_javas_keys(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store(disk_usage=lambda path: 0.25)
    await store.put_message(message())
    info = store.runtime_info()
    assert info["commitLogMinOffset"] == "0"
    assert info["commitLogMaxOffset"] == str(store.get_max_phy_offset())
    assert info["commitLogDiskRatio"] == "0.25" and info["dispatchBehindBytes"] == "0"
    assert store.dispatch_behind_bytes() == 0 and not store.is_os_page_cache_busy()
    assert store.get_message_total_in_queue("TopicA", 0) == 1


async def test_no_space_for_the_commit_log_is_a_status_and_writes_nothing(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    assert (await store.put_message(message())).is_ok
    end = store.get_max_phy_offset()

    def no_space(self: MappedFile, upto: int, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MappedFile, "reserve", no_space)
    # Append until the writer needs space beyond what was reserved (the reservation ahead fails too).
    stored = 1
    for _ in range(100):
        result = await store.put_message(message(body=b"x" * 1000))
        if not result.is_ok:
            break
        stored += 1
        end = store.get_max_phy_offset()
    # Java's answer for a full disk; nothing of the refused put is written, and the next puts are refused
    # without trying until the writer has room again.
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert result.remark.startswith(
        "service not available now. It may be caused by one of the following reasons: "
    )
    assert "the broker's disk is full [CL: " in result.remark
    assert store.get_max_phy_offset() == end and store.get_max_offset_in_queue("TopicA", 0) == stored
    assert store.space.full and store.space.check()  # the probe still fails
    monkeypatch.undo()
    store.space._probed_at = 0.0  # the next check probes now, not PROBE_INTERVAL_S later
    assert not store.space.check()
    assert (await store.put_message(message())).is_ok
