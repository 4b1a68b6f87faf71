"""Pattern matching: the str.find matcher of plain patterns agrees with their RE2 program."""

from __future__ import annotations

import re

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.patterns import (
    PatternHit,
    literal_pattern,
    literal_segments,
    match_literal,
    match_literal_word,
    match_pattern,
    normalize_space,
    record_key,
    regex_set,
    regex_set_match,
    unfold_span,
)
from bot.rust_messages import escape_literal


def plain_regex(segments: list[str]) -> str:
    """A regex of the segments whose whitespace runs are `\\s+`, spaces at either end optional, each
    placeholder `(.+?)`: the pattern as the data set writes it."""
    parts = [r"\s+".join(escape_literal(word) for word in re.split(r"\s+", segment)) for segment in segments]
    return re.sub(r"^(?:\\s\+)+|(?:\\s\+)+$", "", "(.+?)".join(parts))


def tolerant_regex(segments: list[str]) -> str:
    """The reference: `plain_regex`, where at the very end of the text the last segment's final `.`, `!` or
    `:` is optional when a word character, a quote or a closing bracket comes before it, and one more `.` may
    follow. The literal matcher must meet exactly what it meets (in RE2)."""
    regex = plain_regex(segments)
    tail = re.sub(r"\s+", " ", segments[-1]).rstrip(" ")
    if len(tail) >= 2 and tail[-1] in ".!:" and (tail[-2].isalnum() or tail[-2] in "_'\"`)]"):
        final = escape_literal(tail[-1])
        regex = f"{regex[: -len(final)]}(?:{final}|\\z)"
    return regex + r"(?:\.\z)??"


_REFERENCE_OPTIONS = re2.Options()
_REFERENCE_OPTIONS.dot_nl = True


def reference_hit(regex: str, text: str) -> PatternHit | None:
    """How RE2 meets `text` with `regex` as written, in match_pattern's modes."""
    program = re2.compile(regex, _REFERENCE_OPTIONS)
    found = program.search(text)
    if not found:
        return None
    if program.fullmatch(text):
        return PatternHit("full", 0, len(text))
    prefix = program.match(text)
    if prefix and text.startswith(": ", prefix.end()):
        return PatternHit("expect", 0, prefix.end())
    return PatternHit("contained", found.start(), found.end())


def both(segments: list[str], message: str) -> tuple[PatternHit | None, PatternHit | None]:
    text = normalize_space(message)
    return match_literal(literal_pattern(segments), text), reference_hit(tolerant_regex(segments), text)


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


# -- a message quoted without its final punctuation, or with one more period ----------------------------


def test_the_final_period_is_optional_at_the_end_of_the_message_only() -> None:
    parts = literal_pattern(["Can't differentiate ", " backward."])
    assert match_literal(parts, "Can't differentiate deform conv 2d backward") == PatternHit("full", 0, 43)
    assert match_literal(parts, "hi: Can't differentiate x backward") == PatternHit("contained", 4, 34)
    assert match_literal(parts, "Can't differentiate x backward and more") is None  # not at the end
    assert match_literal(parts, "Can't differentiate x backward: Err(Io)") is None  # not the expect form
    assert match_literal(parts, "Can't differentiate x backward.: Err(Io)") == PatternHit("expect", 0, 31)
    for final in ("!", ":"):
        assert match_literal(literal_pattern([f"Device lost{final}"]), "Device lost") == PatternHit(
            "full", 0, 11
        )
    assert match_literal(literal_pattern(["Expected shape '", "'."]), "Expected shape '[2]'").mode == "full"


def test_a_message_adding_a_final_period_is_a_full_match() -> None:
    parts = literal_pattern(["Tensors should not be empty"])
    assert match_literal(parts, "Tensors should not be empty.") == PatternHit("full", 0, 28)
    assert match_literal(parts, "Tensors should not be empty..") == PatternHit("contained", 0, 27)
    assert match_literal(literal_pattern(["Device lost."]), "Device lost..") == PatternHit("full", 0, 13)


def test_short_and_generic_patterns_match_nothing_more() -> None:
    # A placeholder before the final period stays a placeholder followed by a period.
    assert match_literal(literal_pattern(["", "."]), "anything at all") is None
    assert match_literal(literal_pattern(["Unknown device ", "."]), "Unknown device Cuda(3)") is None
    # Punctuation after a space, another punctuation mark or an escape is not a word's final punctuation.
    assert match_literal(literal_pattern(["Done ."]), "Done") is None
    assert match_literal(literal_pattern(["Wait..."]), "Wait..") is None
    # In the middle of a text, the punctuation is still required.
    assert match_literal(literal_pattern(["Unsupported."]), "Unsupported op") is None
    assert match_literal(literal_pattern(["Unsupported"]), "Unsupported op") == PatternHit("contained", 0, 11)


def test_the_re2_path_tolerates_the_same_final_punctuation() -> None:
    from bot.patterns import tolerant_pattern

    assert match_pattern(r"Index (\d+) out of bounds\.", "Index 3 out of bounds") == PatternHit("full", 0, 21)
    assert match_pattern(r"Index (\d+) out of bounds!", "x: Index 3 out of bounds") == PatternHit(
        "contained", 3, 24
    )
    assert match_pattern(r"Index (\d+) out of bounds", "Index 3 out of bounds.") == PatternHit("full", 0, 22)
    assert match_pattern(r"Index (\d+) out of bounds\.", "Index 3 out of bounds and more") is None
    # A class, an alternation or an escaped backslash before the end is left as it is.
    assert tolerant_pattern(r"a\d:") == r"(?:a\d:)(?:\.\z)??"
    assert tolerant_pattern(r"a\.|b\.") == r"(?:a\.|b\.)(?:\.\z)??"
    assert tolerant_pattern("a\\\\.") == r"(?:a\\.)(?:\.\z)??"
    assert tolerant_pattern(r"size \(2\)\.") == r"(?:size \(2\))(?:\.|\z)(?:\.\z)??"
    assert match_pattern(r"a\d:", "a1") is None


@settings(max_examples=2000, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=4), _MESSAGE)
def test_the_re2_path_widens_a_plain_regex_as_the_reference_does(segments: list[str], message: str) -> None:
    text = normalize_space(message)
    assert match_pattern(plain_regex(segments), text) == reference_hit(tolerant_regex(segments), text)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.text(alphabet="ab!:.'", min_size=1, max_size=4), min_size=1, max_size=3), _MESSAGE)
def test_final_punctuation_agrees_with_re2(segments: list[str], message: str) -> None:
    text = normalize_space(message)
    assert match_literal(literal_pattern(segments), text) == reference_hit(tolerant_regex(segments), text)


# -- literal patterns whatever their escaping (issue 15) ----------------------------------------------------

_LITERAL_SEGMENTS = st.lists(st.text(max_size=30), min_size=1, max_size=4)


@given(_LITERAL_SEGMENTS)
@settings(max_examples=300, deadline=None)
def test_a_python_escaped_pattern_is_the_literal_of_the_plain_escape(segments: list[str]) -> None:
    """`re.escape` writes `\\ `, `\\-`, `\\#` ...: the pattern is still literal text with placeholders, with
    the same key (so the same str.find matching) as the data set's escape of the same text."""
    python = "(.+?)".join(re.escape(segment) for segment in segments)
    plain = "(.+?)".join(escape_literal(segment) for segment in segments)
    assert literal_segments(python) == literal_segments(plain) == segments
    message = "{}".join(segment.replace("{", "{{").replace("}", "}}") for segment in segments)
    python_key, _ = record_key(python, message)
    assert isinstance(python_key, tuple)
    assert python_key == record_key(plain, message)[0]


def test_literal_segments_accepts_any_escape_of_punctuation_and_refuses_regex_syntax() -> None:
    assert literal_segments(r"a\ b\:\,\-\#(.+?)c") == ["a b:,-#", "c"]
    assert literal_segments(r"tensor\[0\] } ]") == ["tensor[0] } ]"]
    assert literal_segments("C:\\\\temp") == ["C:\\temp"]  # an escaped backslash
    for regex in (r"^not implemented$", r"a\d+", r"a\nb", r"x{2}", r"a|b", r"a.b", "trailing\\", r"\(.+?)"):
        assert literal_segments(regex) is None, regex
        assert not isinstance(record_key(regex, "message")[0], tuple)


@given(
    st.lists(st.sampled_from(["ab", "a+b", "x\\d", "(.+?) failed", "^start", "end$", "c[0-9]"]), max_size=6),
    st.text(alphabet="abx01+ failedstrcend[]9\n", max_size=40),
)
@settings(max_examples=200, deadline=None)
def test_a_regex_set_finds_exactly_the_patterns_a_search_finds(patterns: list[str], text: str) -> None:
    built = regex_set(patterns)
    assert built is not None
    found = set(regex_set_match(built, text.encode()))
    assert found == {index for index, pattern in enumerate(patterns) if match_pattern(pattern, text)}
