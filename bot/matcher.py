"""The index over a catalog and the lookup: panics in, ranked matches and an auto-reply decision out.

Signals, strongest first: the record's messagePattern (literal segments found with str.find, or RE2 for a
regex of its own; weighed by how much literal text it has), the location (same file, then line distance, so
another Burn version still finds its site), and rapidfuzz similarity of the literal text for typed queries
and typos. Candidates come from inverted indexes and word signatures, so a lookup touches a few records,
not the catalog.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from bot.extract import Extraction, Location, Panic, extract, root_panic_index
from bot.paths import common_suffix_length, path_parts
from bot.patterns import (
    REGEX_SET_SIZE,
    LiteralPattern,
    PatternHit,
    match_literal_word,
    match_pattern,
    normalize_space,
    record_key,
    regex_set,
    regex_set_match,
    unfold_span,
)
from bot.records import Record, gc_paused
from bot.releases import VersionHint
from bot.rust_messages import (
    message_variants,
    segment_tokens,
    specificity,
    split_format_string,
    tokens,
)

# A pattern with fewer literal letters than this says nothing by itself (`{}: {}`): it is no evidence.
MIN_PATTERN_SPECIFICITY = 4
# To post unasked, the matched text must be this specific (letters and digits), and have two words or more.
AUTO_REPLY_MIN_SPECIFICITY = 12
AUTO_REPLY_MIN_SPECIFICITY_NO_HEADER = 25
AUTO_REPLY_MIN_CONFIDENCE = 0.9
# Below this confidence a match is listed as nearby, not given as the answer.
KNOWN_MIN_CONFIDENCE = 0.5
# A contained match of a pattern with fewer literal characters, over less than half of a pasted panic
# message, in another file, is a shared phrase: listed as nearby, not the answer.
SMALL_PART_SPECIFICITY = 25
SPECIFICITY_SCALE = 60
TEXT_POINTS = 55.0  # the score of a perfectly similar text
TEXT_POINTS_WITH_PATTERN = 10.0
LINE_WINDOW = 60
COMMON_TOKEN_POSTINGS = 1_000
# Whether a candidate holds a word of more records than BITMAP_MIN_POSTING and than 1/BITMAP_SHARE of the
# catalog is read from a bitmap of the word's records (one bit a record, made when the word is asked for
# again), not by a binary search in its posting. Such a bitmap is at most twice its posting's size, and few
# words qualify (91 at a million records: 11 MB); at most BITMAPS_KEPT are kept, then they are made again.
BITMAP_MIN_POSTING = 4_096
BITMAP_SHARE = 64
BITMAPS_KEPT = 256
ASKED_ONCE_KEPT = 65_536  # words remembered as asked for once (a bitmap is made on the second ask)
# Autocomplete's guesses (a `budget`): of a word's records, this many budgets are read for those that also
# hold the query's next rarest word typed right.
GUESS_READ_BUDGETS = 4
FUZZY_CANDIDATES = 40
FUZZY_QUERY_CHARS = 1_000  # similar text is judged on the start of a long paste (messages are shorter)
FUZZY_RIVALS = 3  # text comparisons go on until the shown matches and this many more are sure
# Text alone (no pattern) answers a typed query at this similarity (half word coverage, half text score), and
# a pasted panic only at the second one and in the same file.
TEXT_ANSWER_QUERY = 0.8
# ...and the typed text itself must read like the record's: words one slip from the record's ("merged" for
# "merge") cover a chat line fully, but its text is no message ("+1 merged" is 0.67 like "the merge.").
TEXT_ANSWER_QUERY_TEXT = 0.75
TEXT_ANSWER_PANIC = 0.9
# A rival of such an answer, within a point of its score, needs a similarity of about 0.78: this coverage.
RIVAL_MIN_COVERAGE = 0.5
UNORDERED_WORDS_CREDIT = 0.97  # of a text holding a typed fragment's words, but not as typed
MAX_QUERY_CHARS = 16_000  # a message with a long Debug value in it still matches its pattern
MAX_RESULTS = 5
SIGNATURE_BITS = 128  # of a pattern's word signature (two bits a word)
UNMADE = -1  # a signature not made yet (a restored index makes each when first needed)
# A pasted location adds the pasted file's records nearest the line as candidates: this many on each side
# (twice this many in all), in up to NEIGHBOUR_FILES files; among more files of that name (another
# version's mod.rs), the nearest one on each side of each file compete.
NEIGHBOURS = 8
NEIGHBOUR_FILES = 4
MAX_NEIGHBOUR_FILES = 512  # a file name found at more paths than this: only the first ones are searched
# Typo correction: an unknown word this long or longer is replaced by its nearest catalog words ("pol" from
# "pool" too), and the answers for this many words are kept (chat repeats its words).
NEAR_MIN_LENGTH = 3
NEAR_CACHE_SIZE = 50_000
# Near means one slip (OSA similarity; 0.75 for four letters), or two in a word of NEAR_LONG letters or more
# (0.6 for five; a hair lower, as rapidfuzz compares the cutoff in floating point).
NEAR_MIN_SIMILARITY = 0.7
NEAR_MIN_SIMILARITY_LONG = 0.59
NEAR_LONG = 5
# A text of up to this many words is read word by word against each candidate it compares (typed queries);
# longer ones (pastes) keep the summed word weights.
ALIGN_MAX_WORDS = 16
# A group of more records than this (one message in many releases and files) is not ranked whole: only its
# first records and those in a file of the pasted name can be among the ranked (`Matcher._expand`).
LARGE_GROUP = 24
IdArray: TypeAlias = "array[int] | memoryview"  # an index's numbers: an array, or a view of a packed one
_RECORD_ID = np.dtype(f"=u{array('I').itemsize}")  # postings are array("I") of record positions


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

    @classmethod
    def for_record(
        cls, record: Record, record_index: int, *, panic_index: int = 0, confidence: float = 0.0
    ) -> Match:
        """A match named by the caller (a button pressed later, a site found by its line), not ranked."""
        return cls(record, 0.0, confidence, (), panic_index, False, record_index)


@dataclass(frozen=True)
class LookupResult:
    panics: tuple[Panic, ...]
    matches: tuple[Match, ...]
    answer_panic: int | None
    """Index in `panics` of the panic the answer is for (the first with a known record), else None."""
    auto_reply: bool
    version_hints: tuple[VersionHint, ...] = ()
    """Crate versions the paste declares outside its paths (a Cargo.lock excerpt, `burn = "0.16"`)."""
    root_panic: int | None = None
    """Index in `panics` of the first panic that is not a follow-on of another (the likely cause)."""
    truncated: bool = False
    """True when the paste was too long to be read whole (see `bot.extract.MAX_PASTE_CHARS`)."""

    @property
    def consequences(self) -> tuple[int, ...]:
        """The other panics of the paste that follow from the answered one (echoes after it)."""
        if self.answer_panic is None:
            return ()
        return tuple(
            index for index, panic in enumerate(self.panics) if index != self.answer_panic and panic.follow_on
        )

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


@dataclass(frozen=True, slots=True)
class _GroupHit:
    """What one group's pattern matched: the same evidence for each of its records."""

    hit: PatternHit
    points: float
    text: str  # the matched part of the message
    message_length: int  # of the message form the hit is in

    def credit(self, found: _Evidence) -> None:
        if self.points > found.pattern_points:
            found.hit, found.pattern_points = self.hit, self.points
            found.hit_text = self.text
            found.message_length = self.message_length


@dataclass(slots=True)
class _Evidence:
    hit: PatternHit | None = None
    hit_text: str = ""
    message_length: int = 0  # of the message form the hit is in
    pattern_points: float = 0.0
    location_points: float = 0.0
    fuzzy: float = 0.0
    coverage: float = 0.0
    text_score: float = 0.0

    @property
    def score(self) -> float:
        # With a pattern matched, similar text only breaks ties: literal specificity says more about which
        # of two matched messages the paste is (`outputs {:?}, targets` over `outputs {:?} targets`).
        text_points = TEXT_POINTS_WITH_PATTERN if self.hit is not None else TEXT_POINTS
        return self.pattern_points + self.location_points + text_points * self.fuzzy


class Matcher:
    """An index over one catalog, built once; `lookup` is cheap and never raises on any text.

    What it keeps per record is columnar (one list or array per field, indexed by the record's position):
    a compact index builds fast and holds about a kilobyte per record.
    """

    def __init__(self, records: Sequence[Record]) -> None:
        self.records: list[Record] = list(records)
        # A plain pattern as literal segments (matched with str.find), else the record's own regex (RE2).
        self._keys: list[LiteralPattern | str] = []
        # Records that share a key (one message in many files and releases) form a group, verified once
        # per lookup: a group's records, by group (`_members[_member_start[g]:_member_start[g + 1]]`).
        self._group_keys: list[LiteralPattern | str] = []
        self._member_start = array("I")
        self._members = array("I")
        # A large group's records by file name, for the few a pasted location can lift (see `_expand`).
        self._large_group_files: dict[int, dict[str, array[int]]] = {}
        self._record_group = array("I")  # each record's group
        self._regex_sets = RegexSets()  # the groups with a regex of their own, found by RE2 Sets
        self._specificity = array("H")
        self._placeholders = array("H")
        self._words = array("H")
        self._paths: list[tuple[str, ...]] = []
        self._lines = array("i")  # -1: no line number
        # Per group: a Bloom signature of the words any text matching the pattern holds (0: none known).
        self._signatures: list[int] = []  # UNMADE: made from `_anchor_source` when first needed
        # A restored index's groups' anchor words (vocabulary, per-group starts, word positions), which its
        # signatures are made from on first use: making them all at load took 1.6 s at a million records.
        self._anchor_source: tuple[list[str], array[int], array[int], list[int]] | None = None
        # Groups by anchor word(s); groups with no anchor word (none of them a regex).
        # (A prebuilt index reads these mappings in place: their arrays are memoryviews of one packed array.)
        self._anchors: Mapping[str, IdArray] = {}
        self._pair_anchors: Mapping[str, Mapping[str, IdArray]] = {}
        self._unanchored = array("I")
        self._postings: Mapping[str, IdArray] = {}
        self._by_path: Mapping[tuple[str, ...], IdArray] = {}  # each file's records, by line
        self._path_lines: Mapping[tuple[str, ...], IdArray] = {}
        self._paths_by_basename: dict[str, list[tuple[str, ...]]] = {}
        self._paths_by_ending: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # by their last two parts
        self._near_pools: dict[int, list[str]] = {}  # by length: the words 2 letters shorter to longer
        self._near_cache: dict[str, list[tuple[str, float]]] = {}
        self._bitmaps: dict[str, npt.NDArray[np.uint8]] = {}  # by word: its records as bits (`_holding`)
        self._asked_once: set[str] = set()  # words in thousands of records asked for once, without a bitmap
        with gc_paused():
            self._build()

    def _build(self) -> None:
        postings: dict[str, list[int]] = defaultdict(list)
        # Per group: its anchor words (None for a regex), and its records.
        safe_by_group: list[set[str] | None] = []
        members: list[list[int]] = []
        # A literal key is one group: its records have the same segments but for whitespace, so the same
        # words, specificity and placeholders. A regex's words and specificity come from each record's
        # message: its records are grouped by those too.
        group_of: dict[object, int] = {}
        by_path: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, record in enumerate(self.records):
            key, segments = record_key(record.messagePattern, record.errorMessage)
            plain = isinstance(key, tuple)
            every, safe = segment_tokens(segments)
            for token in every:
                postings[token].append(index)
            specific = min(specificity(segments), 0xFFFF)
            group_key: object = key if plain else (key, specific, len(segments))
            group = group_of.get(group_key)
            if group is None:
                group = group_of[group_key] = len(members)
                members.append([])
                safe_by_group.append(safe if plain else None)
                self._group_keys.append(key)
            else:
                key = self._group_keys[group]  # one key object per group
            members[group].append(index)
            self._record_group.append(group)
            parts = path_parts(record.filePath or "")
            same_file = by_path.get(parts)
            if same_file is None:
                by_path[parts] = same_file = []
            else:
                parts = self._paths[same_file[0]]  # one tuple per file
            same_file.append(index)
            self._paths.append(parts)
            line = record.lineNumber
            self._lines.append(line if line is not None and 0 <= line < 2**31 else -1)
            self._keys.append(key)
            self._specificity.append(specific)
            self._placeholders.append(min(len(segments) - 1, 0xFFFF))
            self._words.append(min(len(every), 0xFFFF))
        for group, group_members in enumerate(members):
            self._member_start.append(len(self._members))
            self._members.extend(group_members)
            if len(group_members) > LARGE_GROUP:
                by_name: dict[str, array[int]] = {}
                for index in group_members:
                    parts = self._paths[index]
                    if parts:
                        by_name.setdefault(parts[-1], array("I")).append(index)
                self._large_group_files[group] = by_name
        self._member_start.append(len(self._members))
        # Rarest first: fewest records, then longest, then alphabetical (a stable order across builds).
        order = sorted(postings, key=lambda token: (len(postings[token]), -len(token), token))
        rank = {token: position for position, token in enumerate(order)}
        anchors: dict[str, list[int]] = defaultdict(list)
        pair_anchors: dict[str, dict[str, list[int]]] = defaultdict(dict)
        regexes: list[tuple[int, str]] = []
        for index, anchor_words in enumerate(safe_by_group):
            # A pattern with too few literal characters is no evidence: never a candidate.
            weak = self._specificity[members[index][0]] < MIN_PATTERN_SPECIFICITY
            if not anchor_words:
                self._signatures.append(0)
                key = self._group_keys[index]
                if weak:
                    continue
                if isinstance(key, str):
                    regexes.append((index, key))
                else:
                    self._unanchored.append(index)
                continue
            if weak:
                self._signatures.append(0)
                continue
            # The rarest word keeps each anchor list short; a message holding the pattern holds the word.
            # All its words are checked (by signature) before any pattern runs: near-identical messages
            # share anchors, and each would otherwise be matched in vain.
            ranks = sorted([rank[token] for token in anchor_words])
            if len(ranks) == 1:
                anchors[order[ranks[0]]].append(index)
            else:
                # Two words must both be in a message for it to be a candidate: near-identical messages
                # share their rarest word far more often than their two rarest.
                seconds = pair_anchors[order[ranks[0]]]
                ids = seconds.get(order[ranks[1]])
                if ids is None:
                    seconds[order[ranks[1]]] = ids = []
                ids.append(index)
            self._signatures.append(_signature(anchor_words))
        self._regex_sets = RegexSets(regexes)
        self._anchors = {token: array("I", ids) for token, ids in anchors.items()}
        self._pair_anchors = {
            first: {second: array("I", ids) for second, ids in seconds.items()}
            for first, seconds in pair_anchors.items()
        }
        self._postings = {token: array("I", postings[token]) for token in order}
        files: dict[tuple[str, ...], IdArray] = {}
        file_lines: dict[tuple[str, ...], IdArray] = {}
        for parts, ids in by_path.items():
            if not parts:
                continue
            ids.sort(key=self._lines.__getitem__)  # stable: same-line records stay in catalog order
            files[parts] = array("I", ids)
            file_lines[parts] = array("i", [self._lines[i] for i in ids])
            self._paths_by_basename.setdefault(parts[-1], []).append(parts)
            if len(parts) >= 2:
                self._paths_by_ending.setdefault(parts[-2:], []).append(parts)
        self._by_path, self._path_lines = files, file_lines
        by_length: dict[int, list[str]] = defaultdict(list)
        for token in order:
            if not token[0].isdigit():  # a number is never a typo of a word
                by_length[len(token)].append(token)
        for length in range(NEAR_MIN_LENGTH, max(by_length, default=0) + 3):
            pool = [token for near in range(length - 2, length + 3) for token in by_length.get(near, ())]
            if pool:
                self._near_pools[length] = pool
        # The build's temporaries hold as many objects as the index: freed in steps, a reload in a thread
        # lets the event loop run between them (dropped at return, one deallocation held it 100-200 ms).
        for temporary in (postings, rank, anchors, pair_anchors, group_of, by_path, members, safe_by_group):
            _clear_in_steps(temporary)
        _clear_in_steps(by_length)
        _clear_in_steps(order)

    def __len__(self) -> int:
        return len(self.records)

    # -- a prebuilt index (bot/prebuilt.py) -----------------------------------------------------------

    # What `export_state` leaves out: the records (stored apart), the compiled RE2 Sets (rebuilt from their
    # patterns), the caches (typos, common words' bitmaps and the words asked for once: made again on use),
    # and the word signatures (made with this process's string hash).
    _NOT_EXPORTED = frozenset(
        {"records", "_regex_sets", "_near_cache", "_bitmaps", "_asked_once", "_signatures", "_anchor_source"}
    )

    def export_state(self) -> dict[str, object]:
        """The index as plain containers, for `restore` in another process: every attribute but the
        records, the RE2 programs and the caches; the signatures as each group's anchor words (positions
        in the vocabulary), since Python's string hash differs between processes."""
        state = {name: value for name, value in vars(self).items() if name not in self._NOT_EXPORTED}
        vocabulary = {token: position for position, token in enumerate(self._postings)}
        anchor_start = array("I")
        anchor_words = array("I")
        for group, made in enumerate(self._signatures):
            signature = made if made != UNMADE else self._made_signature(group)
            anchor_start.append(len(anchor_words))
            if not signature:
                continue
            key = self._group_keys[group]
            _, safe = segment_tokens(list(key) if isinstance(key, tuple) else [key])
            if _signature(safe) != signature:  # the build's own words, or the state would lie
                raise ValueError(f"group {group}: its signature is not made of its key's words")
            anchor_words.extend(sorted(vocabulary[word] for word in safe))
        anchor_start.append(len(anchor_words))
        state["_regexes"] = list(self._regex_sets.regexes)
        state["_anchor_start"] = anchor_start
        state["_anchor_words"] = anchor_words
        return state

    @classmethod
    def restore(cls, state: dict[str, object], records: Sequence[Record]) -> Matcher:
        """A matcher from `export_state` and its records (any sequence: a prebuilt file gives a lazy one)."""
        matcher = cls.__new__(cls)
        fields = dict(state)
        regexes = cast("list[tuple[int, str]]", fields.pop("_regexes"))
        anchor_start = cast("array[int]", fields.pop("_anchor_start"))
        anchor_words = cast("array[int]", fields.pop("_anchor_words"))
        vars(matcher).update(fields)
        matcher.records = records  # type: ignore[assignment]  # a read-only sequence serves as the list
        matcher._near_cache = {}
        matcher._bitmaps = {}
        matcher._asked_once = set()
        matcher._regex_sets = RegexSets(regexes)
        vocabulary = list(matcher._postings)
        bits = [0] * len(vocabulary)  # a word's two bits, made on first use (never 0 once made)
        matcher._anchor_source = (vocabulary, anchor_start, anchor_words, bits)
        matcher._signatures = [UNMADE] * (len(anchor_start) - 1)
        return matcher

    def _made_signature(self, group: int) -> int:
        """A restored group's signature, made from its anchor words and kept (two threads making the same
        one make the same value)."""
        if self._anchor_source is None:
            raise RuntimeError("a signature to make, and no anchor words to make it from")
        vocabulary, anchor_start, anchor_words, bits = self._anchor_source
        signature = 0
        for word in anchor_words[anchor_start[group] : anchor_start[group + 1]]:
            word_bits = bits[word]
            if not word_bits:
                word_bits = bits[word] = _signature((vocabulary[word],))
            signature |= word_bits
        self._signatures[group] = signature
        return signature

    def _literal(self, record_index: int) -> str:
        """Lower-case literal text, placeholders as spaces: what typed queries are compared with."""
        key = self._keys[record_index]
        if isinstance(key, tuple):
            return " ".join(key).lower()
        return " ".join(split_format_string(self.records[record_index].errorMessage)).lower()

    # -- lookup ---------------------------------------------------------------------------------------

    def lookup(self, text: str, limit: int = MAX_RESULTS) -> LookupResult:
        """Rank the catalog for the panics in `text`. The answer is for the first panic with a known record,
        causes before echoes: a panic that follows from another (a PoisonError unwrap, a relaying
        `CallError`) is answered only when no cause in the paste has a record."""
        return self.lookup_extraction(extract(text), limit)

    def lookup_extraction(self, extraction: Extraction, limit: int = MAX_RESULTS) -> LookupResult:
        """`lookup` of a paste already extracted (`bot.extract.extract`), maybe in another process."""
        panics = extraction.panics
        if not panics:
            return LookupResult(panics, (), None, False, truncated=extraction.truncated)
        root = root_panic_index(panics)
        order = sorted(range(len(panics)), key=lambda index: (panics[index].follow_on, index))
        first_ranked: tuple[Match, ...] | None = None
        for index in order:
            panic = panics[index]
            ranked = self._rank_panic(panic, index, limit)
            if first_ranked is None:
                first_ranked = ranked
            if ranked and ranked[0].known:
                auto = self._auto_reply(panic, ranked)
                return LookupResult(
                    panics, ranked, index, auto, root_panic=root, truncated=extraction.truncated
                )
        return LookupResult(
            panics, first_ranked or (), None, False, root_panic=root, truncated=extraction.truncated
        )

    def _rank_panic(self, panic: Panic, panic_index: int, limit: int) -> tuple[Match, ...]:
        variants = message_variants(panic.message[:MAX_QUERY_CHARS]) if panic.message else []
        evidence: dict[int, _Evidence] = {}
        kept = _kept(limit)
        parts = path_parts(panic.location.path) if panic.location is not None else ()
        group_hits = self._pattern_evidence(variants, evidence, kept, parts[-1] if parts else None)
        # Location points can lift any candidate, unless no record is in a file of that name.
        bounded = not parts or parts[-1] not in self._paths_by_basename
        if variants and not _decided_by_patterns(evidence, self._keys, bounded):
            # A typo or a typed query: only a weak pattern (a short word inside) or none met the text.
            self._fuzzy_evidence(variants, evidence, max(limit, 1) + FUZZY_RIVALS, bounded, group_hits)
        if panic.location is not None:
            self._location_evidence(panic.location, parts, evidence)
        scored = sorted(evidence.items(), key=lambda item: (-item[1].score, item[0]))[:kept]
        decided = []
        # A candidate's rival is the best one with another message (same-message sites are not rivals).
        best_key = self._keys[scored[0][0]] if scored else None
        other = _best_other(scored, self._keys)
        for record_index, found in scored:
            rival = other if self._keys[record_index] == best_key else (scored[0][1], scored[0][0])
            confidence = self._confidence(found, record_index, rival, panic)
            known = confidence >= KNOWN_MIN_CONFIDENCE and (
                found.hit is not None or _text_alone_is_enough(found, panic)
            )
            decided.append((record_index, found, round(confidence, 3), known))
        # Known records first; the stable sort keeps the score order (rounded as shown) within each group.
        decided.sort(key=lambda item: (not item[3], -round(item[1].score, 2)))
        return tuple(
            Match(
                record=self.records[record_index],
                score=round(found.score, 2),
                confidence=confidence,
                reasons=self._reasons(found, record_index, panic.location),
                panic_index=panic_index,
                known=known,
                record_index=record_index,
            )
            for record_index, found, confidence, known in decided[:limit]
        )

    def _reasons(self, found: _Evidence, record_index: int, location: Location | None) -> tuple[Reason, ...]:
        """Pattern first, then location, then text: what matched, strongest first. Written only for the
        matches returned."""
        reasons = []
        if found.hit is not None:
            detail = f"{found.hit.mode} match of messagePattern"
            span = (found.hit.start, found.hit.end)
            reasons.append(Reason("pattern", detail, span, found.hit_text[:300]))
        if found.location_points > 0 and location is not None:
            reasons.append(self._location_reason(record_index, location))
        if found.fuzzy > 0:
            detail = f"similar text ({found.fuzzy:.2f}; words {found.coverage:.2f}, {found.text_score:.2f})"
            reasons.append(Reason("text", detail))
        return tuple(reasons)

    def _pattern_evidence(
        self, variants: list[str], evidence: dict[int, _Evidence], kept: int, file_name: str | None
    ) -> dict[int, _GroupHit]:
        """Verify every group whose anchor words the message holds (the few without an anchor, and the
        regexes an RE2 Set found): once per distinct pattern, however many records carry it. Each matched
        group's records that can be ranked get its evidence (`_expand`); what each group matched is
        returned, for the others found later by their text."""
        group_hits: dict[int, _GroupHit] = {}
        words: set[str] = set()
        for variant in variants:
            words.update(tokens(variant))
        candidates: set[int] = set(self._unanchored)
        for word in words:
            candidates.update(self._anchors.get(word, ()))
            seconds = self._pair_anchors.get(word)
            if seconds:
                for second in words.intersection(seconds):  # iterates the smaller of the two
                    candidates.update(seconds[second])
        lacking = ~_signature(words)  # the bits of words the message does not hold
        # Literal patterns compare with the message's whitespace runs folded; regexes see it as pasted.
        forms = list(dict.fromkeys((normalize_space(variant), variant) for variant in variants))
        if self._regex_sets:
            candidates.update(self._regex_sets.search([pasted for _, pasted in forms]))
        for group in candidates:
            signature = self._signatures[group]
            if signature == UNMADE:
                signature = self._made_signature(group)
            if signature & lacking:
                continue  # a word the pattern needs is not in the message
            key = self._group_keys[group]
            best: PatternHit | None = None
            best_text = ""
            for folded, pasted in forms:
                if isinstance(key, tuple):
                    hit = match_literal_word(key, folded)
                    if hit is not None and folded is not pasted:
                        hit = unfold_span(hit, pasted)  # the span as pasted, line breaks and all
                else:
                    hit = match_pattern(key, pasted)
                if hit is None:
                    continue
                # The same specificity and placeholders throughout: the strongest mode is the most points.
                if best is None or _MODE_RANK[hit.mode] > _MODE_RANK[best.mode]:
                    best, best_text = hit, pasted
                if hit.mode == "full":
                    break
            if best is None:
                continue
            first = self._members[self._member_start[group]]
            points = _pattern_points(best, self._specificity[first], self._placeholders[first])
            group_hit = _GroupHit(best, points, best_text[best.start : best.end], len(best_text))
            group_hits[group] = group_hit
            for record_index in self._expand(group, kept, file_name):
                found = evidence.get(record_index)
                if found is None:
                    evidence[record_index] = found = _Evidence()
                group_hit.credit(found)
        return group_hits

    def same_message(self, position: int) -> Sequence[int]:
        """The positions of the records whose message has the same words as the record at `position` (its
        group: one message in many files and releases, placeholders compared as equal), itself included."""
        group = self._record_group[position]
        return self._members[self._member_start[group] : self._member_start[group + 1]]

    def _expand(self, group: int, kept: int, file_name: str | None) -> Iterable[int]:
        """The records of a matched group that can be among the `kept` best: all of a small group; of a
        large one, its first `kept` records (the rest score as they do and rank after them, by position)
        and those in a file named as the pasted one (the only ones location points can lift)."""
        start, stop = self._member_start[group], self._member_start[group + 1]
        if stop - start <= LARGE_GROUP:
            return self._members[start:stop]
        first = self._members[start : start + kept]
        nearby = self._large_group_files[group].get(file_name) if file_name else None
        return first if not nearby else chain(first, nearby)

    def _location_evidence(
        self, location: Location, parts: tuple[str, ...], evidence: dict[int, _Evidence]
    ) -> None:
        """Location points for every candidate, and the pasted file's records nearest the pasted line as
        candidates of their own (nearby records, never the answer by themselves)."""
        if not parts:
            return
        exact = parts in self._by_path
        if exact:
            files = [parts]
        else:
            # Another checkout or version of the file: the paths that end most like the pasted one (a
            # name like mod.rs has hundreds of paths, so those sharing the last two parts come first).
            same_end = self._paths_by_ending.get(parts[-2:], [])
            shared = [common_suffix_length(parts, path) for path in same_end]
            best = max(shared, default=0)
            files = [path for path, count in zip(same_end, shared, strict=True) if count == best]
            if not files:
                files = self._paths_by_basename.get(parts[-1], [])
        for record_index in self._nearest_sites(files, location.line):
            if record_index not in evidence:
                evidence[record_index] = _Evidence()
        for record_index, found in evidence.items():
            found.location_points = self._location_points(record_index, parts, exact, location.line)

    def _nearest_sites(self, files: list[tuple[str, ...]], line: int | None) -> list[int]:
        """The records of `files` nearest `line` (2 * NEIGHBOURS at most); from many files (another
        version's mod.rs), the nearest one or two of each are weighed against each other."""
        if len(files) == 1:  # the usual case: the window around the line is the answer
            ids = self._by_path[files[0]]
            if line is not None and len(ids) > 2 * NEIGHBOURS:
                at = bisect_left(self._path_lines[files[0]], line)
                ids = ids[max(0, at - NEIGHBOURS) : at + NEIGHBOURS]
            return list(ids[: 2 * NEIGHBOURS])
        per_side = NEIGHBOURS if len(files) <= NEIGHBOUR_FILES else 1
        unknown = 1 << 40  # no line to compare: after every known distance
        nearby: list[tuple[int, int]] = []
        for path in files[:MAX_NEIGHBOUR_FILES]:
            ids = self._by_path[path]
            if line is not None and len(ids) > 2 * per_side:
                at = bisect_left(self._path_lines[path], line)
                ids = ids[max(0, at - per_side) : at + per_side]  # holds the nearest, by line
            for record_index in ids[: 2 * per_side]:
                record_line = self._lines[record_index]
                distance = abs(line - record_line) if line is not None and record_line >= 0 else unknown
                nearby.append((distance, record_index))
        return [record_index for _, record_index in heapq.nsmallest(2 * NEIGHBOURS, nearby)]

    def _location_points(
        self, record_index: int, parts: tuple[str, ...], exact: bool, line: int | None
    ) -> float:
        """Same file, then the path's shared ending, then line distance: the site closest scores highest."""
        path = self._paths[record_index]
        if exact:
            if path != parts:
                return 0.0
            file_points = 15.0
        else:
            if not path or path[-1] != parts[-1]:
                return 0.0
            shared = common_suffix_length(parts, path)
            file_points = 8.0 + 2.0 * min(shared - 2, 3) if shared >= 2 else 3.0
        record_line = self._lines[record_index]
        if line is None or record_line < 0:
            return file_points
        return file_points + 10.0 * max(0.0, 1.0 - abs(line - record_line) / LINE_WINDOW)

    def _location_reason(self, record_index: int, location: Location) -> Reason:
        parts = path_parts(location.path)
        shared = common_suffix_length(parts, self._paths[record_index])
        if shared == len(parts) == len(self._paths[record_index]):
            detail = "same file"
        elif shared >= 2:
            detail = f"path ends alike ({shared} parts)"
        else:
            detail = "same file name"
        record_line = self._lines[record_index]
        if location.line is not None and record_line >= 0:
            detail += f", line {location.line} vs {record_line}"
        return Reason("location", detail)

    def _fuzzy_evidence(
        self,
        variants: list[str],
        evidence: dict[int, _Evidence],
        keep: int,
        bounded: bool,
        group_hits: dict[int, _GroupHit],
    ) -> None:
        """Typed queries and typos: IDF-weighted words (typos corrected against the index's vocabulary),
        then rapidfuzz similarity of the literal text on the best few."""
        query = max(variants, key=len).lower()[:FUZZY_QUERY_CHARS]
        words, total = self._query_words(query)
        if not words:
            return
        ids, sums = self._word_sums(words)
        if not len(ids):
            return
        # A short query is a typed one: each of its words is then credited by the candidate's closest word
        # (a typo of one word can make another, "mut" for "must"), and common words left out of the sums
        # above count too. A long text keeps the sums: aligning each of its words would cost too much.
        align = len(words) <= ALIGN_MAX_WORDS
        # Best covered first. Once `keep` similarities are known, a candidate is compared only if it could
        # still beat the weakest of them, and covers enough of the query's words to be an answer or an
        # answer's rival; rapidfuzz stops early on one that falls short. So answers, confidences and
        # auto-replies are those of comparing all candidates; only when no answer is found may the weak
        # suggestions listed differ (measured: half the time the p99 of typed queries at 100k records).
        # Not with a location, whose points may lift any candidate.
        kept: list[float] = []  # a min-heap of the best `keep` similarities
        # One message in many files and releases is one text: its words are aligned once.
        aligned: dict[str, float] = {}
        similarity_to = _TextSimilarity(query)
        for record_index, weight in _best_covered(ids, sums, FUZZY_CANDIDATES):
            coverage = min(1.0, weight / total)
            found = evidence.get(record_index)
            if found is None and group_hits:
                group_hit = group_hits.get(self._record_group[record_index])
                if group_hit is not None:  # a record of a large matched group left out of the ranking
                    evidence[record_index] = found = _Evidence()
                    group_hit.credit(found)
            needed = 0.0
            if bounded and found is None and len(kept) >= keep:
                needed = (kept[0] - 0.5 * coverage) / 0.5
                if needed > 1.0 or coverage < RIVAL_MIN_COVERAGE:
                    continue
            literal = self._literal(record_index)
            if align and coverage < 1.0:
                # The summed coverage decided which candidates are read; read, their words are aligned.
                covered = aligned.get(literal)
                if covered is None:
                    covered = aligned[literal] = _aligned_coverage(words, literal)
                coverage = max(coverage, covered / total)
                needed = max(0.0, needed - (coverage - min(1.0, weight / total)))
            text_score = similarity_to(literal, needed)
            similarity = 0.5 * coverage + 0.5 * text_score
            if needed > 0.0 and similarity <= kept[0]:
                continue
            if found is None:
                evidence[record_index] = found = _Evidence()
            found.fuzzy, found.coverage, found.text_score = similarity, coverage, text_score
            if len(kept) < keep:
                heapq.heappush(kept, similarity)
            elif similarity > kept[0]:
                heapq.heapreplace(kept, similarity)

    def _word_sums(
        self, words: list[_QueryWord], budget: int | None = None
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """The candidate records of a query (sorted ids) and each one's summed weights of every reading of
        the query's words it holds. Candidates are the records holding a reading of a rarer word: one whose
        likeliest reading is in at most COMMON_TOKEN_POSTINGS records, else the rarest word. A common word
        brings no candidates but adds its weight to the candidates that hold it (`_holding`): at 100k
        records "max: unsupported mask" is three common words, and the one record holding all three must
        outscore the thousands holding one. A typo's readings go together: "shhape" brings the records of
        "shape" as well as those of "share", or a weaker, rarer reading alone would pick the candidates."""
        weighted: dict[str, float] = {}
        bearing: set[str] = set()  # the readings that bring candidates
        rarest_first = sorted(words, key=self._likeliest_posting_length)
        for position, query_word in enumerate(rarest_first):
            if not query_word.readings:
                continue
            brings = position == 0 or self._likeliest_posting_length(query_word) <= COMMON_TOKEN_POSTINGS
            for reading, credit in query_word.readings:
                weighted[reading] = max(weighted.get(reading, 0.0), query_word.weight * credit)
                if brings:
                    bearing.add(reading)
        rare = [reading for reading in weighted if reading in bearing]
        if not rare:
            return np.zeros(0, dtype=_RECORD_ID), np.zeros(0, dtype=np.float64)
        postings = [np.frombuffer(self._postings[reading], dtype=_RECORD_ID) for reading in rare]
        if budget is not None and sum(len(posting) for posting in postings) > budget:
            # Autocomplete's guesses: a posting that brings candidates is cut to `budget` records, time
            # bounded by the budget, not by the catalog. Not its first records: at a million records a
            # typed word is in thousands, and the one typed about is seldom among the first. Those that
            # also hold the next rarest word typed right (a word no candidate brings) come first.
            spelt = next(
                (
                    query_word.word
                    for query_word in rarest_first
                    if query_word.readings == ((query_word.word, 1.0),) and query_word.word not in bearing
                ),
                None,
            )
            if spelt is None:
                postings = [posting[:budget] for posting in postings]
            else:
                postings = [self._first_holding(posting, spelt, budget) for posting in postings]
        if len(postings) == 1:  # one posting is sorted and unique already
            ids = postings[0]
            sums = np.full(len(ids), weighted[rare[0]], dtype=np.float64)
        else:
            # Each record's summed word weights, in numpy: thousands of postings cost microseconds.
            ids, positions = np.unique(np.concatenate(postings), return_inverse=True)
            per_posting = np.repeat([weighted[reading] for reading in rare], [len(p) for p in postings])
            sums = np.bincount(positions, weights=per_posting).astype(np.float64, copy=False)
        for reading, weight in weighted.items():
            if reading not in bearing:
                sums = sums + weight * self._holding(ids, reading)
        return ids, sums

    def _first_holding(
        self, posting: npt.NDArray[np.uint32], reading: str, budget: int
    ) -> npt.NDArray[np.uint32]:
        """`budget` of `posting`'s records (all of them when it has fewer): of its first GUESS_READ_BUDGETS
        budgets, those that hold `reading`, then the first of the others to fill the budget."""
        if len(posting) <= budget:
            return posting
        read = posting[: GUESS_READ_BUDGETS * budget]
        chosen = self._holding(read, reading).copy()
        short = budget - int(chosen.sum())
        if short <= 0:
            return read[chosen][:budget]
        chosen[np.flatnonzero(~chosen)[:short]] = True
        return read[chosen]

    def _holding(self, ids: npt.NDArray[np.uint32], reading: str) -> npt.NDArray[np.bool_]:
        """Which of `ids` (sorted record positions) hold `reading`: its few records looked up among them,
        or each of them looked up in its posting, or in its bitmap when it is in thousands of records."""
        posting = np.frombuffer(self._postings[reading], dtype=_RECORD_ID)
        if not len(posting) or not len(ids):
            return np.zeros(len(ids), dtype=bool)
        if len(posting) * 4 < len(ids):
            held = np.zeros(len(ids), dtype=bool)
            at = np.searchsorted(ids, posting)
            inside = at < len(ids)
            at, posting = at[inside], posting[inside]
            held[at[ids[at] == posting]] = True
            return held
        common = len(posting) > max(BITMAP_MIN_POSTING, len(self.records) // BITMAP_SHARE)
        bits = self._bitmap(reading, posting) if common else None
        if bits is not None:
            return np.asarray((bits[ids >> 3] >> (ids & 7).astype(np.uint8)) & 1, dtype=bool)
        at = np.minimum(np.searchsorted(posting, ids), len(posting) - 1)
        return np.asarray(posting[at] == ids)

    def _bitmap(self, reading: str, posting: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8] | None:
        """A word's records as one bit each, made the second time the word is asked for (a millisecond at a
        million records: a word asked once, a typo's unlikely reading, is not worth it; a guess asks twice
        for the word its candidates are chosen by); None before."""
        bits = self._bitmaps.get(reading)
        if bits is not None:
            return bits
        if reading not in self._asked_once:
            if len(self._asked_once) >= ASKED_ONCE_KEPT:
                self._asked_once = set()  # a new set, not cleared: another thread may be reading it
            self._asked_once.add(reading)
            return None
        held = np.zeros(len(self.records), dtype=bool)
        held[posting] = True
        bits = np.packbits(held, bitorder="little")
        if len(self._bitmaps) >= BITMAPS_KEPT:
            self._bitmaps = {}  # a new dict, not cleared: a lookup in another thread may be reading it
        self._bitmaps[reading] = bits
        return bits

    def _likeliest_posting_length(self, query_word: _QueryWord) -> int:
        """How many records hold the query word's likeliest reading (none: no record)."""
        return len(self._postings[query_word.readings[0][0]]) if query_word.readings else 0

    def _query_words(self, query: str) -> tuple[list[_QueryWord], float]:
        """Query words with IDF weights and their readings (an unknown word read as its closest indexed
        words), and the weight of the whole query: words the catalog lacks count against every record."""
        count = max(len(self.records), 1)
        # An unknown word weighs like a word in 1 % of records: chat words ("lol", "works") dilute the
        # match without drowning a typed query's real words.
        unknown_weight = _idf(max(count // 100, 1), count)
        words: list[_QueryWord] = []
        total = 0.0
        for word in dict.fromkeys(tokens(query)):
            if word in self._postings:
                weight = _idf(len(self._postings[word]), count)
                words.append(_QueryWord(word, weight, 1.0, ((word, 1.0),)))
                total += weight
                continue
            if word[0].isdigit():
                continue  # a number no record holds: a value of the user's, not a word of a message
            near_words = self._near_words(word) if len(word) >= NEAR_MIN_LENGTH else []
            if not near_words:
                weight = unknown_weight if len(word) >= 4 else unknown_weight / 2
                words.append(_QueryWord(word, weight, 1.0, ()))
                total += weight
                continue
            # The word weighs what its likeliest reading weighs, and a record holding that reading (or one as
            # close) is credited in full: one slip of the keys is no reason to doubt the word.
            top = near_words[0][1]
            weight = max(_idf(len(self._postings[near]), count) for near, close in near_words if close == top)
            readings = tuple((near, close / top) for near, close in near_words)
            words.append(_QueryWord(word, weight, top, readings))
            total += weight
        return words, total

    def _near_words(self, word: str) -> list[tuple[str, float]]:
        """The indexed words closest to an unknown one, closest first. Chat repeats its words, so answers
        are kept (the vocabulary never changes for a matcher), up to a bound."""
        near = self._near_cache.get(word)
        if near is not None:
            return near
        pool = self._near_pools.get(len(word))
        if pool is None:
            return []  # longer than any indexed word
        # OSA: a transposition ("dytpe") is one slip, as a dropped, doubled or replaced letter is.
        found = process.extract(
            word,
            pool,
            scorer=OSA.normalized_similarity,
            score_cutoff=_near_cutoff(word),
            limit=3,
        )
        near = [(token, float(similarity)) for token, similarity, _ in found]
        if len(self._near_cache) >= NEAR_CACHE_SIZE:
            self._near_cache.clear()
        self._near_cache[word] = near
        return near

    # -- guesses while someone types -----------------------------------------------------------------

    def typed_guesses(self, query: str, limit: int, budget: int, compared: int, least: float) -> list[Record]:
        """What a typed fragment may be about, for autocomplete (a guess, not an answer: `lookup` answers):
        the records holding the most IDF weight of its words (an unknown word read as its closest indexed
        words, as `lookup` reads it), the `compared` best of them ordered by the similarity `lookup` gives
        (half word coverage, half text), those under `least` left out. Bounded where `lookup` is not: a word
        brings at most `budget` candidates (those holding the next rarest word typed right first, see
        `_word_sums`), and no word is aligned."""
        query = " ".join(query.split()).lower()[:FUZZY_QUERY_CHARS]
        words, total = self._query_words(query)
        if not words or total <= 0.0:
            return []
        ids, sums = self._word_sums(words, budget)
        similarity_to = _TextSimilarity(query)
        ranked: list[tuple[float, int]] = []
        kept: list[float] = []  # a min-heap of the best `limit` similarities
        for record_index, weight in _best_covered(ids, sums, compared):
            coverage = min(1.0, weight / total)
            # Once `limit` are known, a text is compared only as far as it could still rank among them
            # (rapidfuzz stops early below the cutoff): the same guesses as comparing every one in full.
            needed = max(least, kept[0] if len(kept) >= limit else 0.0)
            text_score = similarity_to(self._literal(record_index), max(0.0, (needed - 0.5 * coverage) / 0.5))
            similarity = 0.5 * coverage + 0.5 * text_score
            if similarity < needed or similarity < least:
                continue
            ranked.append((-similarity, record_index))
            if len(kept) < limit:
                heapq.heappush(kept, similarity)
            else:
                heapq.heapreplace(kept, similarity)
        ranked.sort()
        return [self.records[record_index] for _, record_index in ranked[:limit]]

    # -- decisions ------------------------------------------------------------------------------------

    def _confidence(
        self, found: _Evidence, record_index: int, rival: tuple[_Evidence, int] | None, panic: Panic
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
            specific = self._specificity[record_index]
            if specific < AUTO_REPLY_MIN_SPECIFICITY:
                confidence -= 0.1
            elif specific >= 30:
                confidence += 0.03
            if rival is not None and _explains_as_well(
                found, specific, rival[0], self._specificity[rival[1]]
            ):
                confidence -= 0.15  # another message explains the paste as well
            same_file = found.location_points >= 8.0
            if panic.kind == "header" and _a_small_part(found, specific, same_file):
                # `float tensor` inside a long panic message of the user's own: a phrase, not the message.
                confidence = min(confidence, KNOWN_MIN_CONFIDENCE - 0.05)
            if (
                panic.kind == "header"
                and panic.location is not None
                and specific < AUTO_REPLY_MIN_SPECIFICITY
                and found.location_points == 0.0
                and self._paths[record_index]
            ):
                # `(.+?) failed: (.+?)` fits any message with "failed: " in it: from a file that is not
                # the pattern's own (an assertion in the user's code), that is a guess, not an answer.
                confidence = min(confidence, KNOWN_MIN_CONFIDENCE - 0.05)
            return max(0.0, min(0.995, confidence))
        if found.fuzzy > 0.0:
            return max(0.0, min(0.85, (found.fuzzy - 0.35) * 1.3))
        # Location only: a neighbour in the same file, never the answer.
        return min(0.3, found.location_points / 100.0)

    def _auto_reply(self, panic: Panic, ranked: tuple[Match, ...]) -> bool:
        return self.may_auto_reply(panic, ranked[0])

    def specificity(self, record_index: int) -> int:
        """Literal characters (letters and digits) of a record's pattern: how much of a message it pins."""
        return self._specificity[record_index]

    def may_auto_reply(self, panic: Panic, top: Match) -> bool:
        """Post unasked only for a confident pattern match on a specific message."""
        pattern_reason = next((r for r in top.reasons if r.signal == "pattern"), None)
        if pattern_reason is None or top.confidence < AUTO_REPLY_MIN_CONFIDENCE:
            return False
        needed = (
            AUTO_REPLY_MIN_SPECIFICITY if panic.kind == "header" else AUTO_REPLY_MIN_SPECIFICITY_NO_HEADER
        )
        words = self._words[top.record_index]
        if self._specificity[top.record_index] < needed or words < 2:
            return False
        return not (panic.kind != "header" and "contained" in pattern_reason.detail and words < 4)


_MODE_RANK = {"contained": 0, "expect": 1, "full": 2}  # the order of their points


class RegexSets:
    """The patterns of groups with a regex of their own, in RE2 Sets built once: a lookup compiles and
    runs only the programs of patterns found in the message (`compile_pattern` caches them), not one for
    every regex of the catalog. A Set that RE2 cannot build leaves its groups verified on every lookup."""

    def __init__(self, regexes: Sequence[tuple[int, str]] = ()) -> None:
        self.regexes = tuple(regexes)  # what a prebuilt index stores: the Sets are rebuilt from it
        self._sets: list[tuple[object, array[int]]] = []
        self._always = array("I")
        for start in range(0, len(regexes), REGEX_SET_SIZE):
            chunk = regexes[start : start + REGEX_SET_SIZE]
            built = regex_set([pattern for _, pattern in chunk])
            if built is None:
                self._always.extend(group for group, _ in chunk)
            else:
                self._sets.append((built, array("I", [group for group, _ in chunk])))

    def __bool__(self) -> bool:
        return bool(self._sets or self._always)

    def search(self, texts: Iterable[str]) -> set[int]:
        """The groups whose regex is found in one of `texts` (or that no Set holds)."""
        found: set[int] = set(self._always)
        for text in texts:
            encoded = text.encode("utf-8", errors="surrogatepass")
            for built, groups in self._sets:
                for position in regex_set_match(built, encoded):
                    found.add(groups[position])
        return found


@dataclass(frozen=True, slots=True)
class _QueryWord:
    """A word of a typed query: its weight, how close its closest indexed word is (1.0: indexed itself),
    and the indexed words it may be read as, with the share of its weight each earns a record."""

    word: str
    weight: float
    top: float
    readings: tuple[tuple[str, float], ...]


def _near_cutoff(word: str) -> float:
    """The similarity from which a word is a typo of another."""
    return NEAR_MIN_SIMILARITY_LONG if len(word) >= NEAR_LONG else NEAR_MIN_SIMILARITY


def _aligned_coverage(words: list[_QueryWord], literal: str) -> float:
    """The query's weight a record's text explains: each query word earns its weight times the
    similarity of the record's closest word (relative to the closest word of the whole catalog)."""
    own = set(tokens(literal))
    covered = 0.0
    choices: list[str] | None = None
    for word in words:
        if word.word in own:
            covered += word.weight
            continue
        if choices is None:
            choices = list(own)
        found = process.extractOne(
            word.word, choices, scorer=OSA.normalized_similarity, score_cutoff=_near_cutoff(word.word)
        )
        if found is not None:
            covered += word.weight * min(1.0, found[1] / word.top)
    return covered


def _a_small_part(found: _Evidence, specific: int, same_file: bool) -> bool:
    """A short pattern met inside a panic message it covers less than half of, away from its file."""
    if found.hit is None or found.hit.mode != "contained" or same_file:
        return False
    covered = found.hit.end - found.hit.start
    return specific < SMALL_PART_SPECIFICITY and 2 * covered < found.message_length


def _signature(words: Iterable[str]) -> int:
    """Two of SIGNATURE_BITS bits per word: a record whose bits are not all in a message's signature has a
    word the message lacks. Python's string hash is the same for one process's index and lookups."""
    signature = 0
    for word in words:
        hashed = hash(word)
        signature |= (1 << (hashed % SIGNATURE_BITS)) | (1 << ((hashed >> 16) % SIGNATURE_BITS))
    return signature


def _kept(limit: int) -> int:
    """Candidates ranked in full for `limit` results: a few more than shown, for the rivals."""
    return max(limit, 1) + 8


def _text_alone_is_enough(found: _Evidence, panic: Panic) -> bool:
    """A similar text is the answer to a typed query; for a real panic it also needs the same file: a user's
    own `todo!()` ("not yet implemented") is not Burn's "Not yet implemented for iteration"."""
    if panic.kind == "query":
        return found.fuzzy >= TEXT_ANSWER_QUERY and found.text_score >= TEXT_ANSWER_QUERY_TEXT
    return found.fuzzy >= TEXT_ANSWER_PANIC and found.location_points >= 8.0


def _decided_by_patterns(
    evidence: dict[int, _Evidence], keys: list[LiteralPattern | str], bounded: bool
) -> bool:
    """Whether text similarity can be left out: a specific message matched in full; or, with no location
    points to lift a candidate, one message alone matched, above what a similar text alone could reach or
    rival (the text signal gives at most TEXT_POINTS, a rival is within a point). Between two matched
    messages, similarity breaks the tie (`rfft: ...` inside `irfft: ...`)."""
    hits = [(record_index, found) for record_index, found in evidence.items() if found.hit is not None]
    for _, found in hits:
        if found.hit is not None and found.hit.mode != "contained" and found.pattern_points >= 55.0:
            return True
    if not bounded or not hits or len({keys[record_index] for record_index, _ in hits}) > 1:
        return False
    return max(found.pattern_points for _, found in hits) > TEXT_POINTS + 1.0


def _pattern_points(hit: PatternHit, specific: int, placeholders: int) -> float:
    weight = min(specific, SPECIFICITY_SCALE) / SPECIFICITY_SCALE
    base = {"full": 50.0, "expect": 48.0, "contained": 40.0}[hit.mode]
    # Between equally specific patterns, the one with fewer placeholders explains the text better.
    return base + 25.0 * weight - 0.3 * min(placeholders, 5)


def _idf(document_frequency: int, count: int) -> float:
    return math.log(1.0 + count / max(document_frequency, 1))


class _TextSimilarity:
    """0..1 similarity of a query with record texts; 0 when below a cutoff (rapidfuzz gives up early on
    those). One message in many files and releases is one text: each text is compared once per query, and
    a later, higher cutoff is answered from the parts computed with a lower one."""

    def __init__(self, query: str) -> None:
        self.query = query
        self._parts: dict[str, tuple[float, float, float]] = {}  # text: (cutoff, in order, unordered)

    def __call__(self, literal: str, cutoff: float = 0.0) -> float:
        least = max(0.0, cutoff) * 100.0
        known = self._parts.get(literal)
        if known is not None and known[0] <= least:
            # Each part is exact when at or above the cutoff it was computed with, else 0: below it, and
            # so below this one too.
            ordered, unordered = (part if part >= least else 0.0 for part in known[1:])
        else:
            # A typed fragment is shorter than the message: compare it with the best-aligned part.
            if len(self.query) < len(literal):
                ordered = fuzz.partial_ratio(self.query, literal, score_cutoff=least)
            else:
                ordered = fuzz.ratio(self.query, literal, score_cutoff=least)
            unordered = fuzz.token_set_ratio(self.query, literal, score_cutoff=least)
            self._parts[literal] = (least, ordered, unordered)
        # The same words in another order explain a typed fragment a little less than the fragment itself:
        # of two messages holding all its words, the one holding them as typed comes first.
        return max(ordered, unordered * UNORDERED_WORDS_CREDIT) / 100.0


def _best_other(
    scored: list[tuple[int, _Evidence]], keys: list[LiteralPattern | str]
) -> tuple[_Evidence, int] | None:
    """The best candidate (and its record) whose message is not the best one's."""
    for record_index, found in scored[1:]:
        if keys[record_index] != keys[scored[0][0]]:
            return found, record_index
    return None


def _best_covered(
    ids: npt.NDArray[np.uint32], sums: npt.NDArray[np.float64], count: int
) -> list[tuple[int, float]]:
    """The `count` records with the largest sums, largest first, as (record, sum); ties go to the lower
    record (`ids` is sorted)."""
    if len(sums) > count:
        threshold = np.partition(sums, len(sums) - count)[len(sums) - count]
        above = np.flatnonzero(sums > threshold)
        tied = np.flatnonzero(sums == threshold)[: count - len(above)]
        chosen = np.concatenate((above, tied))
    else:
        chosen = np.arange(len(sums))
    chosen = chosen[np.lexsort((chosen, -sums[chosen]))]
    return list(zip(ids[chosen].tolist(), sums[chosen].tolist(), strict=True))


def _explains_as_well(found: _Evidence, specific: int, rival: _Evidence, rival_specific: int) -> bool:
    """Another message matches the paste as fully, and only a few lines of distance or a trace of
    specificity put this one first: the answer is a guess between two records."""
    if rival.score <= 0:
        return False
    if found.score - rival.score < 1.0:
        return True
    if found.hit is None or rival.hit is None or rival.hit.mode != found.hit.mode:
        return False
    same_file_evidence = abs(found.location_points - rival.location_points) < 5.0
    return same_file_evidence and specific - rival_specific < 3


def _clear_in_steps(container: dict[Any, Any] | list[Any], step: int = 1_000) -> None:
    """Empty `container` `step` items at a time (each step frees what only those items held)."""
    if isinstance(container, dict):
        while container:
            for _ in range(min(step, len(container))):
                container.popitem()
    else:
        while container:
            del container[-step:]
