"""The autocomplete index answers what a scan of every record answers, in the same order."""

from __future__ import annotations

import time
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import Autocomplete, PanicLookup, Record
from bot.records import default_catalog


@cache
def embedded() -> PanicLookup:
    return PanicLookup(default_catalog())


def scanned(records: list[Record], query: str) -> tuple[list[str], list[str]]:
    """The old way: every record's message and tags read on each keystroke."""
    by_message = [r for r in records if query in r.errorMessage.lower()]
    by_message.sort(key=lambda record: record.errorMessage.lower().find(query))
    by_tag = [r for r in records if any(tag.lower().startswith(query) for tag in r.tags)]
    return [r.id for r in by_message], [r.id for r in by_tag]


QUERIES = [
    "avg pool",
    "differentiate",
    "ifferentia",  # inside a word
    "pool 2d back",  # a word's start after complete words
    "can't",
    "shape",
    "tensor",
    "index out of bounds",
    "{}",  # no word characters at all
    "called `option::unwrap()`",
    "autodiff",
    "wgpu",
    "zzzz-not-there",
]


@pytest.mark.parametrize("query", QUERIES)
def test_index_answers_as_a_scan(query: str) -> None:
    service = embedded()
    index = service.autocomplete
    messages, tags = scanned(service.matcher.records, query)
    assert [r.id for r in index.by_message(query)] == messages
    assert [r.id for r in index.by_tag(query)] == tags


def test_suggest_merges_messages_tags_and_guesses() -> None:
    service = embedded()
    first = service.suggest("Can't differentiate avg pool 2d backward")
    assert first and "avg pool 2d backward" in first[0].errorMessage.lower()
    assert len(service.suggest("tensor")) == 25
    assert len({r.id for r in service.suggest("shape", limit=10)}) == len(service.suggest("shape", limit=10))
    empty = service.suggest("   ")
    assert len(empty) == 25
    analysed = [r.has_analysis for r in empty]
    assert analysed == sorted(analysed, reverse=True)  # analysed records first


def test_a_keystroke_reads_postings_not_every_record() -> None:
    service = embedded()
    index = service.autocomplete
    started = time.perf_counter()
    for query in ("avg", "avg p", "avg po", "avg poo", "avg pool", "deform conv"):
        index.by_message(query)
        index.by_tag(query)
    assert time.perf_counter() - started < 1.0


def test_small_catalog() -> None:
    records = embedded().matcher.records[:50]
    index = Autocomplete(records)
    assert [r.id for r in index.analysed_first(100)] == [
        r.id for r in sorted(records, key=lambda record: not record.has_analysis)
    ]
    word = records[0].errorMessage.lower().split()[0]
    assert records[0] in index.by_message(word)


# -- large catalogs ------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_trigram_index_finds_the_words_a_scan_finds(data: st.DataObject) -> None:
    index = embedded().autocomplete
    vocabulary = index._vocabulary
    word = data.draw(st.sampled_from(vocabulary))
    start = data.draw(st.integers(0, max(0, len(word) - 1)))
    fragment = data.draw(
        st.one_of(st.just(word[start : start + 5]), st.text("abcdeilnorst_0123", max_size=6))
    )
    found = index._words_holding(fragment)
    if len(fragment) < 3:
        assert found is None
    else:
        assert found is not None
        assert sorted(found) == sorted(w for w in vocabulary if fragment in w)


def test_a_large_catalog_answers_as_a_scan_where_it_can_and_reads_a_bounded_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above FULL_SCAN_RECORDS a keystroke reads at most READ_BUDGET candidates besides the messages that
    start with the query: the scan's answer whenever `limit` messages start with it or the candidates fit."""
    from bot import autocomplete

    monkeypatch.setattr(autocomplete, "FULL_SCAN_RECORDS", 100)
    monkeypatch.setattr(autocomplete, "READ_BUDGET", 200)
    records = embedded().matcher.records
    index = Autocomplete(records)
    exact = 0
    for query in (
        "can",
        "can't",
        "unsupported",
        "differentiate",
        "avg pool",
        "tensor",
        "float_",
        "index out",
    ):
        messages, _ = scanned(records, query)
        got = [r.id for r in index.by_message(query, 10)]
        assert len(got) == min(10, len(messages))
        assert set(got) <= set(messages)  # never a record that does not hold the query
        starting = sum(1 for r in records if r.errorMessage.lower().startswith(query))
        holding = index._records_holding(max(query.split(), key=len).strip("'"))
        if starting >= 10 or (holding is not None and len(holding) <= 200):
            assert got == messages[:10], query
            exact += 1
    assert exact >= 4


def test_suggest_reads_no_guesses_when_the_typed_text_fills_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    service = PanicLookup(default_catalog())

    def no_lookup(*_: object, **__: object) -> None:
        raise AssertionError("a lookup ran for a keystroke whose matches filled the list")

    monkeypatch.setattr(service, "lookup", no_lookup)
    assert len(service.suggest("tensor")) == 25


def test_over_the_word_and_posting_budgets_a_fragment_narrows_nothing_and_answers_stay_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot import autocomplete

    monkeypatch.setattr(autocomplete, "FULL_SCAN_RECORDS", 100)
    records = embedded().matcher.records
    for budget in ("WORD_BUDGET", "POSTING_BUDGET"):
        with monkeypatch.context() as patched:
            patched.setattr(autocomplete, budget, 1)
            index = Autocomplete(records)
            assert index._records_holding("shape") is None  # held by more than one word / record
            got = index.by_message("shape", 10)
            assert len(got) == 10 and all("shape" in r.errorMessage.lower() for r in got)
    assert Autocomplete(records)._records_holding("shape") is not None  # within the budgets it narrows
