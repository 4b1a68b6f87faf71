"""Typed questions searched in the words of the analyses written for records (BM25, `bm25s`).

A typed query ("my training hangs then says checkpointer thread") rarely holds the words of the message it is
about; the analysis written for that record (its documentation, when it happens, common situations, tags and
the message itself) often holds the user's words. `ProseIndex` ranks the analysed records by BM25 over that
text. It is built on the first typed query that needs it (never at start-up), over the analysed records only,
and it is a weaker signal than a message match: `bot.lookup` adds its hits after the message matches, with a
low confidence, never as an answer posted unasked.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.records import Record

# Words of no help in telling two analyses apart: English function words, and the words every issue title
# about a panic has (crash, fails, error).
_STOPWORDS_TEXT = """a an and are as at be been but by can could did do does doing for from had has have
how i if
in into is it its me my no not of on or our so such than that the their then there these they this those to
too was we were what when where which while who why will with would you your after before get gets got some
any all just also only very same other more most crash crashes crashed fails failed fail panic panics
panicked error errors issue bug"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_WORD = re.compile(r"[a-z][a-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
MIN_WORD = 2
# The analysis fields searched, and how many times each counts (the message and tags name the error).
FIELD_WEIGHTS = (
    ("errorMessage", 2),
    ("tags", 2),
    ("documentation", 1),
    ("triggerScenarios", 1),
    ("commonSituations", 1),
)


@functools.cache
def _english() -> Any:
    """Snowball's English stemmer, imported on the first typed question (never at start-up: the package
    imports the stemmers of all its languages, about 0.1-0.3 s)."""
    import snowballstemmer  # noqa: PLC0415

    return snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Snowball's English stem, so "hangs", "hanging" and "hanged" meet "hang", and "averaging" meets
    "average" (the analyses' vocabulary is small: each word is stemmed once)."""
    return str(_english().stemWord(word))


def words(text: str) -> list[str]:
    """Lower-case, stemmed words of a text; CamelCase and snake_case names are split into their words."""
    spaced = _CAMEL.sub(" ", text).replace("_", " ").lower()
    return [stem(w) for w in _WORD.findall(spaced) if len(w) >= MIN_WORD and w not in STOPWORDS]


def analysis_text(record: Record) -> str:
    """What the search reads of a record: its message, tags and the prose of its analysis."""
    parts: list[str] = []
    for name, weight in FIELD_WEIGHTS:
        value = getattr(record, name)
        text = " ".join(value) if isinstance(value, tuple) else (value or "")
        parts.extend([text] * weight)
    return "\n".join(parts)


@dataclass(frozen=True)
class ProseHit:
    record_index: int
    score: float
    """BM25 score; `relative` is it over the best hit's (1.0 for the first)."""
    relative: float
    shared: tuple[str, ...]
    """The query's words found in the record's analysis (as typed, at most a few): the reason shown."""


class ProseIndex:
    """BM25 over the analysis text of records, by their position in the matcher's catalog."""

    def __init__(self, records: Iterable[tuple[int, Record]]) -> None:
        import bm25s  # noqa: PLC0415  (bm25s loads only when a typed query first needs it)

        # bm25s logs each index built at DEBUG: a service's debug log (or a closed test stream) gets none.
        logging.getLogger("bm25s").setLevel(logging.WARNING)

        self._positions: list[int] = []
        corpus: list[list[str]] = []
        self._vocabularies: list[frozenset[str]] = []
        for position, record in records:
            tokens = words(analysis_text(record))
            self._positions.append(position)
            corpus.append(tokens or ["_"])
            self._vocabularies.append(frozenset(tokens))
        self._known = frozenset(word for vocabulary in self._vocabularies for word in vocabulary)
        self._bm25: Any = None
        if corpus:
            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    def __len__(self) -> int:
        return len(self._positions)

    def search(self, query: str, limit: int, least_share: float = 0.0) -> list[ProseHit]:
        """The best `limit` records for a query, best first; only those scoring above zero and at least
        `least_share` of the best one's score."""
        typed: dict[str, str] = {}
        for raw in _WORD.findall(_CAMEL.sub(" ", query).replace("_", " ").lower()):
            if len(raw) >= MIN_WORD and raw not in STOPWORDS:
                typed.setdefault(stem(raw), raw)
        tokens = [token for token in typed if token in self._known]
        if not tokens or self._bm25 is None or limit <= 0:
            return []
        scores = self._bm25.get_scores(tokens)
        order = sorted(range(len(scores)), key=lambda index: (-float(scores[index]), index))
        best = float(scores[order[0]])
        if best <= 0.0:
            return []
        hits = []
        for index in order[:limit]:
            score = float(scores[index])
            if score <= 0.0 or score < least_share * best:
                break
            shared = tuple(typed[token] for token in tokens if token in self._vocabularies[index])
            hits.append(ProseHit(self._positions[index], round(score, 3), score / best, shared[:6]))
        return hits
