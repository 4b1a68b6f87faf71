"""Atomic writes: the old file or the whole new one, never half; readable by others; no temporary left."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from adapters import files


def test_a_write_replaces_the_file_whole_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "catalog.jsonl"
    target.write_text("old\n", encoding="utf-8")
    files.write_atomically(target, ["one", "two"])
    assert target.read_text(encoding="utf-8") == "one\ntwo\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.jsonl"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "catalog.jsonl.gz"
    target.write_bytes(b"old")

    def broken_replace(source: str, destination: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.write_bytes_atomically(target, b"new" * 1000)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.jsonl.gz"]
