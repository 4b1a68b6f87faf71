"""Answer cards: what they carry for an analysed seed and for a bare record, and their markdown."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from bot.card import (
    MAX_DETAIL_CHARS,
    MAX_DETAILS,
    NO_ANALYSIS,
    Card,
    build_card,
    card_json,
    render_markdown,
    reported_in,
    reported_label,
)
from bot.lookup import PanicLookup
from bot.matcher import Match
from bot.records import Record, default_catalog, parse_catalog_text
from tests.support.cards import REPORTED_LABEL, REPORTED_PASTE, REPORTED_URL
from tests.support.catalogs import seeds_catalog

AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward."
)
SEED_VERSION = "2026-09-12T17:17:11.597Z"

# The first line of tests/fixtures/burn-panics.jsonl: a catalogued site without analysis.
BASELINE_LINE = {
    "record": {
        "id": "fb80024af605b1bf",
        "repo": "tracel-ai/burn",
        "slug": "node-is-not-in-the-backward-states",
        "errorCode": None,
        "errorMessage": "Node {node_id:?} is not in the backward_states. ",
        "messagePattern": "Node (.+?) is not in the backward_states\\. ",
        "errorType": "panic",
        "errorClass": None,
        "httpStatus": None,
        "severity": "error",
        "filePath": "crates/burn-autodiff/src/checkpoint/base.rs",
        "lineNumber": 84,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "githubUrl": (
            "https://github.com/tracel-ai/burn/blob/2c06be351006851d42fdb6df16b976f4a82d9747/"
            "crates/burn-autodiff/src/checkpoint/base.rs#L84"
        ),
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": [],
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": ["rust", "burn", "burn-autodiff", "autodiff", "panic"],
        "backgroundTag": "explicit-panic",
        "analyzedSha": "2c06be351006851d42fdb6df16b976f4a82d9747",
        "analyzedAt": "2026-08-21T20:08:45.000Z",
        "contentChangedAt": "2026-08-21T20:08:45.000Z",
        "schemaVersion": 2,
    },
    "datasetVersion": "2026-08-21T20:08:45.000Z",
}
BASELINE_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/checkpoint/base.rs:84:9:\n"
    "Node NodeId { value: 3 } is not in the backward_states.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)

SECTION_HEADINGS = (
    "**What it means:**",
    "**When it happens:**",
    "**Solutions:**",
    "**Example fix:**",
    "**Prevention:**",
)


@pytest.fixture(scope="module")
def seeds() -> PanicLookup:
    return PanicLookup(seeds_catalog())


@pytest.fixture(scope="module")
def avg_pool_card(seeds: PanicLookup) -> Card:
    result = seeds.lookup(AVG_POOL_PASTE)
    assert result.best is not None
    assert result.best.record.id == AVG_POOL_ID
    card = seeds.card(result)
    assert card is not None
    return card


@pytest.fixture(scope="module")
def baseline_card() -> Card:
    catalog = parse_catalog_text(json.dumps(BASELINE_LINE) + "\n", "baseline.jsonl")
    assert catalog.errors == []
    service = PanicLookup(catalog)
    card = service.card(service.lookup(BASELINE_PASTE))
    assert card is not None
    return card


def seed_record(seeds: PanicLookup, record_id: str = AVG_POOL_ID):
    return next(record for record in seeds.catalog.records if record.id == record_id)


# --- an analysed seed ------------------------------------------------------------------------------------


def test_card_title_is_the_pasted_message(avg_pool_card: Card) -> None:
    assert avg_pool_card.record_id == AVG_POOL_ID
    assert avg_pool_card.title == "Can't differentiate avg pool 2d backward."
    assert avg_pool_card.catalog_message == "Can't differentiate avg pool 2d backward."


def test_card_title_keeps_the_pasted_values_not_the_catalog_placeholders() -> None:
    catalog = parse_catalog_text(json.dumps(BASELINE_LINE) + "\n", "baseline.jsonl")
    service = PanicLookup(catalog)
    card = service.card(service.lookup(BASELINE_PASTE))
    assert card is not None
    assert card.title == "Node NodeId { value: 3 } is not in the backward_states."
    assert card.catalog_message == "Node {node_id:?} is not in the backward_states. "


def test_card_for_typed_words_is_titled_with_the_catalogued_message(seeds: PanicLookup) -> None:
    result = seeds.lookup("avg pool 2d backward")
    card = seeds.card(result)
    assert card is not None
    assert card.record_id == AVG_POOL_ID
    assert card.title == "Can't differentiate avg pool 2d backward."


def test_card_carries_the_analysis(seeds: PanicLookup, avg_pool_card: Card) -> None:
    record = seed_record(seeds)
    assert record.documentation is not None
    assert avg_pool_card.cause == record.documentation
    assert avg_pool_card.cause.startswith("The autodiff backend does not implement the backward pass")
    assert record.triggerScenarios is not None
    assert record.commonSituations is not None
    assert avg_pool_card.when == f"{record.triggerScenarios} {record.commonSituations}"
    assert avg_pool_card.solutions == record.solutions
    assert len(avg_pool_card.solutions) == 4
    assert avg_pool_card.example_fix == record.exampleFix
    assert avg_pool_card.example_fix_language == "rust"
    assert avg_pool_card.prevention_tips == record.preventionTips
    assert len(avg_pool_card.prevention_tips) == 3
    assert avg_pool_card.has_analysis


def test_card_carries_source_tags_version_and_confidence(seeds: PanicLookup, avg_pool_card: Card) -> None:
    assert seed_record(seeds).githubUrl.endswith("crates/burn-autodiff/src/ops/module.rs#L1480-L1516")
    assert avg_pool_card.source_url == seed_record(seeds).githubUrl.replace("#L1480-L1516", "#L1498")
    assert avg_pool_card.source_label == "crates/burn-autodiff/src/ops/module.rs:1498"
    assert avg_pool_card.tags == ("rust", "autodiff", "unimplemented", "backward-pass")
    assert avg_pool_card.dataset_version == SEED_VERSION
    result = seeds.lookup(AVG_POOL_PASTE)
    assert result.best is not None
    assert avg_pool_card.confidence == result.best.confidence
    assert 0.9 <= avg_pool_card.confidence <= 1.0


def test_card_summary_is_one_line(avg_pool_card: Card) -> None:
    summary = avg_pool_card.summary
    assert "\n" not in summary
    assert summary.startswith(
        "Can't differentiate avg pool 2d backward. (crates/burn-autodiff/src/ops/module.rs:1498): "
    )
    assert summary.endswith(avg_pool_card.cause)


def test_card_is_frozen(avg_pool_card: Card) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        avg_pool_card.title = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        avg_pool_card.confidence = 0.0  # type: ignore[misc]


def test_no_card_when_nothing_is_known(seeds: PanicLookup) -> None:
    result = seeds.lookup(
        "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds: the len is 3 but the index is 7"
    )
    assert result.best is None
    assert seeds.card(result) is None


# --- a record without analysis ---------------------------------------------------------------------------


def test_card_without_analysis_says_so_and_links_the_source(baseline_card: Card) -> None:
    assert baseline_card.record_id == "fb80024af605b1bf"
    assert not baseline_card.has_analysis
    assert baseline_card.cause == NO_ANALYSIS
    assert baseline_card.when == ""
    assert baseline_card.solutions == ()
    assert baseline_card.example_fix == ""
    assert baseline_card.prevention_tips == ()
    assert baseline_card.source_url == BASELINE_LINE["record"]["githubUrl"]
    assert baseline_card.source_label == "crates/burn-autodiff/src/checkpoint/base.rs:84"
    assert baseline_card.dataset_version == "2026-08-21T20:08:45.000Z"


def test_markdown_without_analysis_has_no_empty_sections(baseline_card: Card) -> None:
    text = render_markdown(baseline_card)
    assert f"**What it means:** {NO_ANALYSIS}" in text
    for heading in SECTION_HEADINGS[1:]:
        assert heading not in text
    assert "```" not in text
    assert f"Source: [{baseline_card.source_label}]({baseline_card.source_url})" in text
    assert "\n\n\n" not in text
    assert not re.search(r"^\s*(\d+\.|-)\s*$", text, flags=re.MULTILINE)


# --- markdown --------------------------------------------------------------------------------------------


def test_markdown_has_the_sections_in_order(avg_pool_card: Card) -> None:
    text = render_markdown(avg_pool_card)
    assert text.startswith("**Can't differentiate avg pool 2d backward.**\n")
    positions = [text.index(heading) for heading in SECTION_HEADINGS]
    assert positions == sorted(positions)
    context = text.rstrip("\n").splitlines()[-1]
    assert context.startswith(
        "Source: [crates/burn-autodiff/src/ops/module.rs:1498](https://github.com/tracel-ai/burn/blob/"
    )
    assert "Tags: rust, autodiff, unimplemented, backward-pass" in context
    assert f"Data set {SEED_VERSION}" in context
    assert context.endswith(f"Confidence {int(avg_pool_card.confidence * 100)}%")
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


def test_markdown_numbers_solutions_and_bullets_tips(avg_pool_card: Card) -> None:
    text = render_markdown(avg_pool_card)
    for number, solution in enumerate(avg_pool_card.solutions, start=1):
        assert f"\n{number}. {solution}\n" in text
    for tip in avg_pool_card.prevention_tips:
        assert f"\n- {tip}\n" in text
    when_line = next(line for line in text.splitlines() if line.startswith("**When it happens:**"))
    assert when_line == f"**When it happens:** {avg_pool_card.when}"


def test_markdown_fences_the_example_fix_as_rust(avg_pool_card: Card) -> None:
    text = render_markdown(avg_pool_card)
    block = f"**Example fix:**\n```rust\n{avg_pool_card.example_fix}\n```\n"
    assert block in text
    assert text.count("```") == 2


def test_markdown_uses_a_longer_fence_when_the_example_contains_a_fence(avg_pool_card: Card) -> None:
    example = "// in the docs:\n```\nlet y = x.avg_pool2d();\n```"
    text = render_markdown(dataclasses.replace(avg_pool_card, example_fix=example))
    assert f"**Example fix:**\n````rust\n{example}\n````\n" in text
    # The inner fence never closes the block early: no line is exactly the opening fence.
    assert "```rust" not in text.replace("````rust", "")


def test_markdown_fence_is_longer_than_any_backtick_run_in_the_example(avg_pool_card: Card) -> None:
    example = "````md\n```rust\nlet y = x;\n```\n````"
    text = render_markdown(dataclasses.replace(avg_pool_card, example_fix=example))
    lines = text.splitlines()
    opening = lines[lines.index("**Example fix:**") + 1]
    fence = opening.removesuffix("rust")
    assert set(fence) == {"`"}
    assert len(fence) > 4


def test_markdown_without_source_or_version_still_ends_with_confidence(avg_pool_card: Card) -> None:
    card = dataclasses.replace(avg_pool_card, source_url="", source_label="", tags=(), dataset_version="")
    context = render_markdown(card).rstrip("\n").splitlines()[-1]
    assert context == f"Confidence {int(card.confidence * 100)}%"
    label_only = dataclasses.replace(avg_pool_card, source_url="")
    context = render_markdown(label_only).rstrip("\n").splitlines()[-1]
    # Without a URL the label is shown as plain text, never as a link to nowhere.
    assert "crates/burn-autodiff/src/ops/module.rs:1498 · Tags:" in context
    assert "](" not in context


def test_a_capped_confidence_never_reads_as_certain() -> None:
    from bot.card import confidence_percent

    assert confidence_percent(0.995) == "99%"
    assert confidence_percent(1.0) == "100%"
    assert confidence_percent(0.5) == "50%"


def test_every_record_of_the_shared_catalog_gets_a_useful_card() -> None:
    from bot.card import build_card
    from bot.matcher import Match
    from bot.records import load_catalog
    from tests.support.pastes import shared_data_dir

    catalog = load_catalog([shared_data_dir() / "burn-panics.jsonl"])
    assert len(catalog.entries) == 1199
    for entry in catalog.entries:
        match = Match(entry.record, 50.0, 0.9, (), 0, True, 0)
        card = build_card(match, None, entry.dataset_version)
        text = render_markdown(card)
        assert card.title and card.cause and card.source_label and card.source_url
        assert entry.record.filePath in text
        assert "****" not in text and "\n\n\n" not in text


def test_a_record_whose_analysis_describes_another_error_is_under_review() -> None:
    """Seed 5c5da467: the message is deform conv 2d backward, the analysis is q_to_device on the router."""
    from bot.card import UNDER_REVIEW
    from bot.lookup import PanicLookup

    service = PanicLookup(seeds_catalog())
    assert service.under_review == frozenset({"5c5da46720dbbf10"})
    result = service.lookup(
        "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
        "Can't differentiate deform conv 2d backward."
    )
    card = service.card(result)
    assert card is not None and card.record_id == "5c5da46720dbbf10"
    assert card.under_review and not card.has_analysis
    assert card.cause == UNDER_REVIEW
    assert (card.when, card.solutions, card.example_fix, card.prevention_tips, card.tags) == (
        "",
        (),
        "",
        (),
        (),
    )
    text = render_markdown(card)
    assert "q_to_device" not in text and "BackendRouter" not in text
    assert "crates/burn-autodiff/src/ops/module.rs:915" in text
    healthy = service.card_for_record("8d1d2fa6df3880bd", 0.9)
    assert healthy is not None and healthy.has_analysis and not healthy.under_review


# --- a message opened by a banner ---------------------------------------------------------------------------

RESHAPE_MESSAGE = (
    "The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: {:?}, target shape: {:?}."
)
RESHAPE_BLOCK = (
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: [2, 3], target shape: [4, 2]. \n"
)


def reshape_match() -> Match:
    record = Record(
        id="reshape",
        errorMessage=RESHAPE_MESSAGE,
        filePath="crates/burn-tensor/src/tensor/api/check.rs",
        lineNumber=156,
        githubUrl="https://github.com/tracel-ai/burn/blob/v0.19.0/crates/burn-tensor/src/tensor/api/check.rs#L156",
    )
    return Match(record, 90.0, 0.99, (), 0, True, 0)


def test_a_tensor_check_is_titled_by_its_operation_and_reason_and_shows_the_pasted_values() -> None:
    card = build_card(reshape_match(), RESHAPE_BLOCK)
    assert (
        card.title
        == "Reshape: the given shape doesn't have the same number of elements as the current tensor"
    )
    assert card.details == ("Current shape: [2, 3], target shape: [4, 2].",)
    text = render_markdown(card)
    assert text.startswith(
        f"**{card.title}**\n\n**Details:** `Current shape: [2, 3], target shape: [4, 2].`\n"
    )
    assert "=== Tensor Operation Error ===" not in text


def test_details_are_redacted_bounded_and_listed_when_several() -> None:
    secret = "ghp_" + "a" * 36
    block = "=== Report ===\nfirst line\n" + "".join(f"value {n}: token {secret}\n" for n in range(40))
    card = build_card(reshape_match(), block)
    assert card.title == "Report: first line"
    assert 1 <= len(card.details) <= MAX_DETAILS
    assert all(secret not in detail and len(detail) <= MAX_DETAIL_CHARS for detail in card.details)
    text = render_markdown(card)
    assert "**Details:**\n- `value 0: token " in text


def test_a_message_without_a_banner_keeps_its_first_line_as_title_and_has_no_details() -> None:
    card = build_card(reshape_match(), "Current shape: [2, 3]\nmore text")
    assert (card.title, card.details) == ("Current shape: [2, 3]", ())
    assert "Details" not in render_markdown(card)


def test_the_link_of_a_card_without_a_site_points_at_the_line_it_names(avg_pool_card: Card) -> None:
    # The analysed record links a range around its line: the card names one line, the link too.
    assert avg_pool_card.source_label.endswith(":1498")
    assert avg_pool_card.source_url.endswith("/crates/burn-autodiff/src/ops/module.rs#L1498")


# --- where the error was reported --------------------------------------------------------------------------


def test_reports_keep_linkable_urls_once_and_at_most_three() -> None:
    record = Record.model_validate(
        {
            "id": "r1",
            "errorMessage": "boom",
            "reportedIn": [
                "https://github.com/tracel-ai/burn/issues/1",
                "javascript:alert(1)",
                "https://github.com/tracel-ai/burn/issues/1",
                "https://e.x/a b",
                "https://e.x/a)[x](https://evil",
                "https://github.com/tracel-ai/cubecl/pull/2",
                "https://github.com/tracel-ai/burn/discussions/3",
                "https://github.com/tracel-ai/burn/issues/4",
            ],
        }
    )
    assert reported_in(record) == (
        "https://github.com/tracel-ai/burn/issues/1",
        "https://github.com/tracel-ai/cubecl/pull/2",
        "https://github.com/tracel-ai/burn/discussions/3",
    )
    assert reported_in(Record.model_validate({"id": "r2", "errorMessage": "x", "reportedIn": "nope"})) == ()


def test_a_report_reads_as_owner_repo_number_for_a_github_thread() -> None:
    assert reported_label("https://github.com/tracel-ai/burn/issues/4950") == "tracel-ai/burn#4950"
    pull = "https://github.com/tracel-ai/burn/pull/4984#issuecomment-1"
    assert reported_label(pull) == "tracel-ai/burn#4984"
    assert reported_label("https://github.com/a/b/discussions/7") == "a/b#7"
    assert reported_label("https://users.rust-lang.org/t/burn/123/") == "users.rust-lang.org/t/burn/123"


def test_a_card_written_for_its_record_says_where_it_was_reported() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(REPORTED_PASTE))
    assert card is not None and card.analysis == "record"
    assert card.reported_in[0] == REPORTED_URL
    assert f"**Reported in:** [{REPORTED_LABEL}]({REPORTED_URL})" in render_markdown(card)
    assert card_json(card)["reported_in"][0] == {"label": REPORTED_LABEL, "url": REPORTED_URL}


def test_a_card_without_reports_has_no_reported_line(avg_pool_card: Card) -> None:
    assert avg_pool_card.reported_in == ()
    assert "Reported in" not in render_markdown(avg_pool_card)
    assert card_json(avg_pool_card)["reported_in"] == []


def test_analyses_are_judged_when_their_card_is_made_not_at_start_up() -> None:
    """Reading every analysis for `analysis_is_suspect` cost ~50 ms of each cold start with 700 of them:
    a record is judged when its card is made, and the whole set only when it is asked for."""
    service = PanicLookup(seeds_catalog())
    assert service._under_review is None and service._reviewed == {}
    deform = (
        "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
        "Can't differentiate deform conv 2d backward."
    )
    card = service.card(service.lookup(deform))
    assert card is not None and card.under_review
    assert service._reviewed == {"5c5da46720dbbf10": True}
    assert service.under_review == frozenset({"5c5da46720dbbf10"})
