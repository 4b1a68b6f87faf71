"""Which analysis a card shows (its record's, its family's, none), said on the card and in its data."""

from __future__ import annotations

import json

import pytest

from bot.card import NO_ANALYSIS, card_json, render_markdown, unfenced
from bot.families import FAMILY_NOTE
from bot.lookup import PanicLookup
from bot.records import default_catalog

CHECKPOINTER = (
    "thread 'main' panicked at crates/burn-train/src/checkpoint/async_checkpoint.rs:86:14:\n"
    "Can send message to checkpointer thread.: SendError { .. }\n"
)
# A follow-on panic with no analysis of its own: its family's text.
CHECKPOINTER_STOP = (
    "thread 'main' panicked at crates/burn-train/src/learner/supervised/strategies/ddp/strategy.rs:155:14:\n"
    "worker reaper thread disconnected unexpectedly: RecvError\n"
)
AVG_POOL = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
)


@pytest.fixture(scope="module")
def service() -> PanicLookup:
    return PanicLookup(default_catalog())


def test_a_record_without_analysis_gets_its_family_s_text_and_says_so(service: PanicLookup) -> None:
    result = service.lookup(CHECKPOINTER_STOP)
    card = service.card(result)
    assert card is not None and card.record_id == result.best.record.id  # type: ignore[union-attr]
    assert card.analysis == "family:follow-on" and card.has_analysis
    assert card.analysis_note == f"{FAMILY_NOTE} (Follow-on panic (look for the first one))."
    assert "echo" in card.cause and "burn-train" in card.cause
    assert card.solutions and card.example_fix and card.example_fix_language == "sh"
    text = render_markdown(card)
    assert FAMILY_NOTE in text and "```sh" in text and "```rust" not in text


def test_a_written_analysis_wins_and_a_record_of_no_family_says_there_is_none(service: PanicLookup) -> None:
    written = service.card(service.lookup(AVG_POOL))
    assert written is not None and written.analysis == "record" and not written.analysis_note
    bare = next(r for r in service.catalog.records if not r.has_analysis and service.family(r) is None)
    card = service.card_for_record(bare.id, 0.5)
    assert card is not None and card.analysis == "none" and card.cause == NO_ANALYSIS
    assert not card.has_analysis and FAMILY_NOTE not in render_markdown(card)


def test_the_card_as_data_is_what_the_chat_cards_show(service: PanicLookup) -> None:
    result = service.lookup(CHECKPOINTER)
    data = service.answer_json(result)
    card = data["card"]
    assert card["analysis"] == "record"  # the commonest real paste has an analysis written for it
    assert card["reported_in"][0]["label"] == "tracel-ai/burn#2754"
    assert card["solutions"] and card["exampleFix"] and card["preventionTips"]
    assert card["site"] == data["site"] and card["site"]["file"].endswith("async_checkpoint.rs")
    shown = service.card(result)
    history = service.history_json(shown.record_id) if shown is not None else None
    assert shown is not None and card == json.loads(json.dumps(card_json(shown, data["site"], history)))
    # The checkpointer's send changed form at burn-train 0.20.0: the history dates it.
    assert [change["version"] for change in card["history"]["condition_changes"]][:1] == ["0.20.0"]
    no_answer = service.answer_json(service.lookup("thread 'main' panicked at src/x.rs:1:1:\nzzqx qqzx\n"))
    assert no_answer["card"] is None


def test_one_fenced_example_is_its_code_and_language() -> None:
    assert unfenced("```sh\nRUST_BACKTRACE=1 cargo run\n```") == ("RUST_BACKTRACE=1 cargo run", "sh")
    assert unfenced("let x = 1;") == ("let x = 1;", "rust")
    mixed = "// before\n```sh\ncargo test\n```\n// after\n```sh\ncargo test -- --nocapture\n```"
    assert unfenced(mixed) == (mixed, "rust")


def test_an_older_release_s_card_first_says_which_release_and_commit_took_the_message_out(
    service: PanicLookup,
) -> None:
    registry = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
    old = f"thread 'main' panicked at {registry}/burn-import-0.20.0-pre.3/src/burn/node/sign.rs:39:18:\n"
    data = service.answer_json(service.lookup(old + "Expected Sign node\n"))
    site, card = data["site"], data["card"]
    assert site["in_pasted_release"] is True and site["gone_since"] == "0.20.0-pre.4"
    removal = service.catalog.releases.removal(service.lookup(old + "Expected Sign node\n").best.record.id)  # type: ignore[union-attr]
    assert removal is not None and removal.pull_request is not None
    assert site["upgrade"].startswith("Upgrade to burn-import 0.20.0-pre.4 or later")
    assert removal.commit in site["upgrade"] and removal.subject in site["upgrade"]
    assert card["solutions"][0] == site["upgrade"]
    assert removal.commit in site["note"]
    # A release that does not raise it gets no upgrade advice.
    other = old.replace("0.20.0-pre.3", "0.20.0-pre.2")
    assert service.answer_json(service.lookup(other + "Expected Sign node\n"))["site"]["upgrade"] is None


def test_a_message_that_moved_to_another_file_gets_no_upgrade_advice(service: PanicLookup) -> None:
    # burn-core 0.19.0 took the Kaiming check out of nn/initializer.rs, and module/initializer.rs raises the
    # same words from then on: an upgrade would not take the panic away.
    registry = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
    paste = (
        f"thread 'main' panicked at {registry}/burn-core-0.18.0/src/nn/initializer.rs:200:23:\n"
        "Can't use Kaiming initialization without specifying fan. Use init_with method.\n"
    )
    result = service.lookup(paste)
    data = service.answer_json(result)
    site, card = data["site"], data["card"]
    assert site["in_pasted_release"] is True and site["gone_since"] == "0.19.0"
    assert site["upgrade"] is None
    assert "`crates/burn-core/src/module/initializer.rs` (burn-core)" in site["note"]
    assert "an upgrade may not take it away" in site["note"]
    assert not any(solution.startswith("Upgrade to") for solution in card["solutions"])
    moved = service.same_message_ids(result.best.record.id)  # type: ignore[union-attr]
    message = result.best.record.errorMessage  # type: ignore[union-attr]
    assert moved and all(service.record(other).errorMessage == message for other in moved)  # type: ignore[union-attr]


def test_a_message_that_moved_to_another_repository_gets_no_upgrade_advice(service: PanicLookup) -> None:
    # burn-wgpu's runtime moved to cubecl at 0.14: cubecl-wgpu prints the same words from then on.
    registry = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
    paste = (
        f"thread 'main' panicked at {registry}/burn-wgpu-0.13.2/src/runtime.rs:279:10:\n"
        "No adapter found for graphics API AutoGraphicsApi\n"
    )
    site = service.answer_json(service.lookup(paste))["site"]
    assert site["in_pasted_release"] is True and site["upgrade"] is None
    assert "`crates/cubecl-wgpu/src/runtime.rs` (cubecl-wgpu, tracel-ai/cubecl)" in site["note"]


def test_the_families_are_read_when_a_card_first_needs_them() -> None:
    lookup = PanicLookup(default_catalog())
    assert lookup._families is None  # start-up pays nothing for them
    assert lookup.card(lookup.lookup(CHECKPOINTER_STOP)) is not None
    assert lookup._families is not None and lookup._families.families


def test_a_card_with_its_own_analysis_never_reads_the_families() -> None:
    lookup = PanicLookup(default_catalog())
    card = lookup.card(lookup.lookup(AVG_POOL))
    assert card is not None and card.analysis == "record" and lookup._families is None
