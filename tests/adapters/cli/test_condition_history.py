"""The commit that changed a record's firing condition between two releases, found by walking the file's git
log on a tiny real repository: written by `catalog ecosystem build` and by `catalog ecosystem history` (which
rewrites only the history table), read back into the card's history and its "Condition changed" line."""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.cli.ecosystem_build import GitRepository, condition_rows, run_build, write_sources
from adapters.cli.main import main
from bot.card import render_markdown
from bot.ecosystem import Source
from bot.harvest import record_id
from bot.lookup import PanicLookup
from bot.records import Record, load_catalog
from tests.adapters.cli.test_ecosystem_build import (
    INDEX,
    MYCRATE_MANIFEST,
    NOTE,
    REPO,
    TinyRepo,
    new_repo,
    read_jsonl_gz,
    workspace_manifest,
)

MESSAGE = "index {} out of range for length {}"
LIB = "crates/mycrate/src/lib.rs"
CHANGE_SUBJECT = "Check the index strictly (#7)"


def lib_rs(comment: str, condition: str) -> str:
    return (
        f"// {comment}\n"
        "pub fn checked(index: usize, len: usize) -> usize {\n"
        f"    if {condition} {{\n"
        f'        panic!("{MESSAGE}", index, len);\n'
        "    }\n"
        "    index\n"
        "}\n"
    )


@dataclass
class Built:
    repo: TinyRepo
    out: Path
    git_dir_arg: str
    change_sha: str


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """v0.1.0 fires on `index >= len`; between v0.1.0 and v0.2.0 a commit before the change and one after it
    touch the file without changing the condition; v0.3.0 changes nothing."""
    base = tmp_path_factory.mktemp("conditions")
    repo = new_repo(base / "widgets", base / "home")
    first = {"Cargo.toml": workspace_manifest("0.1.0"), "crates/mycrate/Cargo.toml": MYCRATE_MANIFEST}
    repo.commit("first", "2024-01-01T10:00:00+00:00", {**first, LIB: lib_rs("one", "index >= len")}, "v0.1.0")
    repo.commit("Say more (#5)", "2024-02-01T10:00:00+00:00", {LIB: lib_rs("two", "index >= len")})
    change = repo.commit(CHANGE_SUBJECT, "2024-03-01T10:00:00+00:00", {LIB: lib_rs("two", "index > len")})
    repo.commit("Tidy the comment", "2024-04-01T10:00:00+00:00", {LIB: lib_rs("three", "index > len")})
    repo.commit("Release", "2024-05-01T10:00:00+00:00", {"Cargo.toml": workspace_manifest("0.2.0")}, "v0.2.0")
    repo.commit("Again", "2024-06-01T10:00:00+00:00", {"Cargo.toml": workspace_manifest("0.3.0")}, "v0.3.0")
    repository = GitRepository(repo.git_dir)
    try:
        tags = ("v0.1.0", "v0.2.0", "v0.3.0")
        sources = [Source(REPO, tag, *repository.commit(tag), ("crates",)) for tag in tags]
    finally:
        repository.close()
    sources_file = base / "sources.toml"
    write_sources(sources_file, sources, [])
    out = base / "out"
    git_dir_arg = f"{REPO}={repo.git_dir}"
    assert run_build(sources_file, out, None, [git_dir_arg]) == 0
    return Built(repo, out, git_dir_arg, change)


CHECK = record_id(REPO, LIB, MESSAGE)


def test_the_build_names_the_commit_that_changed_the_condition(built: Built) -> None:
    rows = read_jsonl_gz(built.out / "ecosystem.history.jsonl.gz")
    assert rows == [
        {
            "id": CHECK,
            "repo": REPO,
            "sinceRef": "v0.1.0",
            "changedRef": "v0.2.0",
            "commit": built.change_sha[:10],
            "subject": CHANGE_SUBJECT,
            "pullRequest": 7,
        }
    ]


def _tables(out: Path) -> tuple[list[Record], list[dict[str, Any]], list[dict[str, Any]]]:
    records = [Record.model_validate(row["record"]) for row in read_jsonl_gz(out / "ecosystem.jsonl.gz")]
    return (
        records,
        read_jsonl_gz(out / "ecosystem.sites.jsonl.gz"),
        read_jsonl_gz(out / "ecosystem.releases.jsonl.gz"),
    )


def test_no_commit_is_named_when_the_tables_do_not_read_as_the_releases_do(built: Built) -> None:
    """A sites table written by another harvester (its conditions spelled otherwise) is not matched
    against today's harvest: precision first, no row."""
    records, sites, releases = _tables(built.out)
    for row in sites:
        for group in row["releases"]:
            for site in group["sites"]:
                if site.get("condition") == "index >= len":
                    site["condition"] = "len <= index"
    repository = GitRepository(built.repo.git_dir)
    try:
        assert condition_rows(records, sites, releases, {REPO: repository}) == []
        assert condition_rows(records, *_tables(built.out)[1:], {REPO: repository}) != []
    finally:
        repository.close()


def test_the_history_step_rewrites_only_the_history_table_and_the_same_bytes(
    built: Built, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(built.out, data)
    before = {path.name: path.read_bytes() for path in data.iterdir()}
    history = data / "ecosystem.history.jsonl.gz"
    with gzip.open(history, "wt", encoding="utf-8") as handle:
        handle.write("")  # an old table without the condition rows
    assert main(["catalog", "ecosystem", "history", "--data", str(data), "--git-dir", built.git_dir_arg]) == 0
    assert {path.name: path.read_bytes() for path in data.iterdir()} == before
    assert main(["catalog", "ecosystem", "history", "--data", str(data), "--git-dir", built.git_dir_arg]) == 0
    assert history.read_bytes() == before[history.name]


def test_the_history_step_without_a_git_directory_exits_2(built: Built, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(built.out, data)
    assert main(["catalog", "ecosystem", "history", "--data", str(data)]) == 2


def test_the_card_names_the_change_and_its_commit(built: Built) -> None:
    service = PanicLookup(load_catalog([built.out / "ecosystem.jsonl.gz"]))
    path = f"/home/ana/.cargo/registry/src/{INDEX}/mycrate-0.1.0/src/lib.rs:4:9"
    paste = f"thread 'main' panicked at {path}:\nindex 5 out of range for length 3\n{NOTE}"
    result = service.lookup(paste)
    card = service.card(result)
    assert card is not None and card.fires_when == "index >= len"
    said = f'"{CHANGE_SUBJECT}" ({built.change_sha[:10]})'
    assert card.condition_note == (
        f"In mycrate 0.2.0 (commit {said}): `index >= len` before, `index > len` from then on."
    )
    assert f"**Condition changed:** {card.condition_note}" in render_markdown(card)
    data = service.answer_json(result)["card"]
    assert data["condition_note"] == card.condition_note
    [change] = data["history"]["condition_changes"]
    assert change["release"] == "v0.2.0" and change["after"] == ["index > len"]
    assert change["changed_by"] == {
        "commit": built.change_sha[:10],
        "subject": CHANGE_SUBJECT,
        "pull_request": 7,
        "since_release": "v0.1.0",
    }
    assert json.dumps(data)  # plain data
