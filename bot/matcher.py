"""The index over a catalog and the lookup: panics in, ranked matches and an auto-reply decision out.

Signals, strongest first: the record's messagePattern (RE2, weighed by how much literal text it has), the
location (same file, then line distance, so another Burn version still finds its site), and rapidfuzz
similarity of the literal text for typed queries and typos. Candidates come from inverted indexes, so a
lookup touches a few records, not the catalog.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from bot.extract import Location, Panic, extract_panics
from bot.paths import common_suffix_length, path_parts
from bot.patterns import PatternHit, match_pattern, record_segments, tolerant_regex
from bot.records import Record
from bot.rust_messages import message_variants, safe_tokens, specificity, tokens

# A pattern with fewer literal letters than this says nothing by itself (`{}: {}`): it is no evidence.
MIN_PATTERN_SPECIFICITY = 4
# To post unasked, the matched text must be this specific (letters and digits), and have two words or more.
AUTO_REPLY_MIN_SPECIFICITY = 12
AUTO_REPLY_MIN_SPECIFICITY_NO_HEADER = 25
AUTO_REPLY_MIN_CONFIDENCE = 0.9
# Below this confidence a match is listed as nearby, not given as the answer.
KNOWN_MIN_CONFIDENCE = 0.5
SPECIFICITY_SCALE = 60
LINE_WINDOW = 60
COMMON_TOKEN_POSTINGS = 1_000
FUZZY_CANDIDATES = 40
MAX_QUERY_CHARS = 4_000
MAX_RESULTS = 5
REQUIRED_WORDS = 5  # the two anchor words and the next three rarest words of a pattern


@dataclass(frozen=True)
class Reason:
    """One signal behind a match: what matched, and on which span of the panic message (or path)."""

    signal: str
    detail: str
    span: tuple[int, int] | None = None
    """Span in the matched form of the message (`matched_text` is that form's spanned text)."""
    matched_text: str | None = None


@dataclass(frozen=True)
class Match:
    record: Record
    score: float
    confidence: float
    reasons: tuple[Reason, ...]
    panic_index: int
    known: bool
    """True when the message itself matched (pattern or close text); False for a nearby record only."""
    record_index: int
    """Position of the record in the matcher's catalog."""


@dataclass(frozen=True)
class LookupResult:
    panics: tuple[Panic, ...]
    matches: tuple[Match, ...]
    answer_panic: int | None
    """Index in `panics` of the panic the answer is for (the first with a known record), else None."""
    auto_reply: bool

    @property
    def best(self) -> Match | None:
        """The answer: the top match when it is a known record for the panic, else None."""
        if self.matches and self.matches[0].known:
            return self.matches[0]
        return None

    @property
    def status(self) -> str:
        if not self.panics:
            return "no_panic"
        return "matched" if self.best else "no_known_record"


@dataclass
class _Evidence:
    hit: PatternHit | None = None
    hit_text: str = ""
    pattern_points: float = 0.0
    location_points: float = 0.0
    fuzzy: float = 0.0
    reasons: list[Reason] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.pattern_points + self.location_points + 55.0 * self.fuzzy


@dataclass(frozen=True, slots=True)
class _Entry:
    """What the index keeps per record beyond the record itself."""

    pattern: str
    literal: str  # lower-case literal text, placeholders as spaces: what typed queries are compared with
    specificity: int
    placeholders: int
    words: int
    path: tuple[str, ...]
    required: tuple[str, ...] = ()  # its rarest words: a message missing one cannot match the pattern


class Matcher:
    """An index over one catalog, built once; `lookup` is cheap and never raises on any text."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records: list[Record] = list(records)
        self._entries: list[_Entry] = []
        self._anchors: dict[str, array[int]] = {}
        self._pair_anchors: dict[str, dict[str, array[int]]] = {}
        self._unanchored = array("I")
        self._postings: dict[str, array[int]] = {}
        self._by_path: dict[tuple[str, ...], array[int]] = {}
        self._by_basename: dict[str, array[int]] = {}
        self._vocabulary_by_length: dict[int, list[str]] = {}
        self._build()

    def _build(self) -> None:
        postings: dict[str, list[int]] = defaultdict(list)
        safe_by_record: list[set[str] | None] = []
        by_path: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, record in enumerate(self.records):
            pattern_source, plain = record_segments(record.messagePattern, record.errorMessage)
            pattern = tolerant_regex(pattern_source) if plain else (record.messagePattern or "")
            literal = " ".join(pattern_source).lower()
            record_tokens = set(tokens(literal))
            for token in record_tokens:
                postings[token].append(index)
            safe_by_record.append(safe_tokens(pattern_source) if plain else None)
            parts = path_parts(record.filePath or "")
            by_path[parts].append(index)
            self._entries.append(
                _Entry(
                    pattern,
                    literal,
                    specificity(pattern_source),
                    len(pattern_source) - 1,
                    len(record_tokens),
                    parts,
                )
            )
        anchors: dict[str, list[int]] = defaultdict(list)
        pair_anchors: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        interned = {token: token for token in postings}
        for index, safe in enumerate(safe_by_record):
            if not safe:
                self._unanchored.append(index)
                continue
            # The rarest word keeps each anchor list short; a message holding the pattern holds the word.
            # The next rarest ones are checked before any regex runs: near-identical messages share an
            # anchor, and each would otherwise cost an RE2 program.
            rarest = sorted(safe, key=lambda token: (len(postings[token]), -len(token), token))
            if len(rarest) == 1:
                anchors[rarest[0]].append(index)
            else:
                # Two words must both be in a message for it to be a candidate: near-identical messages
                # share their rarest word far more often than their two rarest.
                pair_anchors[rarest[0]][rarest[1]].append(index)
            required = tuple(interned[token] for token in rarest[2:REQUIRED_WORDS])
            if required:
                self._entries[index] = replace(self._entries[index], required=required)
        self._anchors = {token: array("I", ids) for token, ids in anchors.items()}
        self._pair_anchors = {
            first: {second: array("I", ids) for second, ids in seconds.items()}
            for first, seconds in pair_anchors.items()
        }
        self._postings = {token: array("I", ids) for token, ids in postings.items()}
        self._by_path = {parts: array("I", ids) for parts, ids in by_path.items() if parts}
        by_basename: dict[str, list[int]] = defaultdict(list)
        for parts, ids in self._by_path.items():
            by_basename[parts[-1]].extend(ids)
        self._by_basename = {name: array("I", ids) for name, ids in by_basename.items()}
        for token in self._postings:
            self._vocabulary_by_length.setdefault(len(token), []).append(token)

    def __len__(self) -> int:
        return len(self.records)

    # -- lookup ---------------------------------------------------------------------------------------

    def lookup(self, text: str, limit: int = MAX_RESULTS) -> LookupResult:
        """Rank the catalog for the panics in `text`; the first panic with a known record is the answer."""
        panics = tuple(extract_panics(text))
        if not panics:
            return LookupResult(panics, (), None, False)
        first_ranked: tuple[Match, ...] | None = None
        for index, panic in enumerate(panics):
            ranked = self._rank_panic(panic, index, limit)
            if first_ranked is None:
                first_ranked = ranked
            if ranked and ranked[0].known:
                return LookupResult(panics, ranked, index, self._auto_reply(panic, ranked))
        return LookupResult(panics, first_ranked or (), None, False)

    def _rank_panic(self, panic: Panic, panic_index: int, limit: int) -> tuple[Match, ...]:
        variants = message_variants(panic.message[:MAX_QUERY_CHARS]) if panic.message else []
        evidence: dict[int, _Evidence] = {}
        self._pattern_evidence(variants, evidence)
        if panic.location is not None:
            self._location_evidence(panic.location, evidence)
        if variants and not any(_is_strong(e) for e in evidence.values()):
            # A typo or a typed query: only a weak pattern (a short word inside) or none met the text.
            self._fuzzy_evidence(variants, evidence)
        scored = sorted(evidence.items(), key=lambda item: (-item[1].score, item[0]))[: max(limit, 1) + 8]
        matches = []
        for position, (record_index, found) in enumerate(scored):
            rival = _rival(scored, position, self._entries)
            confidence = self._confidence(found, self._entries[record_index], rival, panic)
            known = confidence >= KNOWN_MIN_CONFIDENCE and (
                found.hit is not None or _text_alone_is_enough(found, panic)
            )
            matches.append(
                Match(
                    record=self.records[record_index],
                    score=round(found.score, 2),
                    confidence=round(confidence, 3),
                    reasons=self._reasons(found, record_index, panic),
                    panic_index=panic_index,
                    known=known,
                    record_index=record_index,
                )
            )
        matches.sort(key=lambda m: (-m.known, -m.score))
        return tuple(matches[:limit])

    def _reasons(self, found: _Evidence, record_index: int, panic: Panic) -> tuple[Reason, ...]:
        """Pattern first, then location, then text: what matched, strongest first."""
        reasons = [r for r in found.reasons if r.signal == "pattern"]
        if found.location_points > 0 and panic.location is not None:
            reasons.append(self._location_reason(record_index, panic.location))
        reasons.extend(r for r in found.reasons if r.signal != "pattern")
        return tuple(reasons)

    def _pattern_evidence(self, variants: list[str], evidence: dict[int, _Evidence]) -> None:
        """Verify every record whose anchor word the message holds (and the few without an anchor)."""
        words: set[str] = set()
        for variant in variants:
            words.update(tokens(variant))
        candidates: set[int] = set(self._unanchored)
        for word in words:
            candidates.update(self._anchors.get(word, ()))
            seconds = self._pair_anchors.get(word)
            if not seconds:
                continue
            if len(seconds) <= len(words):
                for second, ids in seconds.items():
                    if second in words:
                        candidates.update(ids)
            else:
                for second in words:
                    candidates.update(seconds.get(second, ()))
        for record_index in candidates:
            entry = self._entries[record_index]
            if entry.specificity < MIN_PATTERN_SPECIFICITY:
                continue
            if entry.required and not all(word in words for word in entry.required):
                continue
            for variant in variants:
                hit = match_pattern(entry.pattern, variant)
                if hit is None:
                    continue
                points = _pattern_points(hit, entry)
                found = evidence.setdefault(record_index, _Evidence())
                if points > found.pattern_points:
                    found.hit, found.pattern_points = hit, points
                    found.hit_text = variant[hit.start : hit.end]
                if hit.mode == "full":
                    break
        for found in evidence.values():
            if found.hit is not None:
                found.reasons.append(
                    Reason(
                        "pattern",
                        f"{found.hit.mode} match of messagePattern",
                        (found.hit.start, found.hit.end),
                        found.hit_text[:300],
                    )
                )

    def _location_evidence(self, location: Location, evidence: dict[int, _Evidence]) -> None:
        """Records in the pasted file: the site closest to the pasted line scores highest."""
        parts = path_parts(location.path)
        if not parts:
            return
        exact = self._by_path.get(parts)
        same_file: Iterable[int] = exact if exact is not None else self._by_basename.get(parts[-1], ())
        for record_index in same_file:
            # Points only: the reason's words are written for the few matches shown (_location_reason).
            if exact is not None:
                file_points = 15.0
            else:
                shared = common_suffix_length(parts, self._entries[record_index].path)
                file_points = 8.0 + 2.0 * min(shared - 2, 3) if shared >= 2 else 3.0
            line_points = 0.0
            record_line = self.records[record_index].lineNumber
            if location.line is not None and record_line is not None:
                distance = abs(location.line - record_line)
                line_points = 10.0 * max(0.0, 1.0 - distance / LINE_WINDOW)
            found = evidence.setdefault(record_index, _Evidence())
            found.location_points = file_points + line_points

    def _location_reason(self, record_index: int, location: Location) -> Reason:
        parts = path_parts(location.path)
        shared = common_suffix_length(parts, self._entries[record_index].path)
        if shared == len(parts) == len(self._entries[record_index].path):
            detail = "same file"
        elif shared >= 2:
            detail = f"path ends alike ({shared} parts)"
        else:
            detail = "same file name"
        record_line = self.records[record_index].lineNumber
        if location.line is not None and record_line is not None:
            detail += f", line {location.line} vs {record_line}"
        return Reason("location", detail)

    def _fuzzy_evidence(self, variants: list[str], evidence: dict[int, _Evidence]) -> None:
        """Typed queries and typos: IDF-weighted words (typos corrected against the index's vocabulary),
        then rapidfuzz similarity of the literal text on the best few."""
        query = max(variants, key=len).lower()
        weighted, total = self._query_words(query)
        if not weighted:
            return
        accumulated: dict[int, float] = defaultdict(float)
        for word, weight in sorted(weighted, key=lambda item: len(self._postings[item[0]])):
            posting = self._postings[word]
            if len(posting) > COMMON_TOKEN_POSTINGS:
                if accumulated:
                    continue
                # Every word is common ("op in u32"): the query says little; a bounded slice keeps it cheap.
                posting = posting[:COMMON_TOKEN_POSTINGS]
            for record_index in posting:
                accumulated[record_index] += weight
        best_ids = heapq.nlargest(FUZZY_CANDIDATES, accumulated, key=accumulated.__getitem__)
        for record_index in best_ids:
            weight = accumulated[record_index]
            entry = self._entries[record_index]
            coverage = min(1.0, weight / total)
            text_score = _text_similarity(query, entry.literal)
            similarity = 0.5 * coverage + 0.5 * text_score
            found = evidence.setdefault(record_index, _Evidence())
            found.fuzzy = similarity
            found.reasons.append(
                Reason("text", f"similar text ({similarity:.2f}; words {coverage:.2f}, {text_score:.2f})")
            )

    def _query_words(self, query: str) -> tuple[list[tuple[str, float]], float]:
        """Query words with IDF weights (an unknown word replaced by its closest indexed words), and the
        weight of the whole query: words the catalog lacks count against every record."""
        count = max(len(self.records), 1)
        # An unknown word weighs like a word in 1 % of records: chat words ("lol", "works") dilute the
        # match without drowning a typed query's real words.
        unknown_weight = _idf(max(count // 100, 1), count)
        weighted: dict[str, float] = {}
        total = 0.0
        for word in dict.fromkeys(tokens(query)):
            if word in self._postings:
                weight = _idf(len(self._postings[word]), count)
                weighted[word] = max(weighted.get(word, 0.0), weight)
                total += weight
                continue
            near_words = self._near_words(word) if len(word) >= 4 else []
            if not near_words:
                total += unknown_weight if len(word) >= 4 else unknown_weight / 2
                continue
            best = 0.0
            for near, similarity in near_words:
                weight = _idf(len(self._postings[near]), count)
                weighted[near] = max(weighted.get(near, 0.0), weight * similarity)
                best = max(best, weight)
            total += best
        return list(weighted.items()), total

    def _near_words(self, word: str) -> list[tuple[str, float]]:
        pool: list[str] = []
        for length in range(len(word) - 2, len(word) + 3):
            pool.extend(self._vocabulary_by_length.get(length, ()))
        found = process.extract(
            word, pool, scorer=Levenshtein.normalized_similarity, score_cutoff=0.7, limit=3
        )
        return [(near, float(similarity)) for near, similarity, _ in found]

    # -- decisions ------------------------------------------------------------------------------------

    def _confidence(
        self, found: _Evidence, entry: _Entry, rival: tuple[_Evidence, _Entry] | None, panic: Panic
    ) -> float:
        """A 0..1 estimate that this record is the one the paste is about (see README: calibration)."""
        if found.hit is not None:
            confidence = {"full": 0.93, "expect": 0.91, "contained": 0.8}[found.hit.mode]
            if found.location_points >= 15.0:
                confidence += 0.05
            elif found.location_points >= 8.0:
                confidence += 0.03
            elif panic.location is not None:
                confidence -= 0.05  # the paste says another file: a moved message, or another one
            if entry.specificity < AUTO_REPLY_MIN_SPECIFICITY:
                confidence -= 0.1
            elif entry.specificity >= 30:
                confidence += 0.03
            if rival is not None and _explains_as_well(found, entry, *rival):
                confidence -= 0.15  # another message explains the paste as well
            return max(0.0, min(0.995, confidence))
        if found.fuzzy > 0.0:
            return max(0.0, min(0.85, (found.fuzzy - 0.35) * 1.3))
        # Location only: a neighbour in the same file, never the answer.
        return min(0.3, found.location_points / 100.0)

    def _auto_reply(self, panic: Panic, ranked: tuple[Match, ...]) -> bool:
        """Post unasked only for a confident pattern match on a specific message."""
        top = ranked[0]
        pattern_reason = next((r for r in top.reasons if r.signal == "pattern"), None)
        if pattern_reason is None or top.confidence < AUTO_REPLY_MIN_CONFIDENCE:
            return False
        entry = self._entries[top.record_index]
        needed = (
            AUTO_REPLY_MIN_SPECIFICITY if panic.kind == "header" else AUTO_REPLY_MIN_SPECIFICITY_NO_HEADER
        )
        if entry.specificity < needed or entry.words < 2:
            return False
        return not (panic.kind != "header" and "contained" in pattern_reason.detail and entry.words < 4)


def _text_alone_is_enough(found: _Evidence, panic: Panic) -> bool:
    """A similar text is the answer to a typed query; for a real panic it also needs the same file: a user's
    own `todo!()` ("not yet implemented") is not Burn's "Not yet implemented for iteration"."""
    if panic.kind == "query":
        return found.fuzzy >= 0.8
    return found.fuzzy >= 0.9 and found.location_points >= 8.0


def _is_strong(found: _Evidence) -> bool:
    return found.hit is not None and found.hit.mode != "contained" and found.pattern_points >= 55.0


def _pattern_points(hit: PatternHit, entry: _Entry) -> float:
    weight = min(entry.specificity, SPECIFICITY_SCALE) / SPECIFICITY_SCALE
    base = {"full": 50.0, "expect": 48.0, "contained": 40.0}[hit.mode]
    # Between equally specific patterns, the one with fewer placeholders explains the text better.
    return base + 25.0 * weight - 0.3 * min(entry.placeholders, 5)


def _idf(document_frequency: int, count: int) -> float:
    return math.log(1.0 + count / max(document_frequency, 1))


def _text_similarity(query: str, literal: str) -> float:
    # A typed fragment is shorter than the message: compare it with the best-aligned part.
    score = fuzz.partial_ratio(query, literal) if len(query) < len(literal) else fuzz.ratio(query, literal)
    return max(score, fuzz.token_set_ratio(query, literal)) / 100.0


def _rival(
    scored: list[tuple[int, _Evidence]], position: int, entries: list[_Entry]
) -> tuple[_Evidence, _Entry] | None:
    """The best other candidate with a different message: same-message sites are not rivals."""
    own = entries[scored[position][0]].pattern
    for index, (record_index, found) in enumerate(scored):
        if index != position and entries[record_index].pattern != own:
            return found, entries[record_index]
    return None


def _explains_as_well(found: _Evidence, entry: _Entry, rival: _Evidence, rival_entry: _Entry) -> bool:
    """Another message matches the paste as fully, and only a few lines of distance or a trace of
    specificity put this one first: the answer is a guess between two records."""
    if rival.score <= 0:
        return False
    if found.score - rival.score < 1.0:
        return True
    if found.hit is None or rival.hit is None or rival.hit.mode != found.hit.mode:
        return False
    same_file_evidence = abs(found.location_points - rival.location_points) < 5.0
    return same_file_evidence and entry.specificity - rival_entry.specificity < 3
