"""Slack rendering: every message is valid Block Kit within Slack's limits, escaped, showing what it must."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from typing import Any

import pytest
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block, HeaderBlock, SectionBlock

from adapters.slack.render import (
    ACTION_FULL_FIX,
    ACTION_MORE,
    ACTION_SHARE,
    ACTION_VOTE_DOWN,
    ACTION_VOTE_UP,
    ActionValue,
    SlackMessage,
    card_message,
    error_message,
    escape_mrkdwn,
    more_matches_message,
    no_match_message,
    parse_action_value,
    usage_message,
)
from bot.card import NO_ANALYSIS, Card, build_card
from bot.extract import Location, Panic
from bot.lookup import PanicLookup
from bot.matcher import LookupResult, Match
from bot.records import Catalog, Record, load_catalog
from tests.support.catalogs import seeds_catalog
from tests.support.pastes import RECORDS_FILE, shared_data_dir

AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward."
)
UNKNOWN_PASTE = (
    "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds: the len is 3 but the index is 7"
)
MAX_CHARS = 12_000
# Links and mentions the renderer builds on purpose; any other `<` or `>` is unescaped text.
SLACK_MARKUP = re.compile(r"<(?:https?://[^<>|\s]+\|[^<>]*|@[UW][A-Z0-9]+)>")
BARE_AMPERSAND = re.compile(r"&(?!amp;|lt;|gt;)")


# -- checks every message must pass -------------------------------------------------------------------


def texts(message: SlackMessage) -> list[str]:
    """Every text of the blocks: header, sections, context elements, button labels."""
    found: list[str] = []
    for block in message.blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        for element in block.get("elements", []):
            found.append(element["text"] if element["type"] in {"mrkdwn", "plain_text"} else "")
            if element["type"] == "button":
                found.append(element["text"]["text"])
    return found


def sections(message: SlackMessage) -> list[str]:
    return [block["text"]["text"] for block in message.blocks if block["type"] == "section"]


def buttons(message: SlackMessage) -> dict[str, dict[str, Any]]:
    return {
        element["action_id"]: element
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    }


def assert_valid(message: SlackMessage) -> None:
    """Slack's limits, checked by the SDK on a re-parse and here for what the SDK does not check."""
    assert isinstance(message, SlackMessage)
    assert message.text.strip()
    assert len(message.text) <= 300
    assert 0 < len(message.blocks) < 50
    assert len(json.dumps(message.blocks)) <= MAX_CHARS
    for block in message.blocks:
        parsed = Block.parse(block)
        assert parsed is not None
        assert type(parsed) is not Block, f"unknown block type {block.get('type')}"
        parsed.validate_json()
        assert parsed.to_dict() == block
        if block["type"] == "header":
            assert 0 < len(block["text"]["text"]) <= HeaderBlock.text_max_length
        if block["type"] == "section":
            assert 0 < len(block["text"]["text"]) <= SectionBlock.text_max_length
            # An odd number of fences leaves a code block open and swallows the rest of the card.
            assert block["text"]["text"].count("```") % 2 == 0
        for element in block.get("elements", []):
            if element["type"] in {"mrkdwn", "plain_text"}:
                assert 0 < len(element["text"]) <= 3_000
        if block["type"] == "actions":
            action_ids = [element["action_id"] for element in block["elements"]]
            assert len(action_ids) == len(set(action_ids))


def assert_escaped(message: SlackMessage) -> None:
    """No `<`, `>` or bare `&` outside the links and mentions built on purpose."""
    for text in [message.text, *texts(message)]:
        stripped = SLACK_MARKUP.sub("", text)
        assert "<" not in stripped, text
        assert ">" not in stripped.replace("\n>", "\n"), text  # a leading `>` quotes a line
        assert not BARE_AMPERSAND.search(text), text


# -- cards to render ----------------------------------------------------------------------------------


def catalog_cards(catalog: Catalog) -> list[Card]:
    return [
        build_card(Match(entry.record, 100.0, 0.99, (), 0, True, index), None, entry.dataset_version)
        for index, entry in enumerate(catalog.entries)
    ]


@pytest.fixture(scope="module")
def seeds() -> PanicLookup:
    return PanicLookup(seeds_catalog())


@pytest.fixture(scope="module")
def avg_pool(seeds: PanicLookup) -> Card:
    result = seeds.lookup(AVG_POOL_PASTE)
    card = seeds.card(result)
    assert card is not None
    assert card.record_id == AVG_POOL_ID
    return card


def standin(fix: str) -> str:
    """What a fix looks like once no run of three or more backticks can close the code block."""
    return re.sub(r"`{3,}", lambda run: "ʼ" * len(run.group()), fix)


def big_fix(lines: int = 141) -> str:
    """About 10,000 characters of Rust with fences, backtick runs and generics inside."""
    body = [
        f"let value_{n} = tensor.clone().reshape([{n}, 4]); // step {n:04d} of the fix" for n in range(lines)
    ]
    body[10] = "```rust"
    body[20] = "```"
    body[30] = 'let s = "````"; // `inline` code and ``double`` ticks'
    body[40] = "fn f<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> { x & y }"
    return "\n".join(["```", *body, "```"])


@pytest.fixture
def huge(avg_pool: Card) -> Card:
    """Far over every limit: a 20,000-character cause, 40 solutions of 500 and a 10,000-character fix."""
    card = dataclasses.replace(
        avg_pool,
        title="Tensor<B, 2> & friends: " + "very long title " * 30,
        cause="The cause & its <details> go on. " * 620,
        when="When <it> happens. " * 200,
        solutions=tuple(f"Solution {n}: " + "do the right thing " * 26 for n in range(40)),
        example_fix=big_fix(),
        prevention_tips=tuple(f"Tip {n} " + "x" * 300 for n in range(20)),
        tags=tuple(f"tag-{n}" for n in range(400)),
    )
    assert len(card.cause) >= 20_000
    assert all(len(s) >= 480 for s in card.solutions)
    assert len(card.example_fix) >= 10_000
    return card


def fix_code(message: SlackMessage) -> list[str]:
    """The code shown in the example-fix sections, unescaped."""
    found = []
    for text in sections(message):
        if text.startswith("*Example fix*"):
            match = re.search(r"\n```\n(.*)\n```", text, re.DOTALL)
            assert match, text
            found.append(html.unescape(match.group(1)))
    return found


def all_variants(card: Card) -> list[SlackMessage]:
    return [
        card_message(card, ephemeral=True, record_id=card.record_id),
        card_message(card, ephemeral=False, record_id=card.record_id, vote="down", shared_by="U0123ABCD"),
        card_message(card, ephemeral=True, record_id=card.record_id, vote="up", full_fix=True),
    ]


def test_the_checks_catch_invalid_blocks(avg_pool: Card) -> None:
    """The SDK validation the renderer and these tests rely on does reject what Slack would."""
    with pytest.raises(SlackObjectFormationError):
        HeaderBlock(text="x" * 151).to_dict()
    message = card_message(avg_pool, ephemeral=True, record_id="r")
    broken = dict(message.blocks[2], text={"type": "mrkdwn", "text": "x" * 3_001})
    with pytest.raises(SlackObjectFormationError):
        Block.parse(broken).validate_json()  # type: ignore[union-attr]
    with pytest.raises(SlackObjectFormationError):
        assert_valid(SlackMessage(message.text, [*message.blocks, broken]))
    with pytest.raises(AssertionError):
        assert_valid(SlackMessage(message.text, [{"type": "divider"}] * 50))
    # Each block valid on its own, together too big for one message.
    full = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2_900}}
    with pytest.raises(AssertionError):
        assert_valid(SlackMessage(message.text, [*message.blocks, *[full] * 4]))


# -- escaping -----------------------------------------------------------------------------------------


def test_escape_mrkdwn_uses_slacks_three_entities() -> None:
    assert escape_mrkdwn("a & b < c > d") == "a &amp; b &lt; c &gt; d"
    # Raw text is escaped once: an entity typed by the user stays visible as typed.
    assert escape_mrkdwn("&lt;") == "&amp;lt;"
    assert escape_mrkdwn("plain 'text' *bold*") == "plain 'text' *bold*"


def test_card_escapes_catalog_and_pasted_text(avg_pool: Card) -> None:
    card = dataclasses.replace(
        avg_pool,
        title="Tensor<B, 2> & <!channel>",
        cause="a < b && c > d",
        when="<@U999> when `x < 3`",
        solutions=("use <T> & co",),
        example_fix="if a < b && c > d { <B as Backend>::f() }",
        prevention_tips=("never <!here>",),
        tags=("a<b", "c&d"),
        source_label="src/a<b>.rs:3",
    )
    message = card_message(card, ephemeral=True, record_id=card.record_id, shared_by="U0123ABCD")
    assert_valid(message)
    assert_escaped(message)
    joined = "\n".join(texts(message))
    assert "Tensor&lt;B, 2&gt; &amp; &lt;!channel&gt;" in joined
    assert "a &lt; b &amp;&amp; c &gt; d" in joined
    assert "&lt;@U999&gt;" in joined
    assert "<@U0123ABCD>" in joined
    assert fix_code(message) == [card.example_fix]


def test_source_link_cannot_be_broken_by_its_url(avg_pool: Card) -> None:
    card = dataclasses.replace(avg_pool, source_url="https://example.com/a|b>c&d", source_label="x|y.rs:1")
    message = card_message(card, ephemeral=False, record_id=card.record_id)
    assert_valid(message)
    context = next(t for t in texts(message) if t.startswith("Source: "))
    assert "<https://example.com/a%7Cb&gt;c&amp;d|x¦y.rs:1>" in context


# -- cards --------------------------------------------------------------------------------------------


def test_analysed_card_layout(avg_pool: Card) -> None:
    message = card_message(avg_pool, ephemeral=True, record_id=avg_pool.record_id)
    assert_valid(message)
    assert_escaped(message)
    types = [block["type"] for block in message.blocks]
    assert types[0] == "header"
    assert message.blocks[0]["text"]["text"] == "Can't differentiate avg pool 2d backward."
    body = sections(message)
    assert body[0].startswith("*What it means*\n")
    assert body[1].startswith("*When it happens*\n")
    assert body[2].startswith("*Solutions*\n1. ")
    assert f"\n{len(avg_pool.solutions)}. " in body[2]
    assert body[3].startswith("*Example fix*\n```\n") and body[3].endswith("\n```")
    assert body[4].startswith("*Prevention*\n• ")
    assert fix_code(message) == [avg_pool.example_fix]
    context = next(t for t in texts(message) if t.startswith("Source: "))
    assert f"<{avg_pool.source_url}|{avg_pool.source_label}>" in context
    assert "Tags: rust, autodiff" in context
    assert f"Data set {avg_pool.dataset_version}" in context
    assert context.endswith("Confidence 99%")
    assert types[-1] == "actions"
    assert ACTION_FULL_FIX not in buttons(message)  # the fix is shown whole
    assert message.text.startswith("Can't differentiate avg pool 2d backward. (crates/burn-autodiff/")


def test_every_seed_card_is_valid(seeds: PanicLookup) -> None:
    cards = catalog_cards(seeds.catalog)
    assert len(cards) == 3
    for card in cards:
        assert card.has_analysis
        for message in all_variants(card):
            assert_valid(message)
            assert_escaped(message)
            assert any(text.startswith("*What it means*") for text in sections(message))


def test_every_shared_record_gets_a_valid_card() -> None:
    catalog = load_catalog([shared_data_dir() / RECORDS_FILE])
    cards = catalog_cards(catalog)
    assert len(cards) > 1_000
    for card in cards:
        for message in all_variants(card):
            assert_valid(message)
            assert_escaped(message)
            if not card.has_analysis:
                assert sections(message) == [NO_ANALYSIS]


def test_card_without_analysis_is_small() -> None:
    record = Record(
        id="fb80024af605b1bf",
        errorMessage="Node {node_id:?} is not in the backward_states. ",
        filePath="crates/burn-autodiff/src/checkpoint/base.rs",
        lineNumber=84,
        githubUrl="https://github.com/tracel-ai/burn/blob/abc/crates/burn-autodiff/src/checkpoint/base.rs#L84",
        tags=("rust", "burn"),
    )
    card = build_card(Match(record, 30.0, 0.7, (), 0, True, 0), "Node 3 is not in the backward_states.")
    message = card_message(card, ephemeral=False, record_id=record.id)
    assert_valid(message)
    assert [block["type"] for block in message.blocks] == [
        "header",
        "section",
        "divider",
        "context",
        "actions",
    ]
    assert message.blocks[0]["text"]["text"] == "Node 3 is not in the backward_states."
    assert sections(message) == [NO_ANALYSIS]
    assert "Source: <https://github.com/tracel-ai/burn/blob/abc/" in texts(message)[2]
    assert set(buttons(message)) == {ACTION_VOTE_UP, ACTION_VOTE_DOWN}


def test_huge_card_stays_within_limits(huge: Card) -> None:
    for ephemeral in (True, False):
        message = card_message(huge, ephemeral=ephemeral, record_id="rec-1", vote="up", shared_by="U1")
        assert_valid(message)
        assert_escaped(message)
        header = message.blocks[0]["text"]["text"]
        assert header.startswith("Tensor&lt;B, 2&gt; &amp; friends") and header.endswith("…")
        body = sections(message)
        # Over budget, the prevention tips go first, then the solutions are cut.
        assert not any(text.startswith("*Prevention*") for text in body)
        solutions = next(text for text in body if text.startswith("*Solutions*"))
        assert re.search(r"_…and \d+ more_$", solutions)
        cause = next(text for text in body if text.startswith("*What it means*"))
        assert cause.endswith("…") and len(cause) > 1_000
        # The fix: cut on a line boundary, fence closed, no fence from the fix left inside.
        (fix,) = [text for text in body if text.startswith("*Example fix*")]
        assert re.search(r"\n```\n_…cut here: \d+ more lines_$", fix)
        (code,) = fix_code(message)
        assert "```" not in code
        assert "ʼʼʼ" in code
        assert standin(huge.example_fix).startswith(code + "\n")
        assert parse_action_value(buttons(message)[ACTION_FULL_FIX]["value"]).record_id == "rec-1"
        context = next(t for t in texts(message) if t.startswith("Source: "))
        assert len(context) <= 1_000 and context.endswith("Confidence 99%")


def test_full_fix_shows_the_whole_fix_across_sections(huge: Card) -> None:
    message = card_message(huge, ephemeral=True, record_id="rec-1", full_fix=True)
    assert_valid(message)
    assert_escaped(message)
    code = fix_code(message)
    assert len(code) >= 4  # over 3,000 characters per section, so split
    assert "\n".join(code) == standin(huge.example_fix)
    assert all(
        text.startswith(f"*Example fix* ({n}/{len(code)})")
        for n, text in enumerate([t for t in sections(message) if t.startswith("*Example fix*")], 1)
    )
    assert not any("cut here" in text for text in sections(message))
    assert ACTION_FULL_FIX not in buttons(message)


def test_full_fix_of_a_normal_card_keeps_everything(avg_pool: Card) -> None:
    longer = dataclasses.replace(avg_pool, example_fix=big_fix(60))
    short = card_message(longer, ephemeral=True, record_id=avg_pool.record_id)
    assert ACTION_FULL_FIX in buttons(short)
    full = card_message(longer, ephemeral=True, record_id=avg_pool.record_id, full_fix=True)
    assert_valid(full)
    assert "\n".join(fix_code(full)) == standin(longer.example_fix)
    labels = [text.split("\n", 1)[0] for text in sections(full)]
    assert labels[:3] == ["*What it means*", "*When it happens*", "*Solutions*"]
    assert labels[-1] == "*Prevention*"


def test_fix_too_long_for_any_message_is_cut_cleanly(avg_pool: Card) -> None:
    card = dataclasses.replace(avg_pool, example_fix=big_fix(900))
    message = card_message(card, ephemeral=True, record_id="r", full_fix=True)
    assert_valid(message)
    code = "\n".join(fix_code(message))
    assert standin(card.example_fix).startswith(code + "\n")
    assert "cut here" in sections(message)[-1]


def test_fix_of_one_enormous_line_and_edge_backticks(avg_pool: Card) -> None:
    for fix in ("`" + "<" * 12_000 + "`", "```\n```", "``", "x" * 2_990 + "`"):
        card = dataclasses.replace(avg_pool, example_fix=fix, cause="<" * 9_000)
        for full_fix in (False, True):
            message = card_message(card, ephemeral=True, record_id="r", full_fix=full_fix)
            assert_valid(message)
            assert_escaped(message)


def test_share_and_more_only_on_ephemeral_cards(avg_pool: Card) -> None:
    private = buttons(card_message(avg_pool, ephemeral=True, record_id="rec-9", lookup_key="k1"))
    assert list(private) == [ACTION_SHARE, ACTION_MORE, ACTION_VOTE_UP, ACTION_VOTE_DOWN]
    assert private[ACTION_SHARE]["text"]["text"] == "Share in channel"
    assert private[ACTION_MORE]["text"]["text"] == "More matches"
    values = {parse_action_value(button["value"]) for button in private.values()}
    assert values == {ActionValue("rec-9", "k1", avg_pool.confidence)}
    without_key = buttons(card_message(avg_pool, ephemeral=True, record_id="rec-9"))
    assert ACTION_MORE not in without_key  # nothing to recall the query by
    public = buttons(card_message(avg_pool, ephemeral=False, record_id="rec-9"))
    assert list(public) == [ACTION_VOTE_UP, ACTION_VOTE_DOWN]
    alone = buttons(
        card_message(avg_pool, ephemeral=True, record_id="rec-9", lookup_key="k1", more_available=False)
    )
    assert list(alone) == [ACTION_SHARE, ACTION_VOTE_UP, ACTION_VOTE_DOWN]


def test_a_record_id_too_long_for_a_button_still_gets_its_card(avg_pool: Card) -> None:
    long_name = buttons(card_message(avg_pool, ephemeral=True, record_id="r" * 1900, lookup_key="k" * 300))
    assert ACTION_MORE not in long_name and ACTION_SHARE in long_name  # the alternatives had to go
    assert all(len(button["value"]) <= 2000 for button in long_name.values())
    enormous = card_message(avg_pool, ephemeral=True, record_id="r" * 2500, lookup_key="k")
    assert_valid(enormous)
    assert buttons(enormous) == {}


@pytest.mark.parametrize(
    ("vote", "line", "up_style", "down_style"),
    [
        ("up", "You voted 👍", "primary", None),
        ("down", "You voted 👎", None, "danger"),
        (None, None, None, None),
    ],
)
def test_vote_state_is_shown(
    avg_pool: Card, vote: str | None, line: str | None, up_style: str | None, down_style: str | None
) -> None:
    message = card_message(avg_pool, ephemeral=False, record_id="r", vote=vote)
    assert_valid(message)
    votes = [t for t in texts(message) if t.startswith("You voted")]
    assert votes == ([line] if line else [])
    found = buttons(message)
    assert found[ACTION_VOTE_UP].get("style") == up_style
    assert found[ACTION_VOTE_DOWN].get("style") == down_style


def test_unknown_vote_is_refused(avg_pool: Card) -> None:
    with pytest.raises(ValueError, match="vote"):
        card_message(avg_pool, ephemeral=False, record_id="r", vote="sideways")


def test_shared_by_names_the_user(avg_pool: Card) -> None:
    message = card_message(avg_pool, ephemeral=False, record_id="r", shared_by="U0123ABCD")
    assert message.blocks[1]["elements"][0]["text"] == "Shared by <@U0123ABCD>"
    odd = card_message(avg_pool, ephemeral=False, record_id="r", shared_by="<!channel>")
    assert odd.blocks[1]["elements"][0]["text"] == "Shared by &lt;!channel&gt;"


def test_header_is_never_empty_and_fits(avg_pool: Card) -> None:
    empty = dataclasses.replace(avg_pool, title="  ", catalog_message="")
    assert card_message(empty, ephemeral=False, record_id="r").blocks[0]["text"]["text"] == AVG_POOL_ID
    long = dataclasses.replace(avg_pool, title="word " * 100)
    header = card_message(long, ephemeral=False, record_id="r").blocks[0]["text"]["text"]
    assert len(header) <= 150 and header.endswith("…") and "  " not in header


# -- other messages -----------------------------------------------------------------------------------


def nearby_record(n: int) -> Match:
    record = Record(
        id=f"near{n}",
        errorMessage=f"Shape <{n}> & mismatch",
        filePath=f"crates/burn-tensor/src/tensor/api/check_{n}.rs",
        lineNumber=10 + n,
        githubUrl=f"https://github.com/tracel-ai/burn/blob/abc/crates/check_{n}.rs#L{10 + n}",
    )
    return Match(record, 10.0 - n, 0.45 - n / 100, (), 0, False, n)


def test_no_match_lists_nearby_records_and_no_card() -> None:
    panic = Panic("index out of bounds: <3> & 7", Location("src/main.rs", "src/main.rs", 3, 5))
    result = LookupResult((panic,), tuple(nearby_record(n) for n in range(3)), None, False)
    message = no_match_message(result, query=UNKNOWN_PASTE)
    assert_valid(message)
    assert_escaped(message)
    assert not [block for block in message.blocks if block["type"] in {"header", "actions"}]
    joined = "\n".join(texts(message))
    assert "*No known record* for this panic at `src/main.rs:3:5`" in joined
    assert "index out of bounds: &lt;3&gt; &amp; 7" in joined
    assert "*Nearby records*" in joined
    assert (
        "<https://github.com/tracel-ai/burn/blob/abc/crates/check_0.rs#L10|Shape &lt;0&gt; &amp; mismatch>"
        in joined
    )
    assert "confidence 45%" in joined and "confidence 43%" in joined
    assert "What it means" not in joined and "Example fix" not in joined
    assert message.text == "No known record for this panic."


def test_no_match_from_real_lookups(seeds: PanicLookup) -> None:
    for query in (UNKNOWN_PASTE, "gradient graph got tangled", "", "thanks!! 🎉"):
        result = seeds.lookup(query)
        assert result.best is None
        message = no_match_message(result, query=query)
        assert_valid(message)
        assert not [block for block in message.blocks if block["type"] in {"header", "actions"}]
    empty = no_match_message(LookupResult((), (), None, False), query="")
    assert "no Rust panic" in empty.blocks[0]["text"]["text"]


def test_more_matches_skips_the_shown_record() -> None:
    matches = tuple(nearby_record(n) for n in range(4))
    result = LookupResult((Panic("x"),), matches, None, False)
    message = more_matches_message(result, skip_record_id="near0")
    assert_valid(message)
    assert_escaped(message)
    joined = "\n".join(texts(message))
    assert "3 records" in joined
    assert "check_0.rs" not in joined
    for n in (1, 2, 3):
        assert f"<https://github.com/tracel-ai/burn/blob/abc/crates/check_{n}.rs#L{10 + n}|" in joined
        assert f"`crates/burn-tensor/src/tensor/api/check_{n}.rs:{10 + n}`" in joined
        assert f"confidence {45 - n}%" in joined
    none = more_matches_message(LookupResult((), (), None, False), skip_record_id=None)
    assert_valid(none)
    assert "No other matches" in none.blocks[0]["text"]["text"]


def test_more_matches_of_a_real_lookup(seeds: PanicLookup) -> None:
    result = seeds.lookup(AVG_POOL_PASTE)
    message = more_matches_message(result, skip_record_id=AVG_POOL_ID)
    assert_valid(message)
    assert AVG_POOL_ID not in json.dumps(message.blocks)
    assert "Can't differentiate deform conv 2d backward." in "\n".join(texts(message))


def test_long_lists_stay_within_limits() -> None:
    many = tuple(dataclasses.replace(nearby_record(n)) for n in range(200))
    result = LookupResult((Panic("y" * 5_000),), many, None, False)
    for message in (no_match_message(result, query="q"), more_matches_message(result, skip_record_id=None)):
        assert_valid(message)
        assert re.search(r"_…and \d+ more_", "\n".join(texts(message)))


def test_usage_explains_the_ways_to_ask() -> None:
    message = usage_message()
    assert_valid(message)
    assert_escaped(message)
    joined = "\n".join(texts(message))
    assert "`/panic &lt;paste or words&gt;`" in joined
    assert "Mention" in joined and "shortcut" in joined
    assert "/panic" in message.text


def test_error_message_is_short_and_escaped() -> None:
    message = error_message("Lookup failed: <timeout> & retry")
    assert_valid(message)
    assert_escaped(message)
    assert message.blocks == [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": ":warning: Lookup failed: &lt;timeout&gt; &amp; retry",
                "verbatim": True,
            },
        }
    ]
    assert len(sections(error_message("x" * 10_000))[0]) <= 1_100
    assert error_message("").text


def test_action_values_round_trip_and_junk_never_raises() -> None:
    from adapters.slack.render import action_value

    assert parse_action_value(action_value("r1", "key", 0.9567)) == ActionValue("r1", "key", 0.957)
    assert parse_action_value(action_value("r1", None, 0.5)) == ActionValue("r1", None, 0.5)
    assert parse_action_value("r2") == ActionValue("r2", None, 0.0)
    assert parse_action_value("r3|k|nan-ish") == ActionValue("r3", "k", 0.0)
    assert parse_action_value("") == ActionValue("", None, 0.0)


def test_alternatives_ride_in_the_buttons_and_never_raise() -> None:
    """ "More matches" reads the other matches from the button, so any replica can answer the click."""
    from adapters.slack.render import decode_alternatives, encode_alternatives

    encoded = encode_alternatives([("a1", 0.91234), ("b2", 0.5), ("bad|id", 0.4), ("", 0.3), ("c3", 0.2)])
    assert encoded == "a1:0.912,b2:0.500,c3:0.200"
    assert decode_alternatives(encoded) == [("a1", 0.912), ("b2", 0.5), ("c3", 0.2)]
    assert encode_alternatives([]) is None
    assert decode_alternatives("x:notanumber,:0.5,y:2") == [("y", 1.0)]
    assert decode_alternatives(None) == []
    many = encode_alternatives([(f"id{n}", 0.5) for n in range(20)])
    assert many is not None and len(many.split(",")) == 5


FAMILY_NOTE_TEXT = "General advice for panics of this kind (Follow-on panic (look for the first one))."


def test_a_family_s_advice_says_so_even_on_a_card_cut_to_fit(huge: Card) -> None:
    family = dataclasses.replace(huge, analysis="family:follow-on", analysis_note=FAMILY_NOTE_TEXT)
    for message in all_variants(family):
        assert_valid(message)
        assert f"_{FAMILY_NOTE_TEXT}_" in texts(message)
    assert not any(
        "General advice" in text for text in texts(card_message(huge, ephemeral=True, record_id="r"))
    )
