"""Catalog files with side tables: gzip, `X.sites.jsonl` / `X.releases.jsonl` beside `X.jsonl`, the word
`default`, and analysed records winning their sites over the baseline whatever the load order."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from bot.records import (
    DEFAULT_CATALOG_NAME,
    Catalog,
    catalog_files,
    default_catalog,
    load_catalog,
)

SEED_IDS = {"5c5da46720dbbf10", "d59d5538758c7e08", "8d1d2fa6df3880bd"}
REPO = "tracel-ai/burn"
FILE = "crates/burn-core/src/module/base.rs"
MESSAGE = "Can't load the record: {}"
VERSION = "2025-01-01T00:00:00.000Z"


def baseline(record_id: str = "b1", message: str = MESSAGE, line: int = 120) -> dict[str, Any]:
    return {
        "id": record_id,
        "repo": REPO,
        "filePath": FILE,
        "lineNumber": line,
        "errorMessage": message,
        "messagePattern": "Can't load the record: (.+?)",
    }


def analysed(record_id: str = "a1", line: int = 100) -> dict[str, Any]:
    return {
        **baseline(record_id, line=line),
        "documentation": "The record file does not match the module.",
        "solutions": ["Save the record with the same module."],
    }


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps({"record": r, "datasetVersion": VERSION}) + "\n" for r in records)


def rows(values: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(v) + "\n" for v in values)


RELEASE_ROWS = [
    {
        "repo": REPO,
        "ref": "v0.15.0",
        "sha": "1" * 40,
        "date": "2024-10-01",
        "crates": {"burn-core": "0.15.0"},
    },
    {
        "repo": REPO,
        "ref": "v0.16.0",
        "sha": "2" * 40,
        "date": "2025-01-01",
        "crates": {"burn-core": "0.16.0"},
    },
]


def site_row(record_id: str = "b1") -> dict[str, Any]:
    return {
        "id": record_id,
        "repo": REPO,
        "filePath": FILE,
        "releases": [
            {
                "refs": ["v0.15.0"],
                "crate": "burn-core",
                "sites": [{"line": 100, "column": 9, "kind": "panic"}],
            },
            {
                "refs": ["v0.16.0"],
                "crate": "burn-core",
                "sites": [{"line": 120, "column": 9, "kind": "panic"}],
            },
        ],
    }


def write(path: Path, text: str, *, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def write_baseline(folder: Path, *, gz: bool = False, stem: str = "ecosystem") -> Path:
    """A baseline catalog with both side tables beside it."""
    suffix = ".jsonl.gz" if gz else ".jsonl"
    write(folder / f"{stem}.releases{suffix}", rows(RELEASE_ROWS), gz=gz)
    write(folder / f"{stem}.sites{suffix}", rows([site_row()]), gz=gz)
    return write(folder / f"{stem}{suffix}", jsonl([baseline()]), gz=gz)


def summary(catalog: Catalog) -> list[tuple[str, str | None, int | None]]:
    return [(e.record.id, e.dataset_version, e.record.lineNumber) for e in catalog.entries]


def site_lines(catalog: Catalog, record_id: str) -> list[tuple[str, int, str | None]]:
    return [(s.release.ref, s.line, s.version) for s in catalog.releases.sites_of(record_id)]


# ---- gzip ----------------------------------------------------------------------------------------------


def test_a_gzipped_catalog_loads_like_the_plain_one(tmp_path: Path) -> None:
    plain = load_catalog([write_baseline(tmp_path / "plain")])
    zipped_path = write_baseline(tmp_path / "zipped", gz=True)
    zipped = load_catalog([zipped_path])
    assert plain.errors == [] and zipped.errors == []
    assert summary(zipped) == summary(plain) == [("b1", VERSION, 120)]
    assert zipped.entries[0].source == str(zipped_path)
    assert (
        site_lines(zipped, "b1")
        == site_lines(plain, "b1")
        == [("v0.15.0", 100, "0.15.0"), ("v0.16.0", 120, "0.16.0")]
    )
    assert [r.ref for r in zipped.releases.releases[REPO]] == ["v0.15.0", "v0.16.0"]


def test_a_plain_catalog_with_gzipped_side_tables(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    write(folder / "x.releases.jsonl.gz", rows(RELEASE_ROWS), gz=True)
    write(folder / "x.sites.jsonl.gz", rows([site_row()]), gz=True)
    catalog = load_catalog([write(folder / "x.jsonl", jsonl([baseline()]))])
    assert catalog.errors == []
    assert [ref for ref, _, _ in site_lines(catalog, "b1")] == ["v0.15.0", "v0.16.0"]


@pytest.mark.parametrize(
    "data",
    [
        b"\x1f\x8b\x08\x00garbage that is no deflate stream",
        gzip.compress(jsonl([baseline()]).encode(), mtime=0)[:25],  # cut short
        b"\x1f\x8b",
    ],
    ids=["garbage", "truncated", "magic-only"],
)
def test_a_corrupt_gzip_is_one_reported_problem(tmp_path: Path, data: bytes) -> None:
    good = write(tmp_path / "good.jsonl", jsonl([analysed()]))
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(data)
    catalog = load_catalog([bad, good])
    assert [(p.source, p.line) for p in catalog.errors] == [(str(bad), 0)]
    assert "not a readable gzip file" in catalog.errors[0].reason
    assert [e.record.id for e in catalog.entries] == ["a1"]


def test_a_corrupt_gzipped_side_table_is_reported_and_the_records_still_load(tmp_path: Path) -> None:
    path = write_baseline(tmp_path, gz=True)
    (tmp_path / "ecosystem.sites.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00not deflate")
    catalog = load_catalog([path])
    assert [e.record.id for e in catalog.entries] == ["b1"]
    assert [(p.source, p.line) for p in catalog.errors] == [(str(tmp_path / "ecosystem.sites.jsonl.gz"), 0)]
    assert not catalog.releases.sites_of("b1")
    assert [r.ref for r in catalog.releases.releases[REPO]] == ["v0.15.0", "v0.16.0"]


def test_a_bad_side_table_row_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    path = write_baseline(tmp_path)
    sites = tmp_path / "ecosystem.sites.jsonl"
    sites.write_text("not json\n" + rows([site_row()]) + "[1, 2]\n", encoding="utf-8")
    catalog = load_catalog([path])
    assert [(p.source, p.line) for p in catalog.errors] == [(str(sites), 1), (str(sites), 3)]
    assert len(catalog.releases.sites_of("b1")) == 2


# ---- folders -------------------------------------------------------------------------------------------


def test_a_folder_loads_side_tables_as_side_tables_not_as_bad_records(tmp_path: Path) -> None:
    write(tmp_path / "x.jsonl", jsonl([baseline()]))
    write(tmp_path / "x.sites.jsonl", rows([site_row()]))
    write(tmp_path / "x.releases.jsonl", rows(RELEASE_ROWS))
    write_baseline(tmp_path / "nested", gz=True, stem="y")
    expected = [tmp_path / "nested" / "y.jsonl.gz", tmp_path / "x.jsonl"]
    assert catalog_files(tmp_path) == expected
    catalog = load_catalog([tmp_path])
    assert catalog.errors == []
    assert [f.source for f in catalog.files] == [str(p) for p in expected]
    assert {f.records for f in catalog.files} == {1}
    # one id in both files: the later file's record replaces the earlier, reported as a duplicate
    assert [e.record.id for e in catalog.entries] == ["b1"]
    assert len(catalog.duplicates) == 1
    assert catalog.releases.sites_of("b1")


def test_a_folder_holding_only_side_tables_holds_no_catalog(tmp_path: Path) -> None:
    write(tmp_path / "x.sites.jsonl", rows([site_row()]))
    catalog = load_catalog([tmp_path])
    assert catalog.entries == []
    assert [(p.source, p.reason) for p in catalog.errors] == [
        (str(tmp_path), "folder holds no .jsonl/.json catalog file")
    ]


# ---- the embedded catalog ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedded() -> Catalog:
    return default_catalog()


def test_default_among_catalog_paths_is_the_embedded_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedded: Catalog
) -> None:
    monkeypatch.chdir(tmp_path)  # no file called `default` here
    extra = write(tmp_path / "extra.jsonl", jsonl([analysed("extra-1")]))
    catalog = load_catalog(["default", extra])
    ids = {e.record.id for e in catalog.entries}
    assert ids >= SEED_IDS
    assert "extra-1" in ids
    assert {e.record.id for e in embedded.entries} <= ids
    assert len(catalog.entries) == len(embedded.entries) + 1
    assert any(e.source == DEFAULT_CATALOG_NAME for e in catalog.entries)
    assert catalog.releases  # the ecosystem side tables came with it
    assert catalog.releases.releases.keys() == embedded.releases.releases.keys()


def test_an_extra_analysed_record_covers_an_embedded_baseline_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedded: Catalog
) -> None:
    monkeypatch.chdir(tmp_path)
    twin = next(
        e.record
        for e in embedded.entries
        if not e.record.has_analysis and len(embedded.releases.sites_of(e.record.id)) >= 2
    )
    mine = {
        **twin.model_dump(mode="json", exclude_none=True),
        "id": "my-analysis",
        "documentation": "What it means.",
        "solutions": ["Do this."],
    }
    for order in (["default", "extra.jsonl"], ["extra.jsonl", "default"]):
        write(tmp_path / "extra.jsonl", jsonl([mine]))
        catalog = load_catalog(order)
        ids = {e.record.id for e in catalog.entries}
        assert "my-analysis" in ids and twin.id not in ids
        assert catalog.covered[twin.id] == "my-analysis"
        assert catalog.releases.sites_of("my-analysis") == embedded.releases.sites_of(twin.id)


def test_the_word_default_is_a_file_when_one_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "default", jsonl([analysed("local-default")]))
    catalog = load_catalog(["default"])
    assert [e.record.id for e in catalog.entries] == ["local-default"]


def test_default_catalog_holds_the_seeds_the_runtime_records_and_the_baseline(embedded: Catalog) -> None:
    catalog = embedded
    assert catalog.errors == []
    ids = {e.record.id for e in catalog.entries}
    assert ids >= SEED_IDS
    assert any(not e.record.has_analysis for e in catalog.entries)  # the ecosystem baseline
    assert sum(e.record.has_analysis for e in catalog.entries) > len(SEED_IDS)  # seeds and runtime records
    # no baseline record is left beside the analysed record that covers it
    for covered, by in catalog.covered.items():
        assert covered not in ids or covered == by
        assert by in ids


# ---- settle: analysed records win their sites ----------------------------------------------------------


@pytest.mark.parametrize("analysed_first", [True, False], ids=["analysed-first", "baseline-first"])
def test_an_analysed_record_replaces_its_baseline_twin_whatever_the_order(
    tmp_path: Path, analysed_first: bool
) -> None:
    baseline_path = write_baseline(tmp_path / "baseline", gz=True)
    analysed_path = write(tmp_path / "analysed.jsonl", jsonl([analysed("a1", line=100)]))
    order = [analysed_path, baseline_path] if analysed_first else [baseline_path, analysed_path]
    catalog = load_catalog(order)
    assert catalog.errors == []
    assert [e.record.id for e in catalog.entries] == ["a1"]
    assert catalog.entries[0].record.has_analysis
    assert catalog.covered == {"b1": "a1"}
    # the analysed record takes over the baseline's releases
    assert site_lines(catalog, "a1") == [("v0.15.0", 100, "0.15.0"), ("v0.16.0", 120, "0.16.0")]
    gone = catalog.releases.gone_since("a1")
    assert gone is None


def test_within_one_file_too(tmp_path: Path) -> None:
    for records in ([baseline(), analysed()], [analysed(), baseline()]):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        write(folder / "x.releases.jsonl", rows(RELEASE_ROWS))
        write(folder / "x.sites.jsonl", rows([site_row()]))
        catalog = load_catalog([write(folder / "x.jsonl", jsonl(records))])
        assert [e.record.id for e in catalog.entries] == ["a1"]
        assert len(catalog.releases.sites_of("a1")) == 2


def test_a_baseline_record_of_another_message_or_file_stays(tmp_path: Path) -> None:
    other_message = baseline("b2", message="Another message: {}")
    other_file = {**baseline("b3"), "filePath": "crates/burn-core/src/module/param.rs"}
    path = write(tmp_path / "x.jsonl", jsonl([baseline(), other_message, other_file, analysed()]))
    catalog = load_catalog([path])
    assert [e.record.id for e in catalog.entries] == ["b2", "b3", "a1"]
    assert catalog.covered == {"b1": "a1"}


def test_an_analysed_record_with_its_own_sites_keeps_them(tmp_path: Path) -> None:
    baseline_path = write_baseline(tmp_path / "baseline")
    own = {**site_row("a1"), "releases": [site_row()["releases"][0]]}
    folder = tmp_path / "analysed"
    write(folder / "a.sites.jsonl", rows([own]))
    analysed_path = write(folder / "a.jsonl", jsonl([analysed()]))
    catalog = load_catalog([baseline_path, analysed_path])
    assert [ref for ref, _, _ in site_lines(catalog, "a1")] == ["v0.15.0"]


@pytest.mark.parametrize("analysed_first", [True, False], ids=["analysed-first", "baseline-first"])
def test_a_duplicate_id_keeps_the_analysed_record_in_either_order(
    tmp_path: Path, analysed_first: bool
) -> None:
    bare = baseline("same-id", line=120)
    rich = analysed("same-id", line=100)
    first, second = (rich, bare) if analysed_first else (bare, rich)
    path_a = write(tmp_path / "a.jsonl", jsonl([first]))
    path_b = write(tmp_path / "b.jsonl", jsonl([second]))
    catalog = load_catalog([path_a, path_b])
    assert [(e.record.id, e.record.has_analysis, e.record.lineNumber) for e in catalog.entries] == [
        ("same-id", True, 100)
    ]
    assert len(catalog.duplicates) == 1
    assert "same-id" in catalog.duplicates[0].reason
    # and within one file
    catalog = load_catalog([write(tmp_path / "one.jsonl", jsonl([first, second]))])
    assert [(e.record.id, e.record.has_analysis) for e in catalog.entries] == [("same-id", True)]
