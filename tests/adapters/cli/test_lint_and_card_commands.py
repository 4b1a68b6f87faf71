"""`panicbot catalog lint` and `panicbot card`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from adapters.cli.main import main

SEEDS = str(Path(__file__).resolve().parents[3] / "bot" / "data" / "default_catalog.jsonl")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PANICBOT_CATALOG", raising=False)


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def test_lint_flags_the_seed_with_another_errors_analysis() -> None:
    code, out = run(["catalog", "lint", SEEDS])
    assert code == 1
    lines = [line for line in out.splitlines() if ": error: " in line]
    assert lines == [line for line in lines if line.startswith(f"{SEEDS}:1: error: analysis-mismatch")]
    assert len(lines) == 1
    assert "q_to_device" in lines[0]
    assert out.rstrip().endswith("3 records: 1 errors, 1 warnings")


def test_lint_json_and_a_clean_catalog(tmp_path: Path) -> None:
    code, out = run(["catalog", "lint", "--json", SEEDS])
    payload = json.loads(out)
    assert code == 1
    assert (payload["records"], payload["errors"], payload["warnings"]) == (3, 1, 1)
    assert {f["check"] for f in payload["findings"]} == {"analysis-mismatch", "tags-mismatch"}
    clean = tmp_path / "clean.jsonl"
    clean.write_text(
        json.dumps({"record": {"id": "a", "errorMessage": "boom {}", "messagePattern": "boom (.+?)"}}) + "\n"
    )
    assert run(["catalog", "lint", str(clean)])[0] == 0
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    code, out = run(["catalog", "lint", str(broken)])
    assert code == 1
    assert f"{broken}:1: error: unreadable" in out


def test_card_preview_text_and_slack(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["card", "8d1d2fa6df3880bd"])
    assert code == 0
    assert out.startswith("**Can't differentiate avg pool 2d backward.**")
    assert "```rust" in out
    code, out = run(["card", "8d1d2fa6df3880bd", "--format", "slack"])
    assert code == 0
    payload = json.loads(out)
    assert payload["blocks"][0]["type"] == "header"
    assert "fits slack's limits" in capsys.readouterr().err


def test_card_preview_of_an_unknown_record(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["card", "no-such-id"])
    assert code == 2
    assert out == ""
    assert "no record with id no-such-id" in capsys.readouterr().err
