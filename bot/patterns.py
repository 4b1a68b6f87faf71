"""A record's messagePattern, compiled for linear-time matching (RE2) and verified against pasted messages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from bot.rust_messages import escape_literal, split_format_string

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


# Unescaped, these are regex syntax; every other character is itself. `]` and `}` alone are literal in
# RE2 and Python's `re`, so they need no escape.
_METACHARACTERS = ".^$*+?()[{|\\"
# A piece of pattern that is literal text whatever its escaping: characters that are not metacharacters,
# and a backslash before any character but an ASCII letter or digit (`\d`, `\n`, `\x41` are regex syntax).
# `re.escape` writes `\ `, `\-`, `\#`, `\&`, `\~` (older Pythons `\:`, `\,`, `\'` too); the data set
# escapes only metacharacters.
_LITERAL_PIECE = re.compile(r"(?:[^.^$*+?()\[{|\\]|\\[^0-9A-Za-z])*", re.DOTALL)
PLACEHOLDER_REGEX = "(.+?)"


def literal_segments(pattern: str) -> list[str] | None:
    r"""Literal segments of a pattern made only of literal text and `(.+?)` placeholders, however its
    literals are escaped (`a\ b`, `a b`, `\-` and `-` alike); None for any other regex."""
    segments = []
    for piece in pattern.split(PLACEHOLDER_REGEX):
        if "\\" not in piece:
            for char in _METACHARACTERS:
                if char in piece:
                    return None
            segments.append(piece)
            continue
        if _LITERAL_PIECE.fullmatch(piece) is None:
            return None
        # Every backslash escapes the character after it, an escaped backslash first (`str.split` takes
        # a run of backslashes two by two from its start, as the regex does): no template expansion.
        segments.append("\\".join(part.replace("\\", "") for part in piece.split("\\\\")))
    return segments


def record_segments(pattern: str | None, message: str) -> tuple[list[str], bool]:
    """The literal segments a record's text is made of, and whether its pattern is literal text with
    placeholders (the plain kind, whatever its escaping)."""
    if pattern:
        segments = literal_segments(pattern)
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
spaces at either end dropped. It matches what a regex of the segments matches when its spaces are `\s+`, the
spaces at its ends are optional and its final punctuation is tolerated as `tolerant_pattern` says
(tests/bot/test_patterns.py checks it against RE2)."""

# A message quoted without the final `.`, `!` or `:` of its pattern still matches, but only at the end of the
# text and only when a word (or a closing quote or bracket) comes before that punctuation, so that a pattern
# ending with a placeholder then `.` never turns into a bare placeholder that takes anything.
_FINAL_PUNCTUATION = ".!:"
_BEFORE_FINAL_PUNCTUATION = "_'\"`)]"


def literal_pattern(segments: list[str]) -> LiteralPattern:
    parts = [normalize_space(segment) for segment in segments]
    parts[0] = parts[0].lstrip(" ")
    parts[-1] = parts[-1].rstrip(" ")
    return tuple(parts)


def match_literal(parts: LiteralPattern, text: str) -> PatternHit | None:
    """`match_pattern` for a plain pattern, without a regex: each placeholder is one character or more, and
    the earliest place of each segment is the best one, so a few `str.find` decide. `text` must be
    `normalize_space`d; the span is in that text. Final punctuation is tolerated as in `tolerant_pattern`."""
    hit = _match_literal_exactly(parts, text)
    if hit is not None and hit.mode == "full":
        return hit
    stripped = _without_final_punctuation(parts)
    if (stripped is not None and _literal_fullmatch(stripped, text)) or (
        text.endswith(".") and _literal_fullmatch(parts, text[:-1])
    ):
        return PatternHit("full", 0, len(text))
    if hit is not None or stripped is None:
        return hit
    return _contained_at_end(stripped, text)


def _without_final_punctuation(parts: LiteralPattern) -> LiteralPattern | None:
    """The pattern without its final punctuation, if it ends with some after a word; else None."""
    tail = parts[-1]
    if len(tail) < 2 or tail[-1] not in _FINAL_PUNCTUATION:
        return None
    if not (_is_word_character(tail[-2]) or tail[-2] in _BEFORE_FINAL_PUNCTUATION):
        return None
    return (*parts[:-1], tail[:-1])


def _contained_at_end(parts: LiteralPattern, text: str) -> PatternHit | None:
    """`parts` met inside `text` and ending where the text ends."""
    tail = parts[-1]
    if not text.endswith(tail):
        return None
    tail_start = len(text) - len(tail)
    if len(parts) == 1:
        return PatternHit("contained", tail_start, len(text))
    start = text.find(parts[0])
    if start < 0:
        return None
    # The earliest head leaves the most room: if the segments do not fit after it, they fit after none.
    end = _follow(parts, 1, len(parts) - 1, text, start + len(parts[0]))
    if end < 0 or end + 1 > tail_start:
        return None
    return PatternHit("contained", start, len(text))


def _match_literal_exactly(parts: LiteralPattern, text: str) -> PatternHit | None:
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
    """RE2 program for a pattern as `tolerant_pattern` widens it; an invalid one falls back to its escaped
    literal text, so it still matches a message that quotes it exactly and never raises."""
    try:
        return re2.compile(tolerant_pattern(pattern), _OPTIONS)
    except re2.error:
        return re2.compile(tolerant_pattern(escape_literal(pattern)), _OPTIONS)


# Patterns per RE2 Set: a lookup runs every Set once per form of the message; smaller Sets keep each
# one's DFA small (RE2 gives up on a Set whose DFA outgrows its memory).
REGEX_SET_SIZE = 512
_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False
_SET_OPTIONS.dot_nl = True
_SET_OPTIONS.max_mem = 64 << 20


def regex_set(patterns: list[str]) -> Any | None:
    """An RE2 Set that finds where each of `patterns` (as `compile_pattern` compiles it) is met in a text;
    None when RE2 cannot build it."""
    built = re2.Set.SearchSet(_SET_OPTIONS)
    try:
        for pattern in patterns:
            try:
                built.Add(tolerant_pattern(pattern))
            except re2.error:
                built.Add(tolerant_pattern(escape_literal(pattern)))
        built.Compile()
    except re2.error:
        return None
    return built


def regex_set_match(built: Any, text: bytes) -> list[int]:
    """Positions (in the order added) of the Set's patterns found in `text` (UTF-8)."""
    found: list[int] | None = built.Match(text)
    return found or []


def tolerant_pattern(pattern: str) -> str:
    r"""`pattern` where the message may lack its final `.`, `!` or `:` at the very end of the text (when a
    word, a closing quote or bracket comes before it, and the pattern has no alternation), and may add a final
    `.`: `backward\.` becomes `(?:backward)(?:\.|\z)(?:\.\z)??`. Anywhere but the end, nothing changes."""
    final = _final_punctuation_length(pattern)
    if final == 0:
        return rf"(?:{pattern})(?:\.\z)??"
    return rf"(?:{pattern[:-final]})(?:{pattern[-final:]}|\z)(?:\.\z)??"


def _final_punctuation_length(pattern: str) -> int:
    r"""How many characters spell the final literal punctuation of a regex (`\.`, `!`, `\!`, `:`), when a
    literal word character, quote or escaped bracket comes before it; 0 otherwise."""
    if len(pattern) < 2 or _has_alternation(pattern):
        return 0
    if pattern[-2] == "\\" and pattern[-1] in _FINAL_PUNCTUATION and _escapes(pattern, len(pattern) - 2):
        length = 2
    elif pattern[-1] in "!:" and not _escapes(pattern, len(pattern) - 1):
        length = 1
    else:
        return 0
    rest = pattern[:-length]
    if rest.endswith(("\\)", "\\]")) and _escapes(rest, len(rest) - 2):
        return length
    before = rest[-1:]
    if before and (_is_word_character(before) or before in "'\"`") and not _escapes(rest, len(rest) - 1):
        return length
    return 0


def _escapes(pattern: str, position: int) -> bool:
    """Whether the backslash at `position` escapes what follows (or, for another character, whether a
    backslash escapes it): an odd run of backslashes ends there."""
    run = len(pattern[:position]) - len(pattern[:position].rstrip("\\"))
    return (run % 2 == 0) if pattern[position] == "\\" else (run % 2 == 1)


def _has_alternation(pattern: str) -> bool:
    escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            return True
    return False


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
