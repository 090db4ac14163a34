"""Durable config writes are group-committed: a burst of changes costs a few writes, and every caller
returns only once its own change is on disk."""

import asyncio
import json
from pathlib import Path
from typing import Any

from rocketq.broker.config_file import ConfigFileManager


class Table(ConfigFileManager):
    file_name = "table.json"

    def __init__(self, config_dir: Path) -> None:
        super().__init__(config_dir)
        self.rows: dict[str, int] = {}
        self.writes = 0

    def encode(self) -> dict[str, Any]:
        return dict(self.rows)

    def decode(self, data: Any) -> None:
        self.rows = dict(data)

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)


async def test_a_burst_of_changes_shares_writes_and_each_caller_sees_its_change_on_disk(
    tmp_path: Path,
) -> None:
    table = Table(tmp_path)

    async def change(i: int) -> bool:
        table.rows[f"t{i}"] = i
        table.mark_dirty()
        ok = await table.persist_changes()
        on_disk = json.loads((tmp_path / "table.json").read_text())
        assert f"t{i}" in on_disk  # durable before the caller goes on
        return ok

    results = await asyncio.wait_for(asyncio.gather(*(change(i) for i in range(200))), 30)
    assert all(results)
    assert 1 <= table.writes < 50  # shared, not one write per change


async def test_nothing_to_write_returns_at_once(tmp_path: Path) -> None:
    table = Table(tmp_path)
    assert await table.persist_changes()
    assert table.writes == 0
    assert await Table(None).persist_changes()  # type: ignore[arg-type]  # an in-memory table
