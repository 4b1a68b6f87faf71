"""The autocomplete index answers what a scan of every record answers, in the same order."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

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


# -- bounded keystrokes (issue 15: p99 <= 2 ms at a million records) ----------------------------------------


@pytest.mark.parametrize(("bitmap_least", "place_budget"), [(1, 0), (1, 10**9), (10**9, 0), (40, 0)])
def test_every_way_of_finding_a_fragments_words_finds_the_scans_words(
    monkeypatch: pytest.MonkeyPatch, bitmap_least: int, place_budget: int
) -> None:
    """The trigrams' word lists, their bitmaps (a trigram of many words), and the places of the rarest
    trigram (checked in numpy) all give the words a scan gives."""
    from bot import autocomplete

    monkeypatch.setattr(autocomplete, "BITMAP_MIN_WORDS", bitmap_least)
    monkeypatch.setattr(autocomplete, "BITMAP_FRACTION", 10**9)  # so BITMAP_MIN_WORDS decides
    monkeypatch.setattr(autocomplete, "PLACE_BUDGET", place_budget)
    records = embedded().matcher.records
    index = Autocomplete(records)
    assert bool(index._gram_bits) == (bitmap_least < 10**9)
    vocabulary = index._vocabulary
    fragments = [
        "ten",
        "tensor",
        "ensor",
        "shape",
        "differentiat",
        "backward",
        "xyzzy",
        "ore",
        "unwrap",
        "_2d",
    ]
    fragments += [word[1:5] for word in vocabulary[::97] if len(word) >= 4]
    for fragment in fragments:
        found = index._words_holding(fragment)
        assert found is not None
        assert found == [w for w in vocabulary if fragment in w], fragment  # in vocabulary order
        assert index._words_holding(fragment, 0) == (None if found else [])


def large(monkeypatch: pytest.MonkeyPatch) -> Autocomplete:
    """The embedded catalog's index, answering as a catalog above FULL_SCAN_RECORDS does."""
    from bot import autocomplete

    monkeypatch.setattr(autocomplete, "FULL_SCAN_RECORDS", 100)
    monkeypatch.setattr(autocomplete, "READ_BUDGET", 200)
    return Autocomplete(embedded().matcher.records)


def refuse_fragments(monkeypatch: pytest.MonkeyPatch, index: Autocomplete) -> None:
    def no_fragment(fragment: str) -> None:
        raise AssertionError(f"the records holding {fragment!r} were looked up")

    monkeypatch.setattr(index, "_holding", no_fragment)


def test_messages_starting_with_the_query_answer_before_any_fragment_is_looked_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = large(monkeypatch)
    records = index.records
    query = "can't"
    assert sum(r.errorMessage.lower().startswith(query) for r in records) >= 10
    refuse_fragments(monkeypatch, index)
    assert [r.id for r in index.by_message(query, 10)] == scanned(records, query)[0][:10]


def test_the_next_keystroke_reads_only_the_records_that_held_the_last_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When every candidate of a query was read, its holders are kept: a query extending it (the next
    keystrokes) reads only them, looks no fragment up, and is still the scan's answer."""
    index = large(monkeypatch)
    records = index.records
    typed = "avg pool 2d backward"
    first = index.by_message("avg pool", 10)
    assert [r.id for r in first] == scanned(records, "avg pool")[0][:10]
    refuse_fragments(monkeypatch, index)
    for end in range(len("avg pool") + 1, len(typed) + 1):
        query = typed[:end]
        assert [r.id for r in index.by_message(query, 10)] == scanned(records, query)[0][:10], query
    assert index._known_holders("avg pool 2d backward and more") is not None  # a prefix's holders
    assert index._known_holders("pool 2d") is None  # not a prefix of a kept query


class CountingMessages(list[str]):
    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingMessages.reads += 1
        return super().__getitem__(index)


def test_past_the_read_budget_a_keystroke_reads_a_bounded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates beyond READ_BUDGET (a query of common words): no answer is the scan's anyway, so at most
    SAMPLE_BUDGET of them are read, and what is returned holds the query."""
    from bot import autocomplete

    index = large(monkeypatch)
    monkeypatch.setattr(autocomplete, "SAMPLE_BUDGET", 50, raising=False)
    query = "e"  # in nearly every message, and too short to narrow anything
    monkeypatch.setattr(index, "_messages", CountingMessages(index._messages))
    CountingMessages.reads = 0
    got = index.by_message(query, 10)
    assert 0 < len(got) <= 10 and all(query in r.errorMessage.lower() for r in got)
    assert CountingMessages.reads <= 50


def test_suggest_guesses_without_a_lookup_and_still_reads_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guesses come from `Matcher.typed_guesses` (bounded), never from a whole lookup of each keystroke."""
    service = PanicLookup(default_catalog())

    def no_lookup(*_: object, **__: object) -> None:
        raise AssertionError("a lookup ran for a keystroke")

    monkeypatch.setattr(service, "lookup", no_lookup)
    typed = "Can't diferentiate avg pool 2d bakward"  # two typos: no message holds it
    assert not service.autocomplete.by_message(typed.lower(), 25)
    guesses = service.suggest(typed)
    assert guesses and "avg pool 2d backward" in guesses[0].errorMessage.lower()


def test_typed_guesses_read_at_most_their_budget_of_each_words_records() -> None:
    matcher = embedded().matcher
    words, _ = matcher._query_words("tensor shape must be")
    assert all(len(matcher._postings[w.readings[0][0]]) > 3 for w in words)
    ids, sums = matcher._word_sums(words, 3)
    assert 0 < len(ids) <= 3 * len(words) and len(sums) == len(ids)
    full_ids, _ = matcher._word_sums(words)
    assert set(ids.tolist()) <= set(full_ids.tolist()) and len(full_ids) > len(ids)
    guesses = matcher.typed_guesses("tensor shape must be", 5, 3, 10, 0.0)
    assert 0 < len(guesses) <= 5
