"""Top-1 accuracy and auto-reply safety on realistic pastes generated from the 1,199-record catalog."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from bot.matcher import LookupResult, Matcher
from bot.records import load_catalog
from tests.support.pastes import NO_LOCATION_FORMATS, Case, all_cases, shared_data_dir

SEEDS = (0, 11)
PER_FORMAT = 80


@pytest.fixture(scope="module")
def data_dir() -> Path:
    return shared_data_dir()


@pytest.fixture(scope="module")
def outcomes(data_dir: Path) -> list[tuple[Case, LookupResult]]:
    catalog = load_catalog([data_dir / "burn-panics.jsonl"])
    assert not catalog.errors
    matcher = Matcher(catalog.records)
    cases = [case for seed in SEEDS for case in all_cases(data_dir, seed=seed, per_format=PER_FORMAT)]
    return [(case, matcher.lookup(case.text)) for case in cases]


def _top1_by_format(outcomes: list[tuple[Case, LookupResult]]) -> dict[str, float]:
    hits: dict[str, list[bool]] = defaultdict(list)
    for case, result in outcomes:
        if case.expect_auto_reply is False:
            continue
        top = result.matches[0].record.id if result.matches else None
        hits[case.fmt].append(top in case.accepted_ids)
    return {fmt: sum(values) / len(values) for fmt, values in hits.items()}


def test_pasted_catalogued_panics_find_their_record(outcomes: list[tuple[Case, LookupResult]]) -> None:
    """≥ 99 % top-1 for every paste format; with a location shown, the exact site is what counts."""
    rates = _top1_by_format(outcomes)
    pasted = {fmt: rate for fmt, rate in rates.items() if fmt != "typo"}
    assert len(pasted) >= 12, sorted(rates)
    low = {fmt: rate for fmt, rate in pasted.items() if rate < 0.99}
    assert not low, f"formats under 99 % top-1: {low}"
    overall = [
        (result.matches[0].record.id if result.matches else None) in case.accepted_ids
        for case, result in outcomes
        if case.expect_auto_reply is None and case.fmt != "typo"
    ]
    assert sum(overall) / len(overall) >= 0.995


def test_exact_site_when_the_location_is_shown(outcomes: list[tuple[Case, LookupResult]]) -> None:
    located = [(c, r) for c, r in outcomes if c.has_location and c.fmt not in NO_LOCATION_FORMATS]
    assert located
    exact = [r.matches[0].record.id == c.record_id for c, r in located if len(c.accepted_ids) == 1]
    assert sum(exact) / len(exact) >= 0.99


def test_typed_fragments_with_a_typo(outcomes: list[tuple[Case, LookupResult]]) -> None:
    assert _top1_by_format(outcomes)["typo"] >= 0.95


def test_chat_without_a_catalogued_panic_never_auto_replies(
    outcomes: list[tuple[Case, LookupResult]],
) -> None:
    negatives = [(c, r) for c, r in outcomes if c.expect_auto_reply is False]
    assert len(negatives) >= 100
    posted = [c.text[:80] for c, r in negatives if r.auto_reply]
    assert not posted
    answered = [c.text[:80] for c, r in negatives if r.best is not None and r.best.confidence >= 0.9]
    assert not answered


def test_every_auto_reply_is_right(outcomes: list[tuple[Case, LookupResult]]) -> None:
    """Posting unasked is only worth it when it is never wrong; and it should cover most header pastes."""
    replies = [(c, r) for c, r in outcomes if r.auto_reply]
    wrong = [c.id for c, r in replies if r.matches[0].record.id not in c.accepted_ids]
    assert not wrong
    headers = [r.auto_reply for c, r in outcomes if c.has_location and c.expect_auto_reply is None]
    assert sum(headers) / len(headers) >= 0.9


def test_confidence_is_calibrated_enough(outcomes: list[tuple[Case, LookupResult]]) -> None:
    """In each confidence band the share of right answers is at least the band's lower edge."""
    bands: dict[float, list[bool]] = defaultdict(list)
    for case, result in outcomes:
        if case.expect_auto_reply is False or not result.matches:
            continue
        top = result.matches[0]
        band = min(int(top.confidence * 10), 9) / 10
        bands[band].append(top.record.id in case.accepted_ids)
    for band, hits in bands.items():
        if len(hits) >= 30:
            assert sum(hits) / len(hits) >= band, (band, sum(hits), len(hits))


def test_a_lookup_verifies_a_handful_of_patterns_and_compiles_none(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's selectivity, counted rather than timed: a paste is checked against a few candidate
    patterns (not the catalog), and plain patterns never cost an RE2 program."""
    import bot.matcher as matcher_module
    from bot import patterns

    matcher = Matcher(load_catalog([data_dir / "burn-panics.jsonl"]).records)
    calls = 0
    literal = matcher_module.match_literal_word

    def counted(parts: tuple[str, ...], text: str) -> object:
        nonlocal calls
        calls += 1
        return literal(parts, text)

    monkeypatch.setattr(matcher_module, "match_literal_word", counted)
    patterns.compile_pattern.cache_clear()
    cases = [case for case in all_cases(data_dir, seed=3, per_format=20) if case.fmt == "hdr-new"]
    for case in cases:
        matcher.lookup(case.text)
    assert cases and calls / len(cases) < 10, calls / len(cases)
    compiled = patterns.compile_pattern.cache_info().misses
    assert compiled <= 2  # the catalog's two records with a regex of their own, at most
