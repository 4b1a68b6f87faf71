"""`panicbot catalog lint` and `panicbot card`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from adapters.cli.main import main

# The upstream seeds as shipped, one with another error's analysis (the embedded default holds them reviewed).
SEEDS = str(Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl")


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
    mismatch = [line for line in lines if ": error: analysis-mismatch " in line]
    assert len(mismatch) == 1 and mismatch[0].startswith(f"{SEEDS}:1: error: analysis-mismatch")
    assert "q_to_device" in mismatch[0]
    # The other two seeds' faults are in their examples and claims, checked against the releases' API.
    assert {line.split(": error: ")[1].split(" ")[0] for line in lines} == {
        "analysis-mismatch", "example-order", "example-path", "claims-absence",
    }  # fmt: skip
    # Warnings: the tags of one, and a vague solution in each of the other two.
    assert out.rstrip().endswith(f"3 records: {len(lines)} errors, 3 warnings")


def test_lint_of_the_embedded_default_data_finds_no_error() -> None:
    """The same three records with their analyses rewritten after review (they keep the seeds' data set
    version, older than their analysis: a version-stale warning each, not an error)."""
    data = str(Path(__file__).resolve().parents[3] / "bot" / "data" / "default_catalog.jsonl")
    code, out = run(["catalog", "lint", data])
    assert code == 0
    assert ": error: " not in out
    assert out.splitlines()[-1].startswith("3 records: 0 errors, ")


def test_lint_json_and_a_clean_catalog(tmp_path: Path) -> None:
    code, out = run(["catalog", "lint", "--json", SEEDS])
    payload = json.loads(out)
    assert code == 1
    assert (payload["records"], payload["errors"], payload["warnings"]) == (3, 5, 3)
    assert {f["check"] for f in payload["findings"]} == {
        "analysis-mismatch", "tags-mismatch", "example-order", "example-path", "claims-absence",
        "solution-vague",
    }  # fmt: skip
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


def test_harvest_then_merge_through_the_cli(tmp_path: Path) -> None:
    source = tmp_path / "burn" / "crates" / "burn-autodiff" / "src" / "ops"
    source.mkdir(parents=True)
    (source / "module.rs").write_text(
        "fn deform_conv2d_backward() {\n"
        '    panic!("Can\'t differentiate deform conv 2d backward.");\n'
        "}\n"
        'fn other(x: Option<u8>) -> u8 { x.expect("Should be set") }\n',
        encoding="utf-8",
    )
    harvested = tmp_path / "harvested.jsonl"
    code, _ = run(
        ["catalog", "harvest", str(tmp_path / "burn"), "--repo", "tracel-ai/burn", "--sha", "abc1234",
         "-o", str(harvested)]
    )  # fmt: skip
    assert code == 0
    lines = [json.loads(line)["record"] for line in harvested.read_text().splitlines()]
    assert [(r["errorMessage"], r["lineNumber"]) for r in lines] == [
        ("Can't differentiate deform conv 2d backward.", 2),
        ("Should be set", 4),
    ]
    assert not list(tmp_path.glob("*.partial"))
    merged = tmp_path / "merged.jsonl"
    code, _ = run(["catalog", "merge", SEEDS, "--baseline", str(harvested), "-o", str(merged)])
    assert code == 0
    ids = [json.loads(line)["record"]["id"] for line in merged.read_text().splitlines()]
    # The analysed deform-conv seed covers the harvested site (same file and message, line moved).
    assert ids[:3] == ["5c5da46720dbbf10", "d59d5538758c7e08", "8d1d2fa6df3880bd"]
    assert len(ids) == 4


def test_harvest_of_a_missing_tree_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    code, _ = run(
        ["catalog", "harvest", str(tmp_path / "nope"), "--repo", "a/b", "--sha", "abc", "-o", str(out)]
    )
    assert code == 2
    assert not out.exists()
    assert not list(tmp_path.glob("*.partial"))


def test_report_and_prune_read_what_the_service_stored(tmp_path: Path) -> None:
    from adapters.storage import SqlStore, upgrade_database
    from bot.lookup import PanicLookup
    from bot.records import default_catalog

    url = f"sqlite:///{tmp_path / 'bot.db'}"
    upgrade_database(url)
    service = PanicLookup(default_catalog())
    with SqlStore(url) as store:
        store.record_lookup(
            service.lookup("thread 'main' panicked at src/main.rs:1:1:\nunknown thing"), "slack"
        )
        store.record_lookup(service.lookup("avg pool 2d backward"), "slack")
        store.record_vote(
            record_id="8d1d2fa6df3880bd", user_id="U1", vote="down", platform="slack", place="C/1"
        )
    code, out = run(["report", "--json", "--database-url", url])
    assert code == 0
    report = json.loads(out)
    assert [row["message"] for row in report["unmatched"]] == ["unknown thing"]
    assert report["most_downvoted"][0]["record_id"] == "8d1d2fa6df3880bd"
    assert "8d1d2fa6df3880bd" not in report["never_matched"]
    code, out = run(["prune", "--days", "1", "--database-url", url])
    assert code == 0 and out.startswith("removed 0 rows")


def test_report_on_an_unusable_database_is_one_clear_line(tmp_path: Path, capsys) -> None:
    code, _ = run(["report", "--database-url", f"sqlite:///{tmp_path}/missing/dir/x.db"])
    assert code == 2
    assert "DATABASE_URL" in capsys.readouterr().err


def test_card_as_json_says_whose_analysis_it_is() -> None:
    code, out = run(["card", "8d1d2fa6df3880bd", "--format", "json"])
    card = json.loads(out)
    assert code == 0 and card["record_id"] == "8d1d2fa6df3880bd" and card["analysis"] == "record"
    assert card["solutions"] and card["exampleFix"] and card["analysis_note"] is None
    # The seed's record is in the ecosystem catalog: its history across Burn's releases comes with it.
    assert card["history"]["first"]["crate"] == "burn-autodiff"
    assert card["history"]["releases"] >= 2


def test_lint_of_the_embedded_catalog_checks_its_families_and_finds_no_error() -> None:
    code, out = run(["catalog", "lint", "--json"])
    report = json.loads(out)
    assert code == 0 and report["errors"] == 0
    assert not [f for f in report["findings"] if f["check"].startswith("family")]
