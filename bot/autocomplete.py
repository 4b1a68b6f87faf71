"""Suggestions while someone types a query: records whose message contains the text typed, then records with a
tag starting with it. Built once per catalog; a keystroke reads a few postings instead of every record, and
finds the vocabulary words holding a typed fragment through a trigram index instead of reading every word."""

from __future__ import annotations

import bisect
import heapq
import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from bot.records import Record

_WORD = re.compile(r"\w+")
_LAST_WORD = re.compile(r"\w+$")
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
# Past READ_BUDGET candidates the answer is not the scan's: the first records holding the query among at most
# this many candidates (in catalog order) are.
SAMPLE_BUDGET = 500
# The records holding a query are kept when all its candidates were read (for this many queries): a query
# that extends one of them by up to KNOWN_PREFIXES characters (the next keystrokes) reads only those.
HOLDER_CACHE = 4_096
# The candidates of the last this many queries (up to 200 KB each): the next keystroke narrows them further.
CANDIDATE_CACHE = 256
KNOWN_PREFIXES = 32
# And it narrows a query by a fragment only when at most this many vocabulary words hold all its trigrams
# (each is then checked) and their records are at most POSTING_BUDGET: else the fragment narrows nothing.
WORD_BUDGET = 5_000
POSTING_BUDGET = 50_000
# A trigram held by more than 1/BITMAP_FRACTION of the vocabulary words (and BITMAP_MIN_WORDS) is also kept
# as a bitmap of the vocabulary.
BITMAP_FRACTION = 32
BITMAP_MIN_WORDS = 256
# A fragment whose rarest trigram is found at most this many times in the vocabulary is looked for at each of
# those places (in numpy): no word is read as a Python string.
PLACE_BUDGET = 20_000
GRAM = 3  # characters of the vocabulary index's keys; a shorter fragment narrows nothing
_CODE_BITS = 21  # a Unicode code point


@dataclass(frozen=True, slots=True)
class SuggestFields:
    """What autocomplete reads of every record, by position: its message, its tags, whether it is analysed
    (a prebuilt catalog stores them apart from the records)."""

    messages: Sequence[str]
    tags: Sequence[Sequence[str]]
    analysed: Sequence[bool]

    @classmethod
    def of(cls, records: Sequence[Record]) -> SuggestFields:
        return cls(
            [record.errorMessage for record in records],
            [record.tags for record in records],
            [record.has_analysis for record in records],
        )


class Autocomplete:
    """Records by the words of their message (every word that contains a typed fragment, found in the
    vocabulary) and by tag prefix. Answers exactly what a scan of every record would, in the same order."""

    def __init__(self, records: Sequence[Record], fields: SuggestFields | None = None) -> None:
        """`fields`: what is read of every record, when it is at hand without reading them (a prebuilt
        catalog's records are read from disk one by one, and only those suggested are)."""
        self.records = records
        if fields is None:
            fields = SuggestFields.of(records)
        self._messages = [message.lower() for message in fields.messages]
        postings: defaultdict[str, list[int]] = defaultdict(list)
        tags: defaultdict[str, list[int]] = defaultdict(list)
        for position, (record_tags, message) in enumerate(zip(fields.tags, self._messages, strict=True)):
            for word in set(_WORD.findall(message)):
                postings[word].append(position)
            for tag in {tag.lower() for tag in record_tags}:
                tags[tag].append(position)
        self._vocabulary = list(postings)
        # The records of word k: `_posting_records[_posting_starts[k]:_posting_starts[k + 1]]`, ascending (one
        # array for all: a million words cost no million array objects, and a keystroke reads them at once).
        lengths = np.fromiter(map(len, postings.values()), dtype=np.int64, count=len(postings))
        self._posting_starts = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self._posting_starts[1:])
        self._posting_records = np.fromiter(
            (position for ids in postings.values() for position in ids),
            dtype=np.int32,
            count=int(self._posting_starts[-1]),
        )
        postings.clear()
        self._trigrams = _trigram_index(self._vocabulary)
        self._grams, self._gram_starts, self._gram_words = self._trigrams[:3]
        # A trigram held by many words is also kept as a bit per vocabulary word: intersecting it with other
        # trigrams' words costs a bit test per candidate (or an AND of two bitmaps) instead of a search.
        self._gram_bits = _gram_bitmaps(self._gram_starts, self._gram_words, len(self._vocabulary))
        # Record positions in the order of their messages, to find the messages that start with a query.
        by_start = sorted(range(len(self._messages)), key=self._messages.__getitem__)
        self._starts_sorted = [self._messages[i] for i in by_start]
        self._by_start = np.array(by_start, dtype=np.int64)
        self._tags = sorted(tags)
        self._tag_postings = [tags[tag] for tag in self._tags]
        analysed = fields.analysed
        self._analysed_first = sorted(range(len(self._messages)), key=lambda i: not analysed[i])
        self._holding = lru_cache(maxsize=FRAGMENT_CACHE)(self._records_holding)
        # Every record holding a query, for the queries whose candidates were all read (large catalogs).
        self._holders: dict[str, list[int]] = {}
        # The candidates of the last queries (large catalogs), and the fragments they hold.
        self._candidates_kept: dict[str, tuple[npt.NDArray[np.int32] | None, frozenset[str]]] = {}
        self._holders_lock = threading.Lock()

    def _records_holding(self, fragment: str) -> npt.NDArray[np.int32] | None:
        """Positions of the records with a message word that contains `fragment` (a run of word chars);
        None when so many words hold it (a letter or two) that reading every record is cheaper."""
        large = len(self.records) > FULL_SCAN_RECORDS
        most_words = len(self._vocabulary) // COMMON_FRACTION
        words = self._word_ids_holding(fragment, min(most_words, WORD_BUDGET) if large else None)
        if words is None or len(words) > most_words:
            return None
        starts = self._posting_starts[words]
        lengths = self._posting_starts[words + 1] - starts
        total = int(lengths.sum())
        if large and total > min(len(self.records) // COMMON_FRACTION, POSTING_BUDGET):
            return None  # a few common words ("con" in "cannot" and "contiguous"): it narrows little
        # Every posting's records side by side (one gather), then sorted and made distinct.
        kind = np.int32 if len(self._posting_records) < 1 << 31 else np.int64
        shifts = (starts - np.cumsum(lengths) + lengths).astype(kind)
        places = np.repeat(shifts, lengths) + np.arange(total, dtype=kind)
        return _distinct(self._posting_records[places])

    def _words_holding(self, fragment: str, most: int | None = None) -> list[str] | None:
        """The vocabulary words containing `fragment` (see `_word_ids_holding`)."""
        found = self._word_ids_holding(fragment, most)
        return None if found is None else [self._vocabulary[i] for i in found.tolist()]

    def _word_ids_holding(self, fragment: str, most: int | None = None) -> npt.NDArray[np.int64] | None:
        """The numbers of the vocabulary words containing `fragment`, ascending: those holding each of its
        trigrams (the rarest first, each next one by binary search or, for a trigram of many words, a bit
        test), checked. None for a fragment shorter than a trigram, or when more than `most` words hold all
        its trigrams (too many to check in a keystroke)."""
        if len(fragment) < GRAM:
            return None
        found = self._word_ids_at_places(fragment, most)
        if found is not False:
            return found
        holdings: list[npt.NDArray[np.uint32]] = []
        bitmaps: list[npt.NDArray[np.uint64]] = []
        for code in set(_codes(fragment).tolist()):
            at = int(np.searchsorted(self._grams, code))
            if at == len(self._grams) or self._grams[at] != code:
                return np.empty(0, dtype=np.int64)
            bits = self._gram_bits.get(at)
            if bits is None:
                holdings.append(self._gram_words[self._gram_starts[at] : self._gram_starts[at + 1]])
            else:
                bitmaps.append(bits)
        candidates: npt.NDArray[np.int64]
        if holdings:
            holdings.sort(key=len)
            held = holdings[0]  # searched as uint32, the holdings' own type (another would copy them)
            for holding in holdings[1:]:
                places = np.minimum(np.searchsorted(holding, held), len(holding) - 1)
                held = held[holding[places] == held]
            candidates = held.astype(np.int64)
            for bits in bitmaps:
                candidates = candidates[_bit_set(bits, candidates)]
        else:
            # Only trigrams of many words ("quantized_" in a third of a million identifiers): their bitmaps
            # are ANDed and counted before any word number is made.
            both = bitmaps[0] if len(bitmaps) == 1 else np.bitwise_and.reduce(bitmaps)
            if most is not None and int(np.bitwise_count(both).sum()) > most:
                return None
            candidates = np.flatnonzero(np.unpackbits(both.view(np.uint8), bitorder="little"))
        if most is not None and len(candidates) > most:
            return None
        if len(fragment) == GRAM:
            return candidates  # its one trigram: every word holding it contains it
        vocabulary = self._vocabulary
        return candidates[[fragment in vocabulary[i] for i in candidates.tolist()]]

    def _word_ids_at_places(
        self, fragment: str, most: int | None
    ) -> npt.NDArray[np.int64] | Literal[False] | None:
        """`_word_ids_holding` from the places of the fragment's rarest trigram: each is a place the fragment
        may begin (that many characters before), kept if the vocabulary's text there is the fragment, one
        character at a time in numpy. False when that trigram is found more than PLACE_BUDGET times."""
        index = self._trigrams
        codes = _codes(fragment)
        grams = np.minimum(np.searchsorted(index.grams, codes), len(index.grams) - 1)
        if not len(index.grams) or (index.grams[grams] != codes).any():
            return np.empty(0, dtype=np.int64)  # a trigram no word has
        counts = index.place_starts[grams + 1] - index.place_starts[grams]
        rarest = int(np.argmin(counts))
        if counts[rarest] > PLACE_BUDGET:
            return False
        first = int(grams[rarest])
        places = slice(index.place_starts[first], index.place_starts[first + 1])
        begins = index.places[places].astype(np.int64) - rarest
        # The word of each place (places and words ascend together): no search in the word starts.
        pairs = slice(index.starts[first], index.starts[first + 1])
        owners = np.repeat(index.words[pairs], index.pair_places[pairs])
        points = np.frombuffer(fragment.encode("utf-32-le"), dtype=np.uint32)
        text = index.text
        inside = (begins >= 0) & (begins <= len(text) - len(points))
        begins, owners = begins[inside], owners[inside]
        for offset, point in enumerate(points.tolist()):
            if rarest <= offset < rarest + GRAM:
                continue  # the trigram found there
            same = text[begins + offset] == point
            begins, owners = begins[same], owners[same]
        words = owners[np.r_[True, owners[1:] != owners[:-1]]] if len(owners) else owners
        if most is not None and len(words) > most:
            return None
        return words.astype(np.int64)

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
        if limit is not None and len(self.records) > FULL_SCAN_RECORDS:
            return self._by_message_bounded(query, limit)
        messages = self._messages
        candidates = self._candidates(query)
        positions: Sequence[int] = range(len(self.records)) if candidates is None else candidates.tolist()
        found_all = ((messages[i].find(query), i) for i in positions if query in messages[i])
        ranked = sorted(found_all) if limit is None else heapq.nsmallest(limit, found_all)
        return [self.records[i] for _, i in ranked]

    def _candidates(self, query: str) -> npt.NDArray[np.int32] | None:
        """The records holding every word-character run of the query (its four longest); None: all."""
        candidates: npt.NDArray[np.int32] | None = None
        for fragment in _fragments(query):
            holding = self._holding(fragment)
            if holding is None:
                continue
            candidates = holding if candidates is None else _intersect(candidates, holding)
        return candidates

    def _by_message_bounded(self, query: str, limit: int) -> list[Record]:
        """`by_message` in a large catalog: the scan's answer when `limit` messages start with the query, or
        when its candidates fit READ_BUDGET (then every record holding it is known, and kept: the next
        keystroke, which extends the query, reads only those); otherwise the first records holding it."""
        messages = self._messages
        starting = self._starting_with(query, limit)
        if len(starting) == limit:
            return [self.records[i] for i in starting]  # nothing can come before them
        known = self._known_holders(query)  # of a part of the query: a record holding it holds that part
        candidates = None
        if known is None:
            candidates = self._narrowed(query)
            if candidates is not None and len(candidates) <= READ_BUDGET:
                known = candidates.tolist()
        if known is not None:
            places = [(messages[i].find(query), i) for i in known]
            held = [(at, i) for at, i in places if at >= 0]
            self._keep_holders(query, [i for _, i in held])
            return [self.records[i] for _, i in heapq.nsmallest(limit, held)]
        # More candidates than READ_BUDGET: not the scan's answer (that would read them all). The messages
        # that start with the query, then the first ones holding it among at most SAMPLE_BUDGET candidates,
        # earliest occurrence first.
        sample = min(SAMPLE_BUDGET, READ_BUDGET)
        read = range(min(len(self.records), sample)) if candidates is None else candidates[:sample].tolist()
        found = [(0, i) for i in starting]
        first = set(starting)
        for i in read:
            at = messages[i].find(query)
            if at >= 0 and i not in first:
                found.append((at, i))
                if len(found) == limit:
                    break
        return [self.records[i] for _, i in sorted(found)]

    def _narrowed(self, query: str) -> npt.NDArray[np.int32] | None:
        """`_candidates`, or those of the longest kept prefix of the query narrowed by the query's last
        fragment: a record holding the query holds that prefix (a keystroke reads one new fragment and makes
        one intersection, not one per fragment). Kept for the next keystrokes."""
        with self._holders_lock:
            kept = next(
                (
                    self._candidates_kept[query[:end]]
                    for end in range(len(query), max(0, len(query) - KNOWN_PREFIXES) - 1, -1)
                    if query[:end] in self._candidates_kept
                ),
                None,
            )
        if kept is None:
            candidates = self._candidates(query)
            fragments = frozenset(_fragments(query))
        else:
            candidates, fragments = kept
            last = _LAST_WORD.search(query)
            if last is not None and last.group() not in fragments:
                fragments |= {last.group()}
                holding = self._holding(last.group())
                if holding is not None:
                    candidates = holding if candidates is None else _intersect(candidates, holding)
        with self._holders_lock:
            if len(self._candidates_kept) >= CANDIDATE_CACHE:
                del self._candidates_kept[next(iter(self._candidates_kept))]
            self._candidates_kept[query] = (candidates, fragments)
        return candidates

    def _known_holders(self, query: str) -> list[int] | None:
        """Every record holding the query or the longest of its prefixes (up to KNOWN_PREFIXES characters
        shorter) whose holders are all known, in catalog order; None when none is."""
        with self._holders_lock:
            for end in range(len(query), max(0, len(query) - KNOWN_PREFIXES) - 1, -1):
                holders = self._holders.get(query[:end])
                if holders is not None:
                    return holders
        return None

    def _keep_holders(self, query: str, holders: list[int]) -> None:
        with self._holders_lock:
            if len(self._holders) >= HOLDER_CACHE:
                del self._holders[next(iter(self._holders))]  # the oldest
            self._holders[query] = holders

    def by_tag(self, query: str, limit: int | None = None) -> list[Record]:
        """Records with a tag starting with `query` (lower case), in catalog order (the first `limit`)."""
        start = bisect.bisect_left(self._tags, query)
        positions: set[int] = set()
        for index in range(start, len(self._tags)):
            if not self._tags[index].startswith(query):
                break
            positions.update(self._tag_postings[index])
        return [self.records[i] for i in sorted(positions)[:limit]]

    def analysed_first(self, limit: int) -> list[Record]:
        """What an empty query offers: analysed records first, in catalog order."""
        return [self.records[i] for i in self._analysed_first[:limit]]


def _fragments(query: str) -> list[str]:
    """The word-character runs of a query that narrow its candidates: its four longest."""
    return sorted(set(_WORD.findall(query)), key=len, reverse=True)[:4]


def _distinct(positions: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """The sorted distinct values, `positions` sorted in place (`np.unique` hashes first: ten times slower on
    50,000 positions)."""
    ordered = positions  # a gathered copy: sorted in place
    ordered.sort()
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _intersect(first: npt.NDArray[np.int32], second: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """The values of two sorted, distinct arrays that are in both (the shorter searched in the longer)."""
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    if not len(long):
        return long
    places = np.minimum(np.searchsorted(long, short), len(long) - 1)
    both: npt.NDArray[np.int32] = short[long[places] == short]
    return both


def _bit_set(bits: npt.NDArray[np.uint64], numbers: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether each number's bit is set in `bits` (bit k of byte k // 8, least significant first)."""
    octets = bits.view(np.uint8)
    found: npt.NDArray[np.bool_] = ((octets[numbers >> 3] >> (numbers & 7).astype(np.uint8)) & 1).astype(bool)
    return found


def _gram_bitmaps(
    starts: npt.NDArray[np.int64], words: npt.NDArray[np.uint32], vocabulary: int
) -> dict[int, npt.NDArray[np.uint64]]:
    """A bitmap of the vocabulary (one bit a word) for each trigram held by more than 1/BITMAP_FRACTION of
    it (and BITMAP_MIN_WORDS): no larger than the trigram's list of word numbers."""
    sizes = np.diff(starts)
    least = max(vocabulary // BITMAP_FRACTION, BITMAP_MIN_WORDS)
    octets = -(-vocabulary // 64) * 8  # whole 64-bit words, to AND them as such
    bitmaps = {}
    for gram in np.flatnonzero(sizes > least).tolist():
        present = np.zeros(octets * 8, dtype=bool)
        present[words[starts[gram] : starts[gram + 1]]] = True
        bitmaps[gram] = np.packbits(present, bitorder="little").view(np.uint64)
    return bitmaps


def _codes(text: str) -> npt.NDArray[np.uint64]:
    """The code of each trigram of `text`, in order (three code points in one integer)."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    shift = np.uint64(_CODE_BITS)
    codes: npt.NDArray[np.uint64] = (points[:-2] << (shift + shift)) | (points[1:-1] << shift) | points[2:]
    return codes


class _Trigrams(NamedTuple):
    """The vocabulary's trigram index. `grams`: the sorted codes of every trigram of a word. The words holding
    `grams[k]`: `words[starts[k]:starts[k + 1]]` (sorted, distinct word numbers). Where it is:
    `places[place_starts[k]:place_starts[k + 1]]`, ascending positions in `text` (the code points of the
    vocabulary joined by NULs, as uint8 when they fit); word `words[j]` holds `pair_places[j]` of them."""

    grams: npt.NDArray[np.uint64]
    starts: npt.NDArray[np.int64]
    words: npt.NDArray[np.uint32]
    pair_places: npt.NDArray[Any]  # how many places each (trigram, word) of `words` has: uint8 or uint32
    places: npt.NDArray[Any]  # uint32 unless the text is longer
    place_starts: npt.NDArray[np.int64]
    text: npt.NDArray[Any]


def _trigram_index(vocabulary: list[str]) -> _Trigrams:
    """The trigram index of the vocabulary, built in numpy over the joined vocabulary."""
    joined = "\x00".join(vocabulary)  # word characters never include NUL: no trigram spans two words
    points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    lengths = np.fromiter((len(word) + 1 for word in vocabulary), dtype=np.int64, count=len(vocabulary))
    smallest = np.uint8 if not len(points) or points.max() < 256 else np.uint32
    text = points.astype(smallest)
    if len(joined) < GRAM:
        none = np.zeros(0, np.int64)
        return _Trigrams(
            np.zeros(0, np.uint64),
            np.zeros(1, np.int64),
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint8),
            none,
            np.zeros(1, np.int64),
            text,
        )
    codes = _codes(joined)
    owner = np.repeat(np.arange(len(vocabulary), dtype=np.uint32), lengths)[: len(codes)]
    within = (points[:-2] != 0) & (points[1:-1] != 0) & (points[2:] != 0)
    places = np.flatnonzero(within)
    codes, owner = codes[places], owner[places]
    order = np.argsort(codes, kind="stable")  # by code, then by place (and so by word)
    codes, owner, places = codes[order], owner[order], places[order]
    place_firsts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    place_starts = np.append(place_firsts, len(codes)).astype(np.int64)
    distinct = np.ones(len(codes), dtype=bool)
    distinct[1:] = (codes[1:] != codes[:-1]) | (owner[1:] != owner[:-1])
    pair_firsts = np.flatnonzero(distinct)
    repeats = np.diff(np.append(pair_firsts, len(codes)))  # places of a trigram in one word
    pair_places = repeats.astype(np.uint8 if not len(repeats) or repeats.max() < 256 else np.uint32)
    codes, owner = codes[distinct], owner[distinct]
    firsts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    starts = np.append(firsts, len(codes)).astype(np.int64)
    places = places.astype(np.uint32 if len(points) < 1 << 32 else np.int64)
    return _Trigrams(codes[firsts], starts, owner, pair_places, places, place_starts, text)
