"""What the release a paste reveals does to the answer and its site, on the embedded catalog: shapes seen in
real pastes of public Burn issues (several sites of one message in a file, a checkout between releases, a
cause mangled by a progress bar before its echo, a dependency release the catalog lacks, a short pattern
from another file)."""

from __future__ import annotations

import re

import pytest

from bot.lookup import PanicLookup
from bot.records import default_catalog

REGISTRY = "/home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
CHECKOUT = "/home/dev/.cargo/git/checkouts/burn-6c277d792b0d5d7a"
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"


@pytest.fixture(scope="module")
def service() -> PanicLookup:
    return PanicLookup(default_catalog())


def paste(location: str, message: str) -> str:
    return f"thread 'main' panicked at {location}:\n{message}\n{NOTE}\n"


def test_a_message_raised_at_three_lines_answers_with_the_pasted_one(service: PanicLookup) -> None:
    result = service.lookup(
        paste(f"{REGISTRY}/onnx-ir-0.20.0/src/node/padding.rs:136:9", "Asymmetric padding is not supported")
    )
    site = service.site(result)
    assert result.best is not None and result.best.record.filePath == "crates/onnx-ir/src/node/padding.rs"
    assert site is not None
    assert (site.version, site.line, site.function) == ("0.20.0", 136, "padding_config_2d")
    assert site.in_pasted_release is True
    assert site.url is not None and "/blob/v0.20.0/" in site.url and site.url.endswith("#L136")


def test_a_checkout_between_releases_shows_the_release_whose_line_it_is(service: PanicLookup) -> None:
    # 1f5ccd4 is no harvested release: the pasted line is that of v0.18.0 (the newest has it at 1139).
    result = service.lookup(
        paste(
            f"{CHECKOUT}/1f5ccd4/crates/onnx-ir/src/from_onnx.rs:377:13", "Nodes are not topologically sorted"
        )
    )
    site = service.site(result)
    assert site is not None
    assert (site.version, site.line) == ("0.18.0", 377)
    assert site.in_pasted_release is None
    assert "names no release" in site.note
    # A release the catalog does not hold is no reason to doubt a whole message matched in its file.
    assert result.auto_reply is True


def test_a_cause_at_an_exact_site_is_answered_before_its_echo(service: PanicLookup) -> None:
    mangled = "[00:01:02] ███████░░ 9996/10000 == PANIC ===handle for tensor TensorId { value: 12 }"
    text = paste(f"{REGISTRY}/burn-tensor-0.16.0/src/repr/handle.rs:73:9", mangled) + paste(
        "src/train.rs:88:14",
        "Can send message to checkpointer thread.: SendError { .. }",
    )
    result = service.lookup(text)
    assert result.answer_panic == 0
    assert result.best is not None and result.best.record.filePath == "crates/burn-tensor/src/repr/handle.rs"
    assert result.auto_reply is False


def test_an_echo_answered_for_want_of_a_cause_is_never_posted_unasked(service: PanicLookup) -> None:
    text = paste("src/main.rs:104:25", "batch loader failed") + paste(
        "src/main.rs:109:44", "called `Result::unwrap()` on an `Err` value: PoisonError { .. }"
    )
    result = service.lookup(text)
    assert result.best is not None and result.best.record.slug == "result-unwrap-poison-error"
    assert result.panics[result.answer_panic or 0].follow_on
    assert result.auto_reply is False


def test_a_dependency_release_the_catalog_lacks_is_said(service: PanicLookup) -> None:
    result = service.lookup(
        paste(f"{REGISTRY}/wgpu-25.0.2/src/backend/wgpu_core.rs:1410:26", "wgpu error: Validation Error")
    )
    site = service.site(result)
    assert result.best is not None and result.best.record.has_analysis
    assert site is not None and "wgpu 25.0.2 is not in the catalog" in site.note
    assert site.function is None  # v22.1.0's lines would name another function
    assert result.auto_reply is False


def test_a_short_pattern_from_another_file_is_not_the_answer(service: PanicLookup) -> None:
    message = (
        "assertion `left == right` failed: Autodiff context mismatch: all tensors must share a context\n"
        "  left: Disabled\n right: Enabled"
    )
    result = service.lookup(paste("src/model.rs:11:1", message))
    assert result.best is None or result.best.record.repo != "gfx-rs/wgpu"
    assert result.auto_reply is False


def test_a_relayed_message_without_a_location_answers_with_the_current_record(service: PanicLookup) -> None:
    text = (
        "panicked at crates/burn-fusion/src/client.rs:200:14:\n"
        "called `Result::unwrap()` on an `Err` value: CallError(task panicked on device\n"
        "runner thread: Should have handle for tensor TensorId { value: 3584 })\n"
    )
    result = service.lookup(text)
    assert result.best is not None
    assert result.panics[result.answer_panic or 0].kind == "relayed"
    assert result.best.record.filePath == "crates/burn-ir/src/handle.rs"
    assert service.releases.gone_since(result.best.record.id) is None


# ---- one line number per site: "Where", the source text and the link -------------------------------------

RESHAPE_BLOCK = (
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: [2, 3], target shape: [4, 2]. \n"
)
FLEX_MODULE = "crates/burn-flex/src/ops/module.rs"
FLEX_MESSAGE = "deform_conv2d_backward: unsupported dtype I32"


@pytest.mark.parametrize(
    ("location", "message", "line"),
    [
        # burn-tensor 0.17.0 has the check at line 159; the record's own line (the newest release's) is 156.
        (f"{REGISTRY}/burn-tensor-0.17.0/src/tensor/api/check.rs:1448:17", RESHAPE_BLOCK, 159),
        # The demo paste: burn-autodiff 0.19.0 raises it at 1333; the analysed record was read at 1498.
        (
            f"{REGISTRY}/burn-autodiff-0.19.0/src/ops/module.rs:1333:9",
            "Can't differentiate avg pool 2d backward.",
            1333,
        ),
        # A checkout of a harvested commit (2c06be3 has it at 241; the analysed record says 243).
        (f"{CHECKOUT}/2c06be3/{FLEX_MODULE}:243:22", FLEX_MESSAGE, 241),
        # A checkout of no harvested commit, at the line every harvested release has.
        (f"{CHECKOUT}/d16f7ba/{FLEX_MODULE}:241:22", FLEX_MESSAGE, 241),
    ],
    ids=["tensor-check-0.17.0", "demo-0.19.0", "checkout-2c06be3", "checkout-d16f7ba"],
)
def test_a_card_names_one_line_in_where_source_and_link(
    service: PanicLookup, location: str, message: str, line: int
) -> None:
    result = service.lookup(paste(location, message))
    card = service.card(result)
    site = service.site(result)
    assert card is not None and site is not None
    assert site.line == line
    assert re.search(rf"\.rs:{line}\b", card.where), card.where
    assert card.source_label.endswith(f".rs:{line}"), card.source_label
    assert card.source_url.endswith(f".rs#L{line}"), card.source_url
    # The release "Where" names is the one the link is at.
    assert site.version is not None and site.version in card.where


def test_a_catch_all_arm_fires_when_its_scrutinee_is_none_of_the_arms_before(service: PanicLookup) -> None:
    result = service.lookup(paste(f"{REGISTRY}/burn-flex-0.21.0/src/ops/module.rs:241:22", FLEX_MESSAGE))
    card = service.card(result)
    assert card is not None and card.record_id == "d59d5538758c7e08"
    assert card.fires_when == "x.dtype() is not one of DType::F32, DType::F16, DType::BF16, DType::F64"
