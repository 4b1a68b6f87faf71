"""`panicbot catalog build ... -o X.pbcat` and `panicbot lookup --catalog X.pbcat` (or PANICBOT_CATALOG):
the same answers as the sources, refusals as one line and exit code 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.cli.main import EXIT_USAGE
from tests.adapters.cli.test_main import AVG_POOL_ID, AVG_POOL_PASTE, SEEDS_FILE, record_line, run


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "seeds.pbcat"
    code, out = run(monkeypatch, ["catalog", "build", str(SEEDS_FILE), "-o", str(target)])
    assert code == 0, out
    assert f"wrote {target}" in out
    return target


def test_lookup_through_a_built_file_answers_as_the_sources(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paste = AVG_POOL_PASTE.encode()
    code, want = run(monkeypatch, ["lookup", "--json", "--catalog", str(SEEDS_FILE)], paste)
    got_code, got = run(monkeypatch, ["lookup", "--json", "--catalog", str(built)], paste)
    assert (got_code, got) == (code, want) == (0, want)
    assert json.loads(got)["matches"][0]["record_id"] == AVG_POOL_ID
    words = ["avg", "pool", "2d", "backward"]
    text_code, text = run(monkeypatch, ["lookup", "--catalog", str(built), *words])
    assert (text_code, text) == run(monkeypatch, ["lookup", "--catalog", str(SEEDS_FILE), *words])
    assert text_code == 0 and "avg pool 2d backward" in text


def test_the_environment_names_a_built_file(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANICBOT_CATALOG", str(built))
    code, out = run(monkeypatch, ["lookup", "--json"], AVG_POOL_PASTE.encode())
    assert code == 0 and json.loads(out)["matches"][0]["record_id"] == AVG_POOL_ID
    lines = b'{"id": 1, "text": "avg pool 2d backward"}\n'
    code, out = run(monkeypatch, ["lookup", "--jsonl"], lines)
    assert code == 0 and json.loads(out)["matches"][0]["record_id"] == AVG_POOL_ID
    code, out = run(monkeypatch, ["card", AVG_POOL_ID])
    assert code == 0 and "avg pool" in out.lower()


def test_a_built_file_with_other_paths_is_refused(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lookup", "--catalog", str(built), "--catalog", str(SEEDS_FILE), "x"]
    code, _ = run(monkeypatch, argv)
    assert code == EXIT_USAGE
    assert "cannot be combined with other catalog paths" in capsys.readouterr().err
    monkeypatch.setenv("PANICBOT_CATALOG", f"default:{built}")
    code, _ = run(monkeypatch, ["lookup", "x"])
    assert code == EXIT_USAGE


@pytest.mark.parametrize("damage", ["foreign", "flipped", "truncated"])
def test_a_bad_file_is_one_line_and_exit_2(
    damage: str, built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = built.read_bytes()
    if damage == "foreign":
        data = SEEDS_FILE.read_bytes()
    elif damage == "flipped":
        cut = data.index(b"\n", data.index(b"\n") + 1) + 50
        data = data[:cut] + bytes([data[cut] ^ 0xFF]) + data[cut + 1 :]
    else:
        data = data[: len(data) // 2]
    built.write_bytes(data)
    code, out = run(monkeypatch, ["lookup", "--json", "--catalog", str(built)], AVG_POOL_PASTE.encode())
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and out == ""
    assert str(built) in err and "panicbot catalog build" in err
    assert "Traceback" not in err and "internal error" not in err


def test_build_refuses_sources_with_bad_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(record_line("a1", "first message here") + "\n{not json\n", encoding="utf-8")
    target = tmp_path / "out.pbcat"
    code, _ = run(monkeypatch, ["catalog", "build", str(source), "-o", str(target)])
    assert code == 1 and not target.exists()
    err = capsys.readouterr().err
    assert f"{source}:2" in err and "not written" in err
    code, _ = run(monkeypatch, ["catalog", "build", str(SEEDS_FILE), "-o", str(tmp_path / "out.jsonl")])
    assert code == EXIT_USAGE
    assert list(tmp_path.iterdir()) == [source]  # nothing half-written either


def test_commands_that_need_the_sources_refuse_a_built_file(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stats, validate = ["catalog", "stats", str(built)], ["catalog", "validate", str(built)]
    for argv in (stats, validate, ["report", "--catalog", str(built)]):
        code, _ = run(monkeypatch, argv)
        assert code == EXIT_USAGE
        assert "prebuilt catalog" in capsys.readouterr().err
    code, _ = run(monkeypatch, ["catalog", "build", str(built), "-o", str(built.with_name("again.pbcat"))])
    assert code == EXIT_USAGE


def test_a_corrupt_record_found_when_read_is_one_line_and_exit_2(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the index is hashed at load; a record is checked when first read, and a damaged one is the same
    one-line refusal, not an internal error."""
    data = built.read_bytes()
    tail = data.rindex(b'"id"')  # inside the last record of the blob
    built.write_bytes(data[:tail] + b"\xff\xfe" + data[tail + 2 :])
    last_id = [
        json.loads(line)["record"]["id"] for line in SEEDS_FILE.read_text().splitlines() if line.strip()
    ][-1]
    code, out = run(monkeypatch, ["card", last_id, "--catalog", str(built)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, (out, err)
    assert str(built) in err and "panicbot catalog build" in err and "internal error" not in err
