"""The autocomplete index answers what a scan of every record answers, in the same order."""

from __future__ import annotations

import time
from functools import cache

import pytest

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
