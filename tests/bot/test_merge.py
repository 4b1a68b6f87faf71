"""Merging analysed records over a harvested baseline: which baseline sites an analysed record covers."""

from __future__ import annotations

from typing import Any

import pytest

from bot.merge import merge_catalogs
from bot.records import Record

MODULE = "crates/burn-autodiff/src/ops/module.rs"
FLEX = "crates/burn-flex/src/ops/module.rs"
DEFORM = "Can't differentiate deform conv 2d backward."


def record(record_id: str, message: str, path: str | None, line: int | None, **fields: Any) -> Record:
    return Record(
        id=record_id,
        errorMessage=message,
        filePath=path,
        lineNumber=line,
        repo=fields.pop("repo", "tracel-ai/burn"),
        **fields,
    )


def ids(records: list[Record]) -> list[str]:
    return [r.id for r in records]


def test_analysed_record_covers_its_site_even_after_line_drift() -> None:
    analysed = [record("seed", DEFORM, MODULE, 915, solutions=("Use a backend that supports it",))]
    # 300 lines away, far beyond the tolerance: still the only site of this message in this file.
    baseline = [record("base-deform", DEFORM, MODULE, 1215), record("base-other", "Other", MODULE, 10)]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["seed", "base-other"]
    assert (result.analysed, result.baseline_covered, result.baseline_added) == (1, 1, 1)
    assert result.covered_by == {"base-deform": "seed"}
    # The analysed record wins as it is: its analysis and its line, not the baseline's.
    assert result.records[0] is analysed[0]
    assert result.records[0].solutions == ("Use a backend that supports it",)


def test_same_message_in_another_file_is_another_site() -> None:
    analysed = [record("seed", DEFORM, MODULE, 915)]
    baseline = [record("base-flex", DEFORM, FLEX, 915), record("base-module", DEFORM, MODULE, 915)]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["seed", "base-flex"]
    assert result.covered_by == {"base-module": "seed"}


def test_a_site_per_record_baseline_keeps_the_far_sites_of_one_message() -> None:
    analysed = [record("seed", "Unsupported", MODULE, 100)]
    baseline = [
        record("near-before", "Unsupported", MODULE, 60),
        record("far", "Unsupported", MODULE, 400),
        record("near-after", "Unsupported", MODULE, 150),
    ]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["seed", "far"]
    assert (result.baseline_covered, result.baseline_added) == (2, 1)
    # A tighter tolerance: only what is that close; and with nothing that close, the nearest.
    assert ids(merge_catalogs(analysed, baseline, line_tolerance=40).records) == ["seed", "far", "near-after"]
    assert ids(merge_catalogs(analysed, baseline, line_tolerance=0).records) == ["seed", "far", "near-after"]
    moved = [record("seed", "Unsupported", MODULE, 1000)]
    assert ids(merge_catalogs(moved, baseline, line_tolerance=10).records) == [
        "seed",
        "near-before",
        "near-after",
    ]


def test_order_is_analysed_then_uncovered_baseline_each_as_given() -> None:
    analysed = [record("a2", "Second", FLEX, 5), record("a1", "First", MODULE, 5)]
    baseline = [
        record("b-third", "Third", MODULE, 30),
        record("b-first", "First", MODULE, 7),
        record("b-fourth", "Fourth", FLEX, 1),
        record("b-second", "Second", FLEX, 9),
    ]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["a2", "a1", "b-third", "b-fourth"]
    assert (result.analysed, result.baseline_covered, result.baseline_added) == (2, 2, 2)
    assert len(result.records) == result.analysed + result.baseline_added


def test_what_does_not_make_a_site_match() -> None:
    analysed = [
        record("no-file", "Lost", None, None),
        record("other-repo", "Elsewhere", MODULE, 5, repo="someone/fork"),
    ]
    baseline = [record("b-lost", "Lost", None, None), record("b-elsewhere", "Elsewhere", MODULE, 5)]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["no-file", "other-repo", "b-lost", "b-elsewhere"]
    assert result.baseline_covered == 0


def test_what_still_makes_a_site_match() -> None:
    analysed = [
        # Stored trimmed, written with a trailing space; no line; a Windows path.
        record("trimmed", "Node {node_id:?} is not in the backward_states.", MODULE, 84),
        record("no-line", "Should find node {node_id:?}", MODULE, None),
        record("windows", "Windows", "crates\\burn-autodiff\\src\\ops\\module.rs", 3, repo=None),
    ]
    baseline = [
        record("b-trimmed", "Node {node_id:?} is not in the backward_states. ", MODULE, 84),
        record("b-no-line", "Should find node {node_id:?}", MODULE, 38),
        record("b-windows", "Windows", MODULE, 3),
    ]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["trimmed", "no-line", "windows"]
    assert result.baseline_covered == 3


def test_a_baseline_record_with_an_analysed_id_is_covered() -> None:
    # Two records with one id: loading keeps the later one, which would be the baseline's.
    analysed = [record("same-id", "Analysed message", MODULE, 1)]
    baseline = [record("same-id", "Harvested message", FLEX, 1)]
    result = merge_catalogs(analysed, baseline)
    assert ids(result.records) == ["same-id"]
    assert result.covered_by == {"same-id": "same-id"}


def test_empty_inputs_and_bad_tolerance() -> None:
    assert merge_catalogs([], []).records == []
    baseline = [record("b", "Only", MODULE, 1)]
    result = merge_catalogs([], baseline)
    assert (ids(result.records), result.baseline_added) == (["b"], 1)
    with pytest.raises(ValueError, match="line_tolerance"):
        merge_catalogs([], baseline, line_tolerance=-1)
