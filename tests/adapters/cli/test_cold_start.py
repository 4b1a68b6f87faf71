"""What `panicbot lookup` does for a fast cold start: the process's last collection skips the catalog."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from adapters.cli import main as cli

SEEDS_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl"
PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
)


@pytest.fixture
def freezes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The command's calls of gc.freeze (recorded, not made: the test process keeps collecting)."""
    calls: list[int] = []
    monkeypatch.setattr(cli, "gc", SimpleNamespace(freeze=lambda: calls.append(1)))
    monkeypatch.setenv("PANICBOT_CATALOG", str(SEEDS_FILE))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PASTE.encode()), encoding="utf-8"))
    return calls


def test_the_process_entry_freezes_the_heap_before_the_interpreter_ends(
    freezes: list[int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["panicbot", "lookup", "--json"])
    assert cli.main() == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out)["status"] == "matched"
    assert freezes == [1]


def test_the_heap_is_frozen_on_an_error_exit_too(
    freezes: list[int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["panicbot", "lookup", "--catalog", "/no/such/catalog", "--json"])
    assert cli.main() == cli.EXIT_USAGE
    assert freezes == [1]


def test_a_caller_giving_arguments_keeps_its_heap_as_it_was(freezes: list[int]) -> None:
    """In-process callers (tests, scripts) pass their arguments: nothing of theirs is frozen."""
    out = io.StringIO()
    assert cli.main(["lookup", "--json"], out=out) == cli.EXIT_OK
    assert json.loads(out.getvalue())["status"] == "matched"
    assert freezes == []


def test_a_lookup_imports_no_platform_sdk_nor_pydantic_settings() -> None:
    """`panicbot lookup` loads what a lookup needs: pydantic-settings alone cost 50 ms of every cold start."""
    probe = (
        "import sys, io; sys.stdin = io.StringIO(sys.argv[1]); from adapters.cli.main import main;"
        " main(['lookup', '--json'], out=io.StringIO());"
        " print(sorted(set(sys.argv[2].split()) & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, PASTE, "pydantic_settings slack_bolt discord aiohttp"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(cli.__file__).resolve().parents[2],
        env={**os.environ, "PANICBOT_CATALOG": str(SEEDS_FILE)},
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
