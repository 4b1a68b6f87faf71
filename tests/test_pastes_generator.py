"""Tests for the chat-paste generator in tests/support/pastes.py."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.support import pastes
from tests.support.pastes import (
    FORMATS,
    NO_LOCATION_FORMATS,
    PATH_STYLES,
    Case,
    all_cases,
    fill_placeholders,
    load_records,
    negative_cases,
    render_path,
    runtime_message,
)

Catalog = tuple[list[dict], list[dict]]


@pytest.fixture(scope="module")
def data_dir() -> Path:
    return pastes.shared_data_dir()


@pytest.fixture(scope="module")
def catalog(data_dir: Path) -> tuple[list[dict], list[dict]]:
    return load_records(data_dir)


@pytest.fixture(scope="module")
def cases(data_dir: Path) -> list[Case]:
    return all_cases(data_dir, seed=0, per_format=60)


def _by_id(catalog: Catalog) -> dict[str, dict]:
    return {r["id"]: r for r in catalog[0]}


# ---- locating the data set ---------------------------------------------------------------------------


def test_the_data_set_is_the_catalog_committed_in_tests_fixtures(data_dir: Path, catalog: Catalog) -> None:
    """The tests read nothing beside the repository: a fresh clone holds the 1,199-record catalog and its
    sites table, paired by name so that load_catalog finds the side table beside the records."""
    assert data_dir == Path(__file__).resolve().parent / "fixtures"
    assert (data_dir / pastes.RECORDS_FILE).is_file() and (data_dir / pastes.SITES_FILE).is_file()
    assert pastes.SITES_FILE.removesuffix(".sites.jsonl") == pastes.RECORDS_FILE.removesuffix(".jsonl")
    records, sites = catalog
    assert len(records) == 1199 and len({r["id"] for r in records}) == 1199
    assert len(sites) == 1471 and {s["id"] for s in sites} == {r["id"] for r in records}


def test_the_catalog_fixture_loads_with_its_side_table() -> None:
    """load_catalog reads the records, and the sites file beside them as their side table, cleanly."""
    from bot.records import is_side_table, load_catalog

    assert is_side_table(pastes.shared_data_dir() / pastes.SITES_FILE)
    catalog = load_catalog([pastes.shared_data_dir() / pastes.RECORDS_FILE])
    assert not catalog.errors
    assert len(catalog.records) == 1199


# ---- the generated set -------------------------------------------------------------------------------


def test_same_seed_gives_same_cases(data_dir: Path) -> None:
    first = all_cases(data_dir, seed=7, per_format=5)
    assert first == all_cases(data_dir, seed=7, per_format=5)
    assert first != all_cases(data_dir, seed=8, per_format=5)


def test_every_format_family_is_present(cases: list[Case]) -> None:
    fmts = {c.fmt for c in cases}
    assert set(FORMATS) | {"typo"} <= fmts
    assert {"neg-unwrap", "neg-burn-like", "neg-empty"} <= fmts
    for fmt in FORMATS:
        assert sum(c.fmt == fmt for c in cases) == 60, fmt


def test_case_ids_are_unique(cases: list[Case]) -> None:
    assert len({c.id for c in cases}) == len(cases)


def test_located_pastes_show_the_site_file(cases: list[Case], catalog: Catalog) -> None:
    records = _by_id(catalog)
    for case in cases:
        if case.expect_auto_reply is False:
            continue
        assert case.has_location == (case.fmt not in NO_LOCATION_FORMATS), case.id
        if case.has_location:
            file_name = records[case.record_id]["filePath"].rsplit("/", 1)[-1]
            assert file_name in case.text, case.id


def test_accepted_ids_follow_the_location(cases: list[Case], catalog: Catalog) -> None:
    records = _by_id(catalog)
    for case in cases:
        if case.expect_auto_reply is False:
            continue
        if case.has_location:
            assert case.accepted_ids == {case.record_id}, case.id
        else:
            message = records[case.record_id]["errorMessage"]
            same = {r["id"] for r in catalog[0] if r["errorMessage"] == message}
            assert same <= case.accepted_ids, case.id


# Formats that paste the runtime message untouched (no escaping, colouring or indenting).
_VERBATIM = ("hdr-new", "hdr-threadid", "logger", "unwrap", "backtrace", "cargo-test", "multi", "no-header")


def test_verbatim_pastes_match_their_record_pattern(cases: list[Case], catalog: Catalog) -> None:
    records = _by_id(catalog)
    for case in cases:
        if case.fmt in _VERBATIM:
            pattern = records[case.record_id]["messagePattern"]
            assert re.search(pattern, case.text, re.DOTALL), case.id


def test_negatives_contain_no_record_message(cases: list[Case], catalog: Catalog) -> None:
    negatives = [c for c in cases if c.expect_auto_reply is False]
    assert negatives
    patterns = [re.compile(r["messagePattern"]) for r in catalog[0]]
    for case in negatives:
        assert not case.accepted_ids and not case.has_location and not case.record_id, case.id
        hits = [p.pattern for p in patterns if p.search(case.text)]
        assert not hits, (case.id, hits)


def test_unwrap_shaped_negatives_exist() -> None:
    texts = [c.text for c in negative_cases(random.Random(0), 40) if c.fmt == "neg-unwrap"]
    assert texts and all("called `Result::unwrap()` on an `Err` value:" in t for t in texts)


def test_slack_pastes_are_escaped(cases: list[Case]) -> None:
    slack = [c for c in cases if c.fmt == "slack"]
    assert any("\r\n" in c.text for c in slack)
    assert any("\u2019" in c.text for c in slack)
    for case in slack:
        # Only Slack's own <url|text> links may keep raw angle brackets.
        assert not re.search(r"<(?!https?://[^|>]+\|[^>]+>)", case.text), case.id


def test_typo_queries_differ_from_the_message(cases: list[Case], catalog: Catalog) -> None:
    records = _by_id(catalog)
    typos = [c for c in cases if c.fmt == "typo"]
    assert typos
    for case in typos:
        words = case.text.split()
        assert 3 <= len(words) <= 6, case.id
        assert "{" not in case.text, case.id
        assert case.text.lower() not in " ".join(records[case.record_id]["errorMessage"].split()).lower()


# ---- building blocks ---------------------------------------------------------------------------------

_PREFIXES = {
    "unimplemented": "not implemented: ",
    "todo": "not yet implemented: ",
    "unreachable": "internal error: entered unreachable code: ",
    "assert_eq": "assertion `left == right` failed: ",
    "debug_assert_eq": "assertion `left == right` failed: ",
    "tensor_check": "=== Tensor Operation Error ===\n  Operation: '",
}


def test_runtime_prefixes_per_kind(catalog: Catalog) -> None:
    records = _by_id(catalog)
    rng = random.Random(0)
    kinds_seen = set()
    for site in catalog[1]:
        record, kind = records[site["id"]], site["kind"]
        kinds_seen.add(kind)
        text = runtime_message(record, site, rng)
        if kind in _PREFIXES:
            assert text.startswith(_PREFIXES[kind]), (kind, text)
        if kind in ("assert_eq", "debug_assert_eq"):
            assert "\n  left: " in text and "\n right: " in text
        if kind == "tensor_check":
            assert "\n  Reason:\n    1. " in text and text.endswith("\n")
        if kind == "expect":
            assert text.startswith(record["errorMessage"])  # a plain &str: braces stay literal
            with_err = runtime_message(record, site, rng, result_expect=True)
            assert with_err.startswith(record["errorMessage"] + ": ")
        if kind in ("panic", "assert", "debug_assert"):
            assert re.fullmatch(record["messagePattern"], text, re.DOTALL), (kind, text)
    assert set(_PREFIXES) | {"expect", "panic", "assert"} <= kinds_seen


def test_fill_placeholders_replaces_every_placeholder() -> None:
    rng = random.Random(1)
    filled = fill_placeholders("got {} and {:?}, dtype {dtype:?} on {device:?}: {{literal}}", rng)
    assert not re.search(r"\{\}|\{:\?\}|\{dtype:\?\}|\{device:\?\}", filled)
    assert filled.endswith("{literal}")


def test_same_name_gets_same_value() -> None:
    filled = fill_placeholders("{dim}|{dim}", random.Random(2))
    left, right = filled.split("|")
    assert left == right


def test_pretty_debug_spans_lines() -> None:
    filled = fill_placeholders("found dims={dims:#?}", random.Random(3))
    assert filled.count("\n") >= 2 and filled.rstrip().endswith("]")


@pytest.mark.parametrize("style", PATH_STYLES)
def test_render_path_keeps_the_file_name(style: str) -> None:
    path = render_path("crates/burn-autodiff/src/ops/module.rs", random.Random(4), style)
    assert path.endswith("module.rs")
    assert "burn-autodiff" in path
