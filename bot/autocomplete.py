"""Suggestions while someone types a query: records whose message contains the text typed, then records with a
tag starting with it. Built once per catalog; a keystroke reads a few postings instead of every record."""

from __future__ import annotations

import bisect
import heapq
import re
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from bot.records import Record

_WORD = re.compile(r"\w+")
# Vocabulary words holding a typed fragment, kept per fragment (a keystroke repeats the previous ones).
FRAGMENT_CACHE = 4_096
# A fragment found in more than 1/COMMON_FRACTION of the vocabulary narrows nothing: every record is read.
COMMON_FRACTION = 8


class Autocomplete:
    """Records by the words of their message (every word that contains a typed fragment, found in the
    vocabulary) and by tag prefix. Answers exactly what a scan of every record would, in the same order."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = list(records)
        self._messages = [record.errorMessage.lower() for record in self.records]
        postings: defaultdict[str, list[int]] = defaultdict(list)
        tags: defaultdict[str, list[int]] = defaultdict(list)
        for position, (record, message) in enumerate(zip(self.records, self._messages, strict=True)):
            for word in set(_WORD.findall(message)):
                postings[word].append(position)
            for tag in {tag.lower() for tag in record.tags}:
                tags[tag].append(position)
        self._postings = {word: np.array(ids, dtype=np.int64) for word, ids in postings.items()}
        self._vocabulary = list(self._postings)
        self._tags = sorted(tags)
        self._tag_postings = [tags[tag] for tag in self._tags]
        self._analysed_first = sorted(
            range(len(self.records)), key=lambda i: not self.records[i].has_analysis
        )
        self._holding = lru_cache(maxsize=FRAGMENT_CACHE)(self._records_holding)

    def _records_holding(self, fragment: str) -> npt.NDArray[np.int64] | None:
        """Positions of the records with a message word that contains `fragment` (a run of word chars);
        None when so many words hold it (a letter or two) that reading every record is cheaper."""
        words = [word for word in self._vocabulary if fragment in word]
        if len(words) > len(self._vocabulary) // COMMON_FRACTION:
            return None
        if not words:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.concatenate([self._postings[word] for word in words]))

    def by_message(self, query: str, limit: int | None = None) -> list[Record]:
        """Records whose message contains `query` (lower case), earliest occurrence first, then in catalog
        order (the first `limit` of them). Each word-character run of the query lies inside one word of
        such a message, so the records holding every run are the only candidates."""
        candidates: npt.NDArray[np.int64] | None = None
        for fragment in sorted(set(_WORD.findall(query)), key=len, reverse=True)[:4]:
            holding = self._holding(fragment)
            if holding is None:
                continue
            candidates = (
                holding if candidates is None else np.intersect1d(candidates, holding, assume_unique=True)
            )
        positions: Sequence[int] = range(len(self.records)) if candidates is None else candidates.tolist()
        messages = self._messages
        found = ((messages[i].find(query), i) for i in positions if query in messages[i])
        ranked = sorted(found) if limit is None else heapq.nsmallest(limit, found)
        return [self.records[i] for _, i in ranked]

    def by_tag(self, query: str) -> list[Record]:
        """Records with a tag starting with `query` (lower case), in catalog order."""
        start = bisect.bisect_left(self._tags, query)
        positions: set[int] = set()
        for index in range(start, len(self._tags)):
            if not self._tags[index].startswith(query):
                break
            positions.update(self._tag_postings[index])
        return [self.records[i] for i in sorted(positions)]

    def analysed_first(self, limit: int) -> list[Record]:
        """What an empty query offers: analysed records first, in catalog order."""
        return [self.records[i] for i in self._analysed_first[:limit]]
