"""Format strings, the data set's pattern derivation, and Rust's run-time additions to a message."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bot.rust_messages import (
    Headline,
    escape_literal,
    headline,
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


# ---- the line that explains a message opened by a banner ---------------------------------------------------

RESHAPE = (
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: [2, 3], target shape: [4, 2]. \n"
)


def test_a_tensor_check_reads_as_its_operation_and_reason_with_the_pasted_values() -> None:
    assert headline(RESHAPE) == Headline(
        "Reshape: the given shape doesn't have the same number of elements as the current tensor",
        ("Current shape: [2, 3], target shape: [4, 2].",),
    )


def test_a_one_sentence_reason_is_the_whole_title_values_included() -> None:
    reason = "narrow at dimension 3, start exceeds the size of the tensor along this dimension (Size=2)"
    block = f"=== Tensor Operation Error ===\n  Operation: 'Narrow'\n  Reason:\n    1. Can't {reason} \n"
    assert headline(block) == Headline(f"Narrow: can't {reason}", ())
    # A first word that is a name keeps its capitals; "no. of" ends no sentence.
    block = (
        "=== Tensor Operation Error ===\n  Operation: 'Cast'\n  Reason:\n"
        "    1. DType F16 is not supported here. Got no. of channels: 3. \n"
    )
    assert headline(block) == Headline("Cast: DType F16 is not supported here", ("Got no. of channels: 3.",))


def test_of_several_reasons_the_catalogued_one_is_the_title_and_the_others_are_listed() -> None:
    block = (
        "=== Tensor Operation Error ===\n  Operation: 'Matmul'\n  Reason:\n"
        "    1. The provided tensors are not on the same device. Lhs tensor device Cpu, rhs tensor device "
        "Cuda(0). \n"
        "    2. The inner dimension of matmul should be the same, but got 3 and 4. Lhs shape [2, 3], rhs "
        "shape [4, 5]. \n"
    )
    second = (
        "The inner dimension of matmul should be the same, but got {} and {}. Lhs shape {:?}, rhs shape {:?}."
    )
    assert headline(block, second) == Headline(
        "Matmul: the inner dimension of matmul should be the same, but got 3 and 4",
        (
            "Lhs shape [2, 3], rhs shape [4, 5].",
            "1. The provided tensors are not on the same device. Lhs tensor device Cpu, rhs tensor device "
            "Cuda(0).",
        ),
    )
    assert headline(block).title.startswith("Matmul: the provided tensors are not on the same device")


def test_any_other_banner_gives_way_to_the_lines_under_it() -> None:
    report = (
        "\n==== Fusion Memory Report ====\n - Handles: 3\n - Streams: 1\n"
        "  - 0 => operations: 2 cursor: 4\n==============================\n"
    )
    assert headline(report) == Headline(
        "Fusion Memory Report: Handles: 3", ("Streams: 1", "0 => operations: 2 cursor: 4")
    )
    assert headline("------\nsomething broke\nat step 3") == Headline("something broke", ("at step 3",))
    assert headline("=== PANIC ===") == Headline("PANIC", ())


def test_a_message_without_a_banner_has_no_headline() -> None:
    for message in (
        "Can't differentiate avg pool 2d backward.",
        "assertion `left == right` failed\n  left: 1\n right: 2",
        "- Handles: 3\n- Streams: 1",
        "a -> b\n=== later ===",
        "",
    ):
        assert headline(message) is None


@given(st.text())
def test_headline_never_raises_and_keeps_to_one_line_titles(text: str) -> None:
    found = headline(text)
    if found is not None:
        assert found.title and "\n" not in found.title
        assert all(detail and "\n" not in detail for detail in found.details)
