"""Format strings, the data set's pattern derivation, and Rust's run-time additions to a message."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bot.rust_messages import (
    escape_literal,
    message_variants,
    pattern_from_message,
    pattern_segments,
    segment_tokens,
    specificity,
    split_format_string,
    tokens,
)


def test_split_format_string_knows_escaped_braces() -> None:
    assert split_format_string("a {} b {x:?} c {{literal}}") == ["a ", " b ", " c {literal}"]


def test_pattern_derivation_matches_the_data_set() -> None:
    assert pattern_from_message("Node {node_id:?} is not in the backward_states. ") == (
        "Node (.+?) is not in the backward_states\\. "
    )
    assert pattern_segments("Node (.+?) is not\\.") == ["Node ", " is not."]
    assert pattern_segments("^anchored.*") is None


def test_specificity_ignores_placeholders_and_spaces() -> None:
    assert specificity(split_format_string("{} {:?}: {}")) == 1
    assert specificity(split_format_string("Unsupported dtype {:?}")) == len("Unsupporteddtype")


def test_safe_tokens_leave_out_words_touching_a_placeholder() -> None:
    assert segment_tokens(split_format_string("Current tensor has {}elements in {} total"))[1] == {
        "current",
        "tensor",
        "has",
        "in",
        "total",
    }


def test_runtime_additions_are_peeled() -> None:
    assert "boom" in message_variants("not implemented: boom")
    assert "boom" in message_variants("not yet implemented: boom")
    assert "boom" in message_variants("internal error: entered unreachable code: boom")
    new = "assertion `left == right` failed: sizes differ\n  left: 1\n right: 2"
    assert "sizes differ" in message_variants(new)
    old = "assertion failed: `(left == right)`\n  left: `1`,\n right: `2`: sizes differ"
    assert "sizes differ" in message_variants(old)
    block = (
        "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
        "    1. First reason. \n    2. Second reason"
    )
    variants = message_variants(block)
    assert "First reason." in variants
    assert "Second reason" in variants


@given(st.text())
def test_message_variants_never_raise_and_keep_the_message(text: str) -> None:
    variants = message_variants(text)
    if text.strip():
        assert variants[0] == text.strip()
    else:
        assert variants == []


# Reference versions: the plain definitions the fast ones must agree with.
def reference_pattern_segments(pattern: str) -> list[str] | None:
    segments = []
    for part in pattern.split("(.+?)"):
        literal = re.sub(r"\\(.)", r"\1", part, flags=re.DOTALL)
        if escape_literal(literal) != part:
            return None
        segments.append(literal)
    return segments


def reference_safe_tokens(segments: list[str]) -> set[str]:
    safe = set()
    for index, segment in enumerate(segments):
        lowered = segment.lower()
        for match in re.finditer(r"[a-z]{2,}|[0-9]{3,}", lowered):
            touches_left = index > 0 and match.start() == 0
            touches_right = index < len(segments) - 1 and match.end() == len(lowered)
            if not (touches_left or touches_right):
                safe.add(match.group(0))
    return safe


_PATTERN_TEXT = st.text(alphabet="ab.\\()+?{}| \n", max_size=16)


@given(_PATTERN_TEXT)
def test_pattern_segments_agree_with_the_reference(pattern: str) -> None:
    assert pattern_segments(pattern) == reference_pattern_segments(pattern)


@given(st.text(max_size=40))
def test_a_derived_pattern_gives_back_the_message_segments(message: str) -> None:
    assert pattern_segments(pattern_from_message(message)) == split_format_string(message)


@given(st.lists(st.text(alphabet="abAB 12_{}", max_size=8), min_size=1, max_size=4))
def test_segment_tokens_agree_with_the_reference(segments: list[str]) -> None:
    every, safe = segment_tokens(segments)
    assert safe == reference_safe_tokens(segments)
    assert every == set(tokens(" ".join(segments)))


@given(st.lists(st.text(max_size=8), min_size=1, max_size=4))
def test_specificity_counts_every_character_but_whitespace(segments: list[str]) -> None:
    assert specificity(segments) == sum(len("".join(segment.split())) for segment in segments)
