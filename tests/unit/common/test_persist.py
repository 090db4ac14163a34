from pathlib import Path

from rocketq.common.persist import atomic_write_json, read_json


def test_atomic_write_keeps_a_backup_and_reads_it_when_main_is_torn(tmp_path: Path) -> None:
    target = tmp_path / "config" / "offsets.json"
    atomic_write_json(target, {"v": 1})
    atomic_write_json(target, {"v": 2})
    assert read_json(target) == {"v": 2}
    assert read_json(target.with_name("offsets.json.bak")) == {"v": 1}
    target.write_text('{"v": ')  # a torn main file falls back to the backup
    assert read_json(target) == {"v": 1}


def test_missing_file_reads_none(tmp_path: Path) -> None:
    assert read_json(tmp_path / "nope.json") is None
