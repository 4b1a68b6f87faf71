"""Pattern matching: the str.find matcher of plain patterns agrees with their RE2 program."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.patterns import (
    PatternHit,
    literal_pattern,
    match_literal,
    match_literal_word,
    match_pattern,
    normalize_space,
    unfold_span,
)
from bot.rust_messages import escape_literal


def tolerant_regex(segments: list[str]) -> str:
    """The reference: a regex of the segments whose whitespace runs are `\\s+`, spaces at either end
    optional, each placeholder `(.+?)`. The literal matcher must meet exactly what it meets (in RE2)."""
    parts = [r"\s+".join(escape_literal(word) for word in re.split(r"\s+", segment)) for segment in segments]
    return re.sub(r"^(?:\\s\+)+|(?:\\s\+)+$", "", "(.+?)".join(parts))


def both(segments: list[str], message: str) -> tuple[PatternHit | None, PatternHit | None]:
    text = normalize_space(message)
    return match_literal(literal_pattern(segments), text), match_pattern(tolerant_regex(segments), text)


def test_modes_on_a_burn_message() -> None:
    segments = ["Can't differentiate ", " backward."]
    parts = literal_pattern(segments)
    assert match_literal(parts, "Can't differentiate deform conv 2d backward.") == PatternHit("full", 0, 44)
    assert match_literal(parts, "Can't differentiate x backward.: Err(Io)") == PatternHit("expect", 0, 31)
    hit = match_literal(parts, "hi: Can't differentiate x backward. help")
    assert hit == PatternHit("contained", 4, 35)
    assert match_literal(parts, "Can't differentiate backward.") is None  # the placeholder needs a character


def test_whitespace_runs_and_edges_are_tolerated() -> None:
    parts = literal_pattern(["  Shape mismatch:\n  expected ", ", got ", ""])
    assert parts == ("Shape mismatch: expected ", ", got ", "")
    text = normalize_space("Shape   mismatch:\r\n\texpected [2, 3], got\n[4]")
    assert match_literal(parts, text) == PatternHit("full", 0, len(text))


def test_a_placeholder_at_either_end_takes_one_character_or_more() -> None:
    parts = literal_pattern(["", " is not registered"])
    assert match_literal(parts, "conv1 is not registered") == PatternHit("full", 0, 23)
    assert match_literal(parts, " is not registered") is None
    parts = literal_pattern(["Unknown device ", ""])
    assert match_literal(parts, "Unknown device Cuda(3)") == PatternHit("full", 0, 22)
    assert match_literal(parts, "Unknown device") is None


def test_head_and_tail_cannot_overlap() -> None:
    assert match_literal(("ab", "ba"), "aba") is None
    assert match_literal(("ab", "ba"), "abxba") == PatternHit("full", 0, 5)


# Small alphabets make overlaps, repeats and near-misses common: the cases where a shortcut would be wrong.
_SEGMENT = st.text(alphabet="ab: .\n", max_size=5)
_MESSAGE = st.text(alphabet="ab: .\n\tx", max_size=24)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=4), _MESSAGE)
def test_literal_matcher_agrees_with_re2(segments: list[str], message: str) -> None:
    literal, regex = both(segments, message)
    if regex is None or literal is None:
        # The regex's `(.+?)` may take a lone space the literal form folded into a segment's space; the
        # literal matcher never finds a match RE2 does not.
        assert literal is None
        return
    assert literal.mode == regex.mode
    assert (literal.start, literal.end) == (regex.start, regex.end)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.text(alphabet="abc:.", min_size=1, max_size=5), min_size=1, max_size=4), _MESSAGE)
def test_without_spaces_in_the_pattern_the_two_agree_exactly(segments: list[str], message: str) -> None:
    literal, regex = both(segments, message)
    assert literal == regex


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.text(alphabet="ab: .", min_size=1, max_size=5), min_size=1, max_size=3), _MESSAGE)
def test_an_unfolded_span_covers_the_same_text_as_pasted(segments: list[str], message: str) -> None:
    hit = match_literal(literal_pattern(segments), normalize_space(message))
    if hit is None:
        return
    unfolded = unfold_span(hit, message)
    assert (
        normalize_space(message[unfolded.start : unfolded.end])
        == normalize_space(message)[hit.start : hit.end]
    )
    assert unfolded.mode == hit.mode


def test_a_match_inside_a_text_starts_and_ends_on_word_boundaries() -> None:
    parts = literal_pattern(["matmul: dtype mismatch"])
    assert match_literal_word(parts, "int_matmul: dtype mismatch") is None  # another message's tail
    assert match_literal_word(parts, "got `matmul: dtype mismatch` here") == PatternHit("contained", 5, 27)
    assert match_literal_word(parts, "matmul: dtype mismatched") is None
    # A glued first place does not hide a clean one later on.
    hit = match_literal_word(parts, "int_matmul: dtype mismatch and then matmul: dtype mismatch")
    assert hit == PatternHit("contained", 36, 58)
    # A placeholder at either end may hold anything, glued or not.
    assert (
        match_literal_word(literal_pattern(["", " is not registered"]), "x_y is not registered") is not None
    )


@settings(max_examples=1000, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=4), _MESSAGE)
def test_word_matching_only_ever_drops_a_match(segments: list[str], message: str) -> None:
    parts, text = literal_pattern(segments), normalize_space(message)
    word = match_literal_word(parts, text)
    if word is None:
        return
    assert match_literal(parts, text) is not None

    def glued(at: int) -> bool:
        return 0 < at < len(text) and all(c.isalnum() or c == "_" for c in text[at - 1 : at + 1])

    assert not (parts[0] and glued(word.start))
    assert not (parts[-1] and glued(word.end))


def test_a_pattern_glued_inside_words_too_often_is_taken_as_absent() -> None:
    from bot.patterns import WORD_START_ATTEMPTS

    parts = literal_pattern(["matmul: dtype mismatch"])
    glued = " ".join(["int_matmul: dtype mismatch"] * (WORD_START_ATTEMPTS - 1))
    assert match_literal_word(parts, f"{glued} matmul: dtype mismatch") is not None
    glued = " ".join(["int_matmul: dtype mismatch"] * WORD_START_ATTEMPTS)
    assert match_literal_word(parts, f"{glued} matmul: dtype mismatch") is None  # bounded work
