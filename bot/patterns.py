"""A record's messagePattern, compiled for linear-time matching (RE2) and verified against pasted messages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from bot.rust_messages import escape_literal, pattern_segments, split_format_string

# RE2's `\s`: the whitespace a tolerant pattern treats as one space.
_SPACE_RUN = re.compile(r"[ \t\n\r\f]+")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.dot_nl = True  # `{:#?}` values span lines
_OPTIONS.max_mem = 8 << 20


@dataclass(frozen=True)
class PatternHit:
    """How a pattern met a message: `full` (the whole message), `expect` (the message, then `: <error>`),
    or `contained` (somewhere inside); with the span it covered."""

    mode: str
    start: int
    end: int


def record_segments(pattern: str | None, message: str) -> tuple[list[str], bool]:
    """The literal segments a record's text is made of, and whether its pattern is the plain derived kind."""
    if pattern:
        segments = pattern_segments(pattern)
        if segments is not None:
            return segments, True
    return split_format_string(message), not pattern  # an empty pattern is no pattern: the message's


def record_key(pattern: str | None, message: str) -> tuple[LiteralPattern | str, list[str]]:
    """How a record's text is matched: its literal pattern (plain patterns, and records without one) or its
    own regex; and the literal segments its words and specificity come from."""
    segments, plain = record_segments(pattern, message)
    return (literal_pattern(segments) if plain else (pattern or "")), segments


def match_record(key: LiteralPattern | str, text: str) -> PatternHit | None:
    """`key` (from `record_key`) against a message as pasted; a literal hit's span is in the folded text."""
    if isinstance(key, tuple):
        return match_literal_word(key, normalize_space(text))
    return match_pattern(key, text)


def normalize_space(text: str) -> str:
    """Every run of whitespace as one space: the form a literal pattern is compared with."""
    if "  " in text or "\n" in text or "\t" in text or "\r" in text or "\f" in text:
        return _SPACE_RUN.sub(" ", text)
    return text  # most text has single spaces only: a few scans beat a regex


# A pattern met only inside identifiers this many times in one text is taken as not there.
WORD_START_ATTEMPTS = 16

LiteralPattern = tuple[str, ...]
r"""A plain pattern as `match_literal` reads it: its literal segments, whitespace runs as one space and the
spaces at either end dropped. It matches what a regex of the segments matches when its spaces are `\s+` and
the spaces at its ends are optional (tests/bot/test_patterns.py checks it against RE2)."""


def literal_pattern(segments: list[str]) -> LiteralPattern:
    parts = [normalize_space(segment) for segment in segments]
    parts[0] = parts[0].lstrip(" ")
    parts[-1] = parts[-1].rstrip(" ")
    return tuple(parts)


def match_literal(parts: LiteralPattern, text: str) -> PatternHit | None:
    """`match_pattern` for a plain pattern, without a regex: each placeholder is one character or more, and
    the earliest place of each segment is the best one, so a few `str.find` decide. `text` must be
    `normalize_space`d; the span is in that text."""
    first = parts[0]
    start = text.find(first)
    if start < 0:
        return None  # most candidates end here
    end = _follow(parts, 1, len(parts), text, start + len(first))
    if end < 0:
        return None
    if start == 0:
        if _literal_fullmatch(parts, text):
            return PatternHit("full", 0, len(text))
        if text.startswith(": ", end):
            return PatternHit("expect", 0, end)
    return PatternHit("contained", start, end)


def unfold_span(hit: PatternHit, text: str) -> PatternHit:
    """`hit`, found in `normalize_space(text)`, with its span in `text` itself."""
    return PatternHit(hit.mode, _unfold(hit.start, text), _unfold(hit.end, text))


def _unfold(position: int, text: str) -> int:
    shift = 0  # how far `text` is ahead of its folded form, up to here
    for run in _SPACE_RUN.finditer(text):
        if position <= run.start() - shift:  # at or before this run's one folded space
            break
        shift += len(run.group()) - 1
    return position + shift


def match_literal_word(parts: LiteralPattern, text: str) -> PatternHit | None:
    """`match_literal`, where a match inside the text must not start or end inside an identifier:
    `matmul: dtype mismatch` is not in `int_matmul: dtype mismatch` (Rust prints a message whole, so its
    first and last words are never glued to others)."""
    offset = 0
    for _ in range(WORD_START_ATTEMPTS):
        hit = match_literal(parts, text[offset:] if offset else text)
        if hit is None:
            return None
        start, end = hit.start + offset, hit.end + offset
        if not (parts[0] and start > 0 and _glued(text[start - 1], text[start])):
            if parts[-1] and end < len(text) and _glued(text[end - 1], text[end]):
                return None
            return PatternHit(hit.mode if offset == 0 else "contained", start, end)
        offset = start + 1  # look further on for a place that starts a word
    return None


def _glued(left: str, right: str) -> bool:
    return _is_word_character(left) and _is_word_character(right)


def _is_word_character(char: str) -> bool:
    return char.isalnum() or char == "_"


def _follow(parts: LiteralPattern, first: int, stop: int, text: str, position: int) -> int:
    """Where segments `first..stop` end, each after a placeholder of one character or more; -1 if they
    cannot all follow `position`."""
    for index in range(first, stop):
        part = parts[index]
        position = text.find(part, position + 1)
        if position < 0:
            return -1
        position += len(part)
    return position


def _literal_fullmatch(parts: LiteralPattern, text: str) -> bool:
    head, tail = parts[0], parts[-1]
    if len(parts) == 1:
        return text == head
    if not (text.startswith(head) and text.endswith(tail)):
        return False
    position = _follow(parts, 1, len(parts) - 1, text, len(head))
    return position >= 0 and position + 1 <= len(text) - len(tail)


def is_valid_pattern(pattern: str) -> str | None:
    """None for a pattern RE2 accepts, else the reason it does not."""
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


@lru_cache(maxsize=8192)
def compile_pattern(pattern: str) -> Any:
    """RE2 program for a pattern; an invalid one falls back to its escaped literal text, so it still matches
    a message that quotes it exactly and never raises."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error:
        return re2.compile(escape_literal(pattern), _OPTIONS)


def match_pattern(pattern: str, message: str) -> PatternHit | None:
    """The strongest way `pattern` meets `message`, or None."""
    program = compile_pattern(pattern)
    found = program.search(message)
    if not found:
        return None  # most candidates end here, after one pass
    if program.fullmatch(message):
        return PatternHit("full", 0, len(message))
    prefix = program.match(message)
    if prefix and message.startswith(": ", prefix.end()):
        return PatternHit("expect", 0, prefix.end())
    return PatternHit("contained", found.start(), found.end())
