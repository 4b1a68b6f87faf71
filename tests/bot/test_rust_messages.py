"""Format strings, the data set's pattern derivation, and Rust's run-time additions to a message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.rust_messages import (
    message_variants,
    pattern_from_message,
    pattern_segments,
    safe_tokens,
    specificity,
    split_format_string,
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
    assert safe_tokens(split_format_string("Current tensor has {}elements in {} total")) == {
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
