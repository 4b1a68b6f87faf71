"""Suggestions while someone types a query: records whose message contains the text typed, then records with a
tag starting with it. Built once per catalog; a keystroke reads a few postings instead of every record, and
finds the vocabulary words holding a typed fragment through a trigram index instead of reading every word."""

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
# Up to this many records, every keystroke is answered as a scan of every record would answer it. In a larger
# catalog, the messages that start with the query come first: the earliest place a query can be, so when they
# are `limit` or more the answer is still the scan's (two letters typed into a million records); otherwise
# they are ranked with the candidates of READ_BUDGET.
FULL_SCAN_RECORDS = 20_000
# In a larger catalog a keystroke reads at most this many candidate records (the first, in catalog order)
# besides the messages that start with the query: a common fragment ("con") is in tens of thousands.
READ_BUDGET = 1_500
# And it narrows a query by a fragment only when at most this many vocabulary words hold all its trigrams
# (each is then checked) and their records are at most POSTING_BUDGET: else the fragment narrows nothing.
WORD_BUDGET = 5_000
POSTING_BUDGET = 50_000
GRAM = 3  # characters of the vocabulary index's keys; a shorter fragment narrows nothing
_CODE_BITS = 21  # a Unicode code point


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
        self._grams, self._gram_starts, self._gram_words = _trigram_index(self._vocabulary)
        # Record positions in the order of their messages, to find the messages that start with a query.
        by_start = sorted(range(len(self._messages)), key=self._messages.__getitem__)
        self._starts_sorted = [self._messages[i] for i in by_start]
        self._by_start = np.array(by_start, dtype=np.int64)
        self._tags = sorted(tags)
        self._tag_postings = [tags[tag] for tag in self._tags]
        self._analysed_first = sorted(
            range(len(self.records)), key=lambda i: not self.records[i].has_analysis
        )
        self._holding = lru_cache(maxsize=FRAGMENT_CACHE)(self._records_holding)

    def _records_holding(self, fragment: str) -> npt.NDArray[np.int64] | None:
        """Positions of the records with a message word that contains `fragment` (a run of word chars);
        None when so many words hold it (a letter or two) that reading every record is cheaper."""
        large = len(self.records) > FULL_SCAN_RECORDS
        most_words = len(self._vocabulary) // COMMON_FRACTION
        words = self._words_holding(fragment, min(most_words, WORD_BUDGET) if large else None)
        if words is None or len(words) > most_words:
            return None
        if not words:
            return np.empty(0, dtype=np.int64)
        postings = [self._postings[word] for word in words]
        if large and sum(map(len, postings)) > min(len(self.records) // COMMON_FRACTION, POSTING_BUDGET):
            return None  # a few common words ("con" in "cannot" and "contiguous"): it narrows little
        return np.unique(np.concatenate(postings))

    def _words_holding(self, fragment: str, most: int | None = None) -> list[str] | None:
        """The vocabulary words containing `fragment`: those holding each of its trigrams (the rarest first,
        each next one by binary search), checked. None for a fragment shorter than a trigram, or when more
        than `most` words hold all its trigrams (too many to check in a keystroke)."""
        if len(fragment) < GRAM:
            return None
        holdings = []
        for code in set(_codes(fragment).tolist()):
            at = int(np.searchsorted(self._grams, code))
            if at == len(self._grams) or self._grams[at] != code:
                return []
            holdings.append(self._gram_words[self._gram_starts[at] : self._gram_starts[at + 1]])
        holdings.sort(key=len)
        candidates = holdings[0]
        for holding in holdings[1:]:
            places = np.minimum(np.searchsorted(holding, candidates), len(holding) - 1)
            candidates = candidates[holding[places] == candidates]
            if not len(candidates):
                return []
        if most is not None and len(candidates) > most:
            return None
        vocabulary = self._vocabulary
        return [vocabulary[i] for i in candidates.tolist() if fragment in vocabulary[i]]

    def _starting_with(self, query: str, limit: int | None) -> list[int]:
        """Positions of the records whose message starts with `query`, in catalog order (first `limit`)."""
        low = bisect.bisect_left(self._starts_sorted, query)
        high = bisect.bisect_left(self._starts_sorted, query + "\U0010ffff", low)
        positions = self._by_start[low:high]
        if limit is not None and len(positions) > limit:
            positions = np.partition(positions, limit - 1)[:limit]
        return sorted(positions.tolist())

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
        messages = self._messages
        if limit is not None and len(self.records) > FULL_SCAN_RECORDS:
            starting = self._starting_with(query, limit)
            if len(starting) == limit:
                return [self.records[i] for i in starting]  # nothing can come before them
            read = (
                range(min(len(self.records), READ_BUDGET))
                if candidates is None
                else candidates[:READ_BUDGET].tolist()
            )
            found = [(0, i) for i in starting]
            found += [
                (messages[i].find(query), i) for i in read if i not in starting and query in messages[i]
            ]
            return [self.records[i] for _, i in heapq.nsmallest(limit, found)]
        positions: Sequence[int] = range(len(self.records)) if candidates is None else candidates.tolist()
        found_all = ((messages[i].find(query), i) for i in positions if query in messages[i])
        ranked = sorted(found_all) if limit is None else heapq.nsmallest(limit, found_all)
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


def _codes(text: str) -> npt.NDArray[np.uint64]:
    """The code of each trigram of `text`, in order (three code points in one integer)."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    shift = np.uint64(_CODE_BITS)
    codes: npt.NDArray[np.uint64] = (points[:-2] << (shift + shift)) | (points[1:-1] << shift) | points[2:]
    return codes


def _trigram_index(
    vocabulary: list[str],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
    """For each trigram of the vocabulary (sorted codes), the words holding it: `words[starts[k]:starts[k+1]]`
    are the sorted, distinct word numbers of `grams[k]`. Built in numpy over the joined vocabulary."""
    if not vocabulary:
        return np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.uint32)
    joined = "\x00".join(vocabulary)  # word characters never include NUL: no trigram spans two words
    codes = _codes(joined) if len(joined) >= GRAM else np.zeros(0, np.uint64)
    lengths = np.fromiter((len(word) + 1 for word in vocabulary), dtype=np.int64, count=len(vocabulary))
    owner = np.repeat(np.arange(len(vocabulary), dtype=np.uint32), lengths)[: len(codes)]
    points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    within = (points[:-2] != 0) & (points[1:-1] != 0) & (points[2:] != 0)
    codes, owner = codes[within], owner[within]
    order = np.lexsort((owner, codes))
    codes, owner = codes[order], owner[order]
    distinct = np.ones(len(codes), dtype=bool)
    distinct[1:] = (codes[1:] != codes[:-1]) | (owner[1:] != owner[:-1])
    codes, owner = codes[distinct], owner[distinct]
    firsts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else np.zeros(0, np.int64)
    starts = np.append(firsts, len(codes)).astype(np.int64)
    return codes[firsts], starts, owner
