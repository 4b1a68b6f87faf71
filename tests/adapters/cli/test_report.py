"""`run_report`: the rich tables and the JSON object, from a SQLite store filled by real lookups; `report`,
`prune` and `console` never create a database that is not there."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.cli.main import EXIT_USAGE, main
from adapters.cli.report import run_report
from adapters.storage import SqlStore, upgrade_database
from bot.lookup import PanicLookup
from tests.adapters.storage.support import SECRET_PASSWORD, UNREACHABLE_URL, FakeClock
from tests.support.catalogs import seeds_catalog

LOOKUP = PanicLookup(seeds_catalog())
CATALOG_IDS = [record.id for record in LOOKUP.catalog.records]
AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
)
UNKNOWN_PASTE = (
    "thread 'main' panicked at /home/alice/app/src/main.rs:3:5:\n"
    "[bold]tensor[/bold] shape mismatch with token xoxb-1234567890-abcdefghijkl\n"
)


@pytest.fixture
def store(tmp_path: Path) -> SqlStore:
    url = f"sqlite:///{tmp_path / 'report.db'}"
    upgrade_database(url)
    return SqlStore(url, clock=FakeClock())


@pytest.fixture
def filled(store: SqlStore) -> SqlStore:
    for _ in range(2):
        store.record_lookup(LOOKUP.lookup(UNKNOWN_PASTE), "slack")
    store.record_lookup(LOOKUP.lookup("thread 'main' panicked at src/x.rs:1:1:\nother failure\n"), "discord")
    store.record_lookup(LOOKUP.lookup(AVG_POOL_PASTE), "slack")
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="down", platform="slack", place="m1")
    store.record_vote(record_id=AVG_POOL_ID, user_id="U2", vote="up", platform="slack", place="m1")
    return store


def report(store: SqlStore, *, as_json: bool, limit: int = 10) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_report(store, CATALOG_IDS, out, as_json=as_json, limit=limit, err=err)
    return code, out.getvalue(), err.getvalue()


def test_tables(filled: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = report(filled, as_json=False)
    assert (code, err) == (0, "")
    assert "Panics with no record" in out
    # Printed as text, never as rich markup, and redacted.
    assert "[bold]tensor[/bold] shape mismatch with token [redacted]" in out
    assert "/home/user/app/src/main.rs" in out and "alice" not in out and "xoxb" not in out
    assert "Records voted down" in out and AVG_POOL_ID in out
    assert "Catalog records never matched: 2 of 3" in out
    never = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert sorted(never) == sorted(set(CATALOG_IDS) - {AVG_POOL_ID})


def test_tables_cut_lists_to_the_limit(filled: SqlStore) -> None:
    code, out, _ = report(filled, as_json=False, limit=1)
    assert code == 0
    assert "… and 1 more (raise --limit to list them)" in out
    assert "other failure" not in out  # seen once: below the limit


def test_json_shape(filled: SqlStore) -> None:
    code, out, _ = report(filled, as_json=True)
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"unmatched", "most_downvoted", "never_matched", "never_matched_total"}
    first = data["unmatched"][0]
    assert set(first) == {"fingerprint", "message", "path", "count", "first_seen", "last_seen", "platform"}
    assert (first["count"], first["platform"], first["path"]) == (2, "slack", "/home/user/app/src/main.rs")
    assert first["first_seen"] == "2025-03-01T12:00:00+00:00"
    assert [item["count"] for item in data["unmatched"]] == [2, 1]
    assert data["most_downvoted"] == [{"record_id": AVG_POOL_ID, "down": 1, "up": 1}]
    assert sorted(data["never_matched"]) == sorted(set(CATALOG_IDS) - {AVG_POOL_ID})
    assert data["never_matched_total"] == 2
    assert "alice" not in out and "xoxb" not in out


def test_empty_database(store: SqlStore) -> None:
    code, out, _ = report(store, as_json=False)
    assert code == 0
    assert "No unmatched panics recorded" in out and "No record has a 👎" in out
    assert "never matched: 3 of 3" in out
    data = json.loads(report(store, as_json=True)[1])
    assert (data["unmatched"], data["most_downvoted"], data["never_matched_total"]) == ([], [], 3)


def test_database_failure_is_one_line_without_the_password() -> None:
    code, out, err = report(SqlStore(UNREACHABLE_URL), as_json=True)
    assert (code, out) == (1, "")
    assert err.startswith("panicbot: building the report failed on postgresql+psycopg://panicbot:***@")
    assert SECRET_PASSWORD not in err and len(err.strip().splitlines()) == 1


SEEDS_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl"
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "command",
    [["report"], ["report", "--json", "--catalog", str(SEEDS_FILE)], ["prune", "--days", "1"]],
    ids=["report", "report-json", "prune"],
)
def test_a_missing_sqlite_file_is_named_and_never_created(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "panicbto.db"  # mistyped
    out = io.StringIO()
    code = main([*command, "--database-url", f"sqlite:///{missing}"], out=out)
    err = capsys.readouterr().err
    # Before: an empty database made there, and "every pasted panic had a record".
    assert code == EXIT_USAGE, err
    assert err.strip() == f"panicbot: DATABASE_URL: no database at {missing}"
    assert out.getvalue() == ""
    assert not missing.exists()


def test_the_console_never_creates_a_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "panicbto.db"
    environ = {
        **{k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
        "NO_PROXY": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{missing}",
        "PANICBOT_CONSOLE_TOKEN": "console-test-token",
        "PANICBOT_CATALOG": str(SEEDS_FILE),
        "PANICBOT_HTTP_HOST": "127.0.0.1",
    }
    command = [sys.executable, "-m", "adapters.cli.main", "console", "--port", "0"]
    # Before: the database made, and the console served over it (until this timeout).
    done = subprocess.run(
        command, check=False, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.strip() == f"panicbot: DATABASE_URL: no database at {missing}"
    assert not missing.exists()
