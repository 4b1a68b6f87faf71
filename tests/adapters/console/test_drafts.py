"""The drafts file: a line is written whole or not at all (a full disk leaves the file as it was), a damaged
tail is set aside with its line number and never appended to, and patterns are checked with RE2."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest

from adapters.console import drafts
from adapters.console.drafts import (
    DraftWriteError,
    append_draft,
    build_record,
    draft_line,
    set_aside_damaged_tail,
)
from bot.records import Record, load_catalog


def record(message: str = "Operation queue overflowed: {} pending") -> Record:
    built = build_record({"errorMessage": message, "messagePattern": "", "filePath": "crates/x/src/lib.rs"})
    assert built.record is not None, built.problems
    return built.record


def test_a_full_disk_mid_line_leaves_the_file_as_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "drafts.jsonl"
    assert append_draft(path, record("first {}")) == 1
    before = path.read_bytes()
    calls: list[int] = []

    def part_then_full(descriptor: int, data: memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return os.write(descriptor, data[: len(data) // 2])  # the kernel took half of the line
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(drafts, "_write_chunk", part_then_full)
    with pytest.raises(DraftWriteError, match="the disk is full"):
        append_draft(path, record("second {}"))
    assert len(calls) == 2
    assert path.read_bytes() == before  # cut back: no half line
    monkeypatch.undo()
    assert append_draft(path, record("third {}")) == 2
    catalog = load_catalog([path])
    assert not catalog.errors
    assert [entry.record.errorMessage for entry in catalog.entries] == ["first {}", "third {}"]


def test_a_damaged_tail_is_set_aside_with_its_line_number(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "drafts.jsonl"
    good = draft_line(record("one {}")) + draft_line(record("two {}"))
    path.write_text(good + '{"record": {"id": "cut', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="panicbot.console"):
        damaged = set_aside_damaged_tail(path)
    assert damaged is not None and damaged.line == 3
    assert "line 3 was cut short" in caplog.text
    assert path.read_text(encoding="utf-8") == good
    kept = damaged.kept_in.read_text(encoding="utf-8")
    assert damaged.kept_in == tmp_path / "drafts.jsonl.damaged" and '{"record": {"id": "cut' in kept
    assert set_aside_damaged_tail(path) is None  # whole now
    assert set_aside_damaged_tail(tmp_path / "missing.jsonl") is None


def test_a_draft_is_never_appended_to_a_damaged_line(tmp_path: Path) -> None:
    path = tmp_path / "drafts.jsonl"
    path.write_text(draft_line(record("one {}")) + '{"record": ', encoding="utf-8")
    assert append_draft(path, record("two {}")) == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["record"]["errorMessage"] for line in lines] == ["one {}", "two {}"]
    assert (tmp_path / "drafts.jsonl.damaged").read_text(encoding="utf-8").endswith('{"record": \n')


@pytest.mark.parametrize(
    "pattern",
    [
        r"(\w+) overflowed \1",  # a backreference: RE2 has none
        r"(?=queue)queue",  # a lookahead
        r"(?<!x)queue",  # a lookbehind
        "((a{1000}){1000}){1000}",  # a program far over RE2's size limit
    ],
)
def test_patterns_re2_cannot_run_are_refused(pattern: str) -> None:
    built = build_record({"errorMessage": "queue overflowed", "messagePattern": pattern})
    assert built.record is None
    assert any(problem.startswith("messagePattern: RE2 cannot compile it") for problem in built.problems)


def test_a_pattern_that_backtracks_elsewhere_is_linear_in_re2_and_accepted() -> None:
    built = build_record({"errorMessage": "aaaa!", "messagePattern": "(a+)+!"})
    assert built.record is not None


def test_the_console_sets_a_damaged_tail_aside_when_it_starts(tmp_path: Path) -> None:
    from adapters.console.app import build_console_app
    from adapters.console.settings import ConsoleSettings

    path = tmp_path / "drafts.jsonl"
    whole = draft_line(record("one {}"))
    path.write_text(whole + "{", encoding="utf-8")
    settings = ConsoleSettings(panicbot_console_token="t", panicbot_console_drafts=str(path))
    build_console_app(settings, lambda: None, None)  # type: ignore[arg-type,return-value]
    assert path.read_text(encoding="utf-8") == whole
    assert (tmp_path / "drafts.jsonl.damaged").exists()


def test_a_drafts_file_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "drafts.jsonl"
    folder.mkdir()  # a folder where the file should be: opening it fails
    assert set_aside_damaged_tail(folder) is None  # logged, never raised at start-up
    with pytest.raises(DraftWriteError, match="the draft was not written"):
        append_draft(folder, record())
