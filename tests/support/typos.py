"""Seeded two-typo queries over a catalog's literal text: what a user types after reading a panic once.

Each query is 3-6 consecutive words of one literal segment of a message (no placeholder inside) that no
other message holds, with two edits (deletion, transposition, substitution, insertion) in words of four
letters or more: two different words when the fragment has two such words. A query whose typos make it at
least as close to another message's words (`urfft` is one edit from `rfft` and from `irfft`) is not made:
no reader could tell which message was meant. Any record with the source's literal text is a right answer:
one message is raised in several files and releases, and a typed query has no location to pick one.
"""

from __future__ import annotations

import itertools
import random
import re
import string
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import OSA

from bot.records import Record
from bot.rust_messages import split_format_string

EDITS = ("deletion", "transposition", "substitution", "insertion")
MIN_EDITED_LETTERS = 4
_PIECE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class TypoQuery:
    text: str
    source_id: str
    literal: str
    """The source's literal text (`literal_text`): a record with this text is a right answer."""
    fragment: str
    """The words before the typos."""


def literal_text(record: Record) -> str:
    """A message's literal segments, lower-cased and whitespace-folded: what a typed query can hold."""
    return " ".join(" ".join(split_format_string(record.errorMessage)).lower().split())


def _pieces(text: str) -> list[str]:
    """Letters and digits only: two fragments that differ in punctuation alone are the same to a reader."""
    return _PIECE.findall(text.lower())


def _fragment_runs(message: str) -> list[list[str]]:
    """Whole words of each literal segment; a word touching a placeholder (`{}elements`) is cut off."""
    runs = []
    segments = split_format_string(message)
    for index, segment in enumerate(segments):
        words = segment.split()
        if index > 0 and words and not segment[:1].isspace():
            words = words[1:]
        if index < len(segments) - 1 and words and not segment[-1:].isspace():
            words = words[:-1]
        if len(words) >= 3:
            runs.append(words)
    return runs


def _letters(word: str) -> list[int]:
    return [i for i, char in enumerate(word) if char.isalpha()]


def edit(word: str, kind: str, rng: random.Random) -> str:
    """One edit of `word` at a letter (an insertion: a letter before one of its letters or after the last);
    always a different word."""
    letters = _letters(word)
    while True:
        i = rng.choice(letters)
        if kind == "deletion":
            return word[:i] + word[i + 1 :]
        if kind == "transposition":
            if i + 1 < len(word) and word[i + 1].isalpha() and word[i].lower() != word[i + 1].lower():
                return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            if len({word[j].lower() for j in letters}) == 1:
                kind = "substitution"  # "aaaa": nothing to swap
            continue
        if kind == "substitution":
            char = rng.choice([c for c in string.ascii_lowercase if c != word[i].lower()])
            return word[:i] + char + word[i + 1 :]
        if kind == "insertion":
            at = rng.choice([*letters, letters[-1] + 1])
            return word[:at] + rng.choice(string.ascii_lowercase) + word[at:]
        raise ValueError(kind)


def two_typos(words: list[str], rng: random.Random) -> list[str]:
    """The words with two edits, in two different long-enough words when there are two."""
    eligible = [i for i, word in enumerate(words) if len(_letters(word)) >= MIN_EDITED_LETTERS]
    chosen = rng.sample(eligible, 2) if len(eligible) >= 2 else eligible * 2
    edited = list(words)
    for i in chosen:
        edited[i] = edit(edited[i], rng.choice(EDITS), rng)
    return edited


class _Texts:
    """Every distinct literal text as pieces, with an index from piece to texts, to ask which texts hold a
    run of pieces, and the vocabulary by length, to ask which pieces lie within some edits of a typo."""

    def __init__(self, literals: Sequence[str]) -> None:
        self.padded = [" " + " ".join(_pieces(text)) + " " for text in literals]
        self.holding: dict[str, set[int]] = defaultdict(set)
        for index, text in enumerate(self.padded):
            for piece in text.split():
                self.holding[piece].add(index)
        self.by_length: dict[int, list[str]] = defaultdict(list)
        for piece in self.holding:
            self.by_length[len(piece)].append(piece)

    def holders(self, pieces: Sequence[str]) -> set[int]:
        """The texts holding these pieces in a row, as whole pieces."""
        found = set.intersection(*(self.holding.get(piece, set()) for piece in pieces))
        needle = " " + " ".join(pieces) + " "
        return {index for index in found if needle in self.padded[index]}

    def within(self, typed: str, distance: int) -> list[str]:
        pool = [p for n in range(len(typed) - distance, len(typed) + distance + 1) for p in self.by_length[n]]
        found = process.extract(typed, pool, scorer=OSA.distance, score_cutoff=distance, limit=None)
        return [piece for piece, _, _ in found]


def _ambiguous(typed: list[str], meant: list[str], own: int, texts: _Texts) -> bool:
    """Whether reading each typo as a word at most as far from it as the meant word names another text."""
    options = []
    for typed_piece, meant_piece in zip(typed, meant, strict=True):
        if typed_piece == meant_piece:
            options.append([meant_piece])
        else:
            options.append(texts.within(typed_piece, OSA.distance(typed_piece, meant_piece)))
    return any(
        texts.holders(reading) - {own} for reading in itertools.product(*options) if list(reading) != meant
    )


def two_typo_queries(records: Sequence[Record], rng: random.Random, n: int) -> list[TypoQuery]:
    """Up to `n` queries, one per distinct literal text, in a seeded order."""
    by_literal: dict[str, Record] = {}
    for record in records:
        by_literal.setdefault(literal_text(record), record)
    literals = list(by_literal)
    texts = _Texts(literals)
    order = list(enumerate(by_literal.values()))
    rng.shuffle(order)
    queries: list[TypoQuery] = []
    for own, record in order:
        if len(queries) == n:
            break
        windows = [
            run[start : start + size]
            for run in _fragment_runs(record.errorMessage)
            for size in range(3, 7)
            for start in range(len(run) - size + 1)
        ]
        rng.shuffle(windows)
        for words in windows:
            if not any(len(_letters(word)) >= MIN_EDITED_LETTERS for word in words):
                continue
            meant = _pieces(" ".join(words))
            # A fragment other messages hold too names several records: no typed query could pick one.
            if not meant or texts.holders(meant) != {own}:
                continue
            typed_words = two_typos(words, rng)
            typed = _pieces(" ".join(typed_words))
            if len(typed) != len(meant) or _ambiguous(typed, meant, own, texts):
                continue
            text = " ".join(typed_words)
            text = text.lower() if rng.random() < 0.4 else text
            queries.append(TypoQuery(text, record.id, literals[own], " ".join(words)))
            break
    return queries
