"""What a mapped file's flush writes back: the range written since the last flush, or the whole mapping
once the file was cut back (recovery's or a slave's truncation rewrote bytes past the new positions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.store.mapped_file import OS_PAGE_SIZE, MappedFile

SIZE = 16 * OS_PAGE_SIZE


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    real = MappedFile._sync

    def spy(self: MappedFile, start: int = 0, end: int = -1) -> None:
        calls.append((start, self.file_size if end < 0 else end))
        real(self, start, end)

    monkeypatch.setattr(MappedFile, "_sync", spy)
    return calls


def _write(mapped: MappedFile, data: bytes) -> None:
    pos = mapped.wrote_position
    mapped.mm[pos : pos + len(data)] = data
    mapped.wrote_position = pos + len(data)


def test_a_flush_syncs_from_the_last_flushed_page_to_the_written_end(
    tmp_path: Path, synced: list[tuple[int, int]]
) -> None:
    mapped = MappedFile(tmp_path / "00000000000000000000", 0, SIZE)
    try:
        _write(mapped, b"a" * 100)
        assert mapped.flush() == 100
        _write(mapped, b"b" * (OS_PAGE_SIZE + 50))
        end = mapped.wrote_position
        assert mapped.flush() == end
        assert synced == [(0, 100), (0, end)]  # the second starts at the page holding offset 100
        _write(mapped, b"c" * OS_PAGE_SIZE)
        mapped.flush()
        assert synced[-1] == (OS_PAGE_SIZE, mapped.wrote_position)
    finally:
        mapped.close()


def test_after_the_file_is_cut_back_the_next_flush_syncs_the_whole_mapping(
    tmp_path: Path, synced: list[tuple[int, int]]
) -> None:
    mapped = MappedFile(tmp_path / "00000000000000000000", 0, SIZE)
    try:
        _write(mapped, b"a" * (3 * OS_PAGE_SIZE))
        mapped.flush()
        mapped.mm[100 : 3 * OS_PAGE_SIZE] = bytes(3 * OS_PAGE_SIZE - 100)  # truncation zeroes the tail
        mapped.set_positions(100)
        _write(mapped, b"b" * 20)
        assert mapped.flush() == 120
        assert synced[-1] == (0, SIZE)
        _write(mapped, b"c" * 20)
        mapped.flush()
        assert synced[-1] == (0, 140)  # back to the written range
    finally:
        mapped.close()
