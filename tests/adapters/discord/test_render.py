"""Discord rendering: every card fits Discord's limits (checked on the JSON discord.py would send, by the
same rules as the fake Discord), fences stay closed, custom_ids stay parseable, no-match is never a card."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from adapters.discord import render
from adapters.discord.bot import autocomplete_choices, build_view
from adapters.discord.render import (
    MORE_ID,
    ButtonSpec,
    DiscordMessage,
    OptionSpec,
    SelectSpec,
    card_message,
    cut,
    cut_markdown,
    no_match_message,
    parse_custom_id,
    units,
)
from bot.card import NO_ANALYSIS, UNDER_REVIEW, Card, build_card
from bot.extract import Location, Panic
from bot.lookup import PanicLookup
from bot.matcher import LookupResult, Match
from bot.records import Catalog, Record, load_catalog
from tests.adapters.discord.fake_discord import message_problems
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
FENCE = "```"


# -- the wire format, and the checks every message must pass -----------------------------------------------


def payload(message: DiscordMessage) -> dict[str, Any]:
    """What discord.py sends for the message: embeds as dicts, the real view's components."""
    body: dict[str, Any] = {"content": message.content, "embeds": [e.to_dict() for e in message.embeds]}
    view = build_view(message.components)
    body["components"] = view.to_components() if view is not None else []
    return body


def assert_valid(message: DiscordMessage) -> dict[str, Any]:
    body = payload(message)
    assert message_problems(body) == []
    for embed in body["embeds"]:
        for item in embed.get("fields", []):
            # An odd number of fences leaves a code block open and swallows the rest of the card.
            assert item["value"].count(FENCE) % 2 == 0, item
        assert (embed.get("description") or "").count(FENCE) % 2 == 0
    for row in body["components"]:
        assert len(row["components"]) <= 5
        for child in row["components"]:
            if "custom_id" in child:
                assert 1 <= len(child["custom_id"]) <= 100
                if child["custom_id"] != MORE_ID:
                    assert parse_custom_id(child["custom_id"]) is not None
    return body


def fields(body: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in body["embeds"][0].get("fields", [])}


def custom_ids(body: dict[str, Any]) -> list[str]:
    return [child.get("custom_id", "link") for row in body["components"] for child in row["components"]]


def catalog_cards(catalog: Catalog) -> list[tuple[Card, str | None]]:
    """Every record's card as a button press builds it (analysis under review kept off, as the core says)."""
    service = PanicLookup(catalog)
    cards = []
    for record in service.matcher.records:
        card = service.card_for_record(record.id, 0.99)
        assert card is not None
        cards.append((card, record.severity))
    return cards


def all_variants(card: Card, severity: str | None) -> list[DiscordMessage]:
    options = [OptionSpec(f"option {n}", f"995:r{n}", f"file.rs:{n} · 99%") for n in range(25)]
    return [
        card_message(card, severity=severity, ephemeral=True, options=options),
        card_message(card, severity=severity, ephemeral=True, options=options, vote="down"),
        card_message(
            card,
            severity=severity,
            ephemeral=False,
            asker_id=2**63,
            tally={"up": 1200, "down": 3},
            shared_by="a member with a very long display name " * 5,
        ),
    ]


@pytest.fixture(scope="module")
def seeds() -> PanicLookup:
    return PanicLookup(seeds_catalog())


@pytest.fixture(scope="module")
def avg_pool(seeds: PanicLookup) -> Card:
    card = seeds.card(seeds.lookup(AVG_POOL_PASTE))
    assert card is not None and card.record_id == AVG_POOL_ID
    return card


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
    """Far over every limit: long prose, 40 long solutions, a 10,000-character fix, 400 tags."""
    return dataclasses.replace(
        avg_pool,
        title="Tensor<B, 2> & **friends** 🦀: " + "very long title " * 30,
        cause="The cause and its *details* go on. " * 620,
        when="When it happens. " * 200,
        solutions=tuple(f"Solution {n}: " + "do the right thing " * 26 for n in range(40)),
        example_fix=big_fix(),
        prevention_tips=tuple(f"Tip {n} " + "x" * 300 for n in range(20)),
        tags=tuple(f"tag-{n}" for n in range(400)),
    )


def fix_code(body: dict[str, Any]) -> list[str]:
    """The code inside each example-fix field, in order."""
    found = []
    for name, value in fields(body).items():
        if name.startswith("Example fix"):
            match = re.fullmatch(
                r"```rust\n(.*)\n```(?:\n\*…\d+ more lines? at the source\*)?", value, re.DOTALL
            )
            assert match, value
            found.append(match.group(1))
    return found


def unbroken(code: str) -> str:
    return code.replace(render.ZWSP, "")


# -- the checks themselves ---------------------------------------------------------------------------------


def test_the_checks_catch_what_discord_refuses(avg_pool: Card) -> None:
    body = payload(card_message(avg_pool, ephemeral=True))
    assert message_problems(body) == []
    too_long = {**body, "embeds": [{**body["embeds"][0], "description": "x" * 4_097}]}
    assert message_problems(too_long)
    many = {**body, "embeds": [{"title": "t", "fields": [{"name": "n", "value": "v" * 1_000}] * 7}]}
    assert any("6000" in problem for problem in message_problems(many))
    row = {
        "type": 1,
        "components": [{"type": 2, "style": 2, "custom_id": f"x{n}", "label": "x"} for n in range(6)],
    }
    assert message_problems({**body, "components": [row]})
    long_id = {"type": 1, "components": [{"type": 2, "style": 2, "custom_id": "x" * 101, "label": "x"}]}
    assert message_problems({**body, "components": [long_id]})
    assert message_problems({"content": "", "embeds": [], "components": []})


# -- cards -------------------------------------------------------------------------------------------------


def test_analysed_card_layout(avg_pool: Card) -> None:
    body = assert_valid(card_message(avg_pool, severity="error", ephemeral=True))
    [embed] = body["embeds"]
    assert embed["title"] == "Can't differentiate avg pool 2d backward."
    assert embed["url"] == avg_pool.source_url
    assert embed["description"] == avg_pool.cause
    assert embed["color"] == render.SEVERITY_COLOURS["error"]
    assert list(fields(body)) == [
        "When it happens",
        "Solutions",
        "Example fix",
        "Prevention",
        "Source",
        "Tags",
    ]
    assert (
        fields(body)["Solutions"].startswith("1. ")
        and f"\n{len(avg_pool.solutions)}. " in fields(body)["Solutions"]
    )
    assert fix_code(body) == [avg_pool.example_fix]
    assert fields(body)["Source"] == f"[{avg_pool.source_label}](<{avg_pool.source_url}>)"
    assert fields(body)["Tags"] == "rust, autodiff, unimplemented, backward-pass"
    assert embed["footer"]["text"] == f"panicbot · Data set {avg_pool.dataset_version} · Confidence 99%"
    assert "author" not in embed
    assert body["content"] is None


def test_colour_follows_severity(avg_pool: Card) -> None:
    for severity, colour in (
        ("error", 0xE74C3C),
        ("WARNING", 0xE67E22),
        ("info", 0x3498DB),
        (None, 0x95A5A6),
    ):
        [embed] = payload(card_message(avg_pool, severity=severity, ephemeral=False))["embeds"]
        assert embed["color"] == colour


def test_every_seed_card_fits(seeds: PanicLookup) -> None:
    cards = catalog_cards(seeds.catalog)
    assert len(cards) == 3
    for card, severity in cards:
        for message in all_variants(card, severity):
            assert_valid(message)


def test_every_shared_record_gets_a_card_that_fits() -> None:
    catalog = load_catalog([shared_data_dir() / RECORDS_FILE])
    cards = catalog_cards(catalog)
    assert len(cards) > 1_000
    for card, severity in cards:
        for message in all_variants(card, severity):
            body = assert_valid(message)
            if not card.has_analysis:
                assert body["embeds"][0]["description"] in {NO_ANALYSIS, UNDER_REVIEW}
                assert set(fields(body)) <= {"Source", "Tags"}


def test_card_without_analysis_is_small() -> None:
    record = Record(
        id="fb80024af605b1bf",
        errorMessage="Node {node_id:?} is not in the backward_states. ",
        filePath="crates/burn-autodiff/src/checkpoint/base.rs",
        lineNumber=84,
        githubUrl="https://github.com/tracel-ai/burn/blob/abc/crates/burn-autodiff/src/checkpoint/base.rs#L84",
        severity="error",
    )
    card = build_card(Match(record, 30.0, 0.7, (), 0, True, 0), "Node 3 is not in the backward_states.")
    body = assert_valid(card_message(card, severity="error", ephemeral=False, asker_id=42))
    [embed] = body["embeds"]
    assert embed["title"] == "Node 3 is not in the backward\\_states."
    assert embed["description"] == NO_ANALYSIS
    assert list(fields(body)) == ["Source"]
    assert render.embed_size(card_message(card, ephemeral=False).embeds[0]) < 400
    assert custom_ids(body)[:3] == [
        f"pb:vote:up:700:42:{record.id}",
        f"pb:vote:down:700:42:{record.id}",
        "pb:del:42",
    ]


def test_card_under_review_keeps_the_analysis_off() -> None:
    card = build_card(Match(avg_pool_record(), 90.0, 0.99, (), 0, True, 0), None, "v1", under_review=True)
    body = assert_valid(card_message(card, severity="error", ephemeral=True))
    assert body["embeds"][0]["description"] == UNDER_REVIEW
    assert list(fields(body)) == ["Source"]


def test_huge_card_stays_within_every_limit(huge: Card) -> None:
    for message in all_variants(huge, "error"):
        body = assert_valid(message)
        [embed] = body["embeds"]
        assert embed["title"].startswith("Tensor<B, 2> & \\*\\*friends\\*\\* 🦀") and embed["title"].endswith(
            "…"
        )
        assert units(embed["title"]) <= 256
        # Over 6,000 the prevention tips go first, then some of the fix, then the prose shrinks.
        assert "Prevention" not in fields(body)
        assert re.search(r"\*…and \d+ more\*$", fields(body)["Solutions"])
        assert embed["description"].endswith("…") and len(embed["description"]) >= 200
        [code] = fix_code(body)
        # Whole lines of the fix, its own fences defused so they cannot close the block early.
        assert FENCE not in code
        assert unbroken(huge.example_fix).startswith(unbroken(code) + "\n")
        assert fields(body)["Example fix"].endswith(" more lines at the source*")
        assert "Confidence 99%" in embed["footer"]["text"]


def test_a_long_fix_is_split_across_fields_never_inside_a_fence(avg_pool: Card) -> None:
    fix = "\n".join(["// ```rust in a doc comment", *(f"let v{n} = {n}; // `{n}`" for n in range(120))])
    card = dataclasses.replace(avg_pool, example_fix=fix)
    body = assert_valid(card_message(card, ephemeral=True))
    code = fix_code(body)
    assert len(code) >= 2
    names = [name for name in fields(body) if name.startswith("Example fix")]
    assert names == [f"Example fix ({n}/{len(code)})" for n in range(1, len(code) + 1)]
    assert unbroken("\n".join(code)) == card.example_fix


def test_fix_of_one_enormous_line_and_edge_backticks(avg_pool: Card) -> None:
    for fix in ("`" + "<" * 12_000 + "`", "```\n```", "``", "x" * 1_010 + "`", "🦀" * 3_000):
        card = dataclasses.replace(avg_pool, example_fix=fix, cause="c" * 9_000)
        for message in all_variants(card, "error"):
            assert_valid(message)


def test_title_is_escaped_redacted_and_never_empty(avg_pool: Card) -> None:
    card = dataclasses.replace(avg_pool, title="token=abcdefghijkl *bold* @everyone <@123456789012345678>")
    [embed] = payload(card_message(card, ephemeral=False))["embeds"]
    assert "abcdefghijkl" not in embed["title"] and "[redacted]" in embed["title"]
    assert "\\*bold\\*" in embed["title"]
    assert "@\u200beveryone" in embed["title"]
    empty = dataclasses.replace(avg_pool, title="  ", catalog_message="")
    assert payload(card_message(empty, ephemeral=False))["embeds"][0]["title"] == AVG_POOL_ID


def test_bad_source_url_is_left_out_not_refused(avg_pool: Card) -> None:
    card = dataclasses.replace(avg_pool, source_url="javascript:alert(1)")
    body = assert_valid(card_message(card, ephemeral=True))
    assert "url" not in body["embeds"][0]
    assert "link" not in custom_ids(body)
    assert fields(body)["Source"] == "crates/burn-autodiff/src/ops/module.rs:1498"


# -- components --------------------------------------------------------------------------------------------


def test_private_and_public_cards_have_their_buttons(avg_pool: Card) -> None:
    options = render.match_options([Match(avg_pool_record(), 90.0, 0.99, (), 0, True, 0)], AVG_POOL_ID)
    private = assert_valid(card_message(avg_pool, ephemeral=True, options=options * 2))
    assert custom_ids(private) == [
        f"pb:post:995:{AVG_POOL_ID}",
        f"pb:vote:up:995:0:{AVG_POOL_ID}",
        f"pb:vote:down:995:0:{AVG_POOL_ID}",
        "link",
    ]  # one distinct option: no menu
    public = assert_valid(card_message(avg_pool, ephemeral=False, asker_id=7, tally={"up": 2, "down": 0}))
    assert custom_ids(public) == [
        f"pb:vote:up:995:7:{AVG_POOL_ID}",
        f"pb:vote:down:995:7:{AVG_POOL_ID}",
        "pb:del:7",
        "link",
    ]
    up, down = public["components"][0]["components"][:2]
    assert up["label"] == "2" and "label" not in down


def avg_pool_record() -> Record:
    record = PanicLookup(seeds_catalog()).record(AVG_POOL_ID)
    assert record is not None
    return record


def test_more_matches_menu_from_a_real_lookup(seeds: PanicLookup) -> None:
    result = seeds.lookup(AVG_POOL_PASTE)
    card = seeds.card(result)
    assert card is not None
    options = render.match_options(result.matches, card.record_id)
    body = assert_valid(card_message(card, ephemeral=True, options=options))
    menu = body["components"][1]["components"][0]
    assert menu["custom_id"] == MORE_ID and menu["placeholder"] == "More matches"
    assert menu["options"][0].get("default") is True
    assert "Can't differentiate deform conv 2d backward." in [option["label"] for option in menu["options"]]
    key, confidence = render.parse_option_value(menu["options"][1]["value"]) or ("", 0.0)
    assert seeds.record(key) is not None and 0 < confidence <= 1
    chosen = render.with_default(options, menu["options"][1]["value"])
    assert [option.default for option in chosen][:2] == [False, True]


def test_custom_ids_round_trip_and_long_record_ids_are_hashed() -> None:
    long_id = "record/" + "x" * 200
    keys = render.RecordKeys([long_id, AVG_POOL_ID])
    for record_id in (AVG_POOL_ID, long_id, "a:b:c"):
        for built in (
            render.post_id(record_id, 0.9567),
            render.vote_id("down", record_id, 1.0, 2**64 - 1),
        ):
            assert len(built) <= 100
            action = parse_custom_id(built)
            assert action is not None
            assert keys.resolve(action.record_key) == record_id
        assert len(render.option_value(record_id, 0.5)) <= 100
    assert parse_custom_id(render.post_id(AVG_POOL_ID, 0.9567)) == render.Action("post", AVG_POOL_ID, 0.957)
    assert parse_custom_id(render.dismiss_id(12)) == render.Action("dismiss", asker_id=12)
    assert parse_custom_id(MORE_ID) == render.Action("more")
    for junk in ("", "pb:", "pb:vote:sideways:1:2:r", "pb:del:me", "other-bot:button"):
        assert parse_custom_id(junk) is None
    assert render.parse_option_value("junk") is None


def test_unknown_vote_is_refused(avg_pool: Card) -> None:
    with pytest.raises(ValueError, match="vote"):
        card_message(avg_pool, ephemeral=True, vote="sideways")


def test_view_from_specs_is_what_discord_receives() -> None:
    specs: list[render.ComponentSpec] = [
        ButtonSpec(style="primary", label="Post publicly", custom_id="pb:post:10:r1"),
        ButtonSpec(style="link", label="Source", url="https://example.com/a"),
        SelectSpec(
            custom_id=MORE_ID, placeholder="More matches", options=(OptionSpec("a", "1:r1", None, True),)
        ),
    ]
    view = build_view(specs)
    assert view is not None and view.timeout is None
    rows = view.to_components()
    assert [child["type"] for child in rows[0]["components"]] == [2, 2]
    assert rows[1]["components"][0]["options"][0]["default"] is True
    assert build_view([]) is None
    with pytest.raises(ValueError, match="custom_id"):
        build_view([ButtonSpec(style="secondary", label="x", custom_id="someone-else")])


# -- other messages ----------------------------------------------------------------------------------------


def nearby(n: int) -> Match:
    record = Record(
        id=f"near{n}",
        errorMessage=f"Shape <{n}> & *mismatch* [{n}]",
        filePath=f"crates/burn-tensor/src/tensor/api/check_{n}.rs",
        lineNumber=10 + n,
        githubUrl=f"https://github.com/tracel-ai/burn/blob/abc/crates/check_{n}.rs#L{10 + n}",
    )
    return Match(record, 10.0 - n, 0.45 - n / 100, (), 0, False, n)


def test_no_match_is_plain_content_never_a_card() -> None:
    panic = Panic(
        "index out of bounds: @everyone token=hunter2hunter2", Location("src/main.rs", "src/main.rs", 3, 5)
    )
    result = LookupResult((panic,), tuple(nearby(n) for n in range(3)), None, False)
    message = no_match_message(result, query=UNKNOWN_PASTE)
    body = assert_valid(message)
    assert body["embeds"] == [] and body["components"] == []
    content = body["content"]
    assert content.startswith("🔍 **No known record** for this panic at `src/main.rs:3:5`.")
    assert "@\u200beveryone" in content and "hunter2hunter2" not in content
    assert (
        "[Shape <0> & \\*mismatch\\* \\[0\\]](<https://github.com/tracel-ai/burn/blob/abc/crates/check_0.rs#L10>)"
        in content
    )
    assert "confidence 45%" in content and "confidence 43%" in content


def test_no_match_from_real_lookups(seeds: PanicLookup) -> None:
    for query in (UNKNOWN_PASTE, "gradient graph got tangled", "", "thanks!! 🎉"):
        result = seeds.lookup(query)
        assert result.best is None
        body = assert_valid(no_match_message(result, query=query))
        assert body["embeds"] == []
    empty = no_match_message(LookupResult((), (), None, False), query="")
    assert "no Rust panic" in (empty.content or "")


def test_long_lists_stay_within_the_content_limit() -> None:
    result = LookupResult((Panic("y" * 5_000),), tuple(nearby(n) for n in range(200)), None, False)
    content = no_match_message(result, query="q").content or ""
    assert units(content) <= 2_000
    assert re.search(r"\*…and \d+ more\*$", content)


def test_usage_and_error_messages() -> None:
    usage = assert_valid(render.usage_message())
    assert "/panic query:" in usage["content"] and "Explain this panic" in usage["content"]
    error = assert_valid(render.error_message("Lookup failed: *timeout* & retry " + "x" * 5_000))
    assert error["content"].startswith("⚠️ Lookup failed: \\*timeout\\*")
    assert units(error["content"]) <= 1_010
    assert assert_valid(render.posted_message())["content"]


# -- text helpers and autocomplete -------------------------------------------------------------------------


def test_cut_counts_utf16_and_never_leaves_a_fence_open() -> None:
    assert units("🦀") == 2 and units("é") == 1
    assert units(cut("🦀" * 100, 51)) <= 51
    assert cut("short", 10) == "short"
    assert cut("word " * 50, 40).endswith("…") and units(cut("word " * 50, 40)) <= 40
    assert not cut("a\\" + "b" * 50, 3).endswith("\\…")
    text = "intro\n```rust\nlet x = 1;\n" + "let y = 2;\n" * 50 + "```\nafter"
    shown = cut_markdown(text, 100)
    assert shown.count(FENCE) % 2 == 0 and shown.endswith("…")


def test_autocomplete_choices(seeds: PanicLookup) -> None:
    by_words = autocomplete_choices(seeds, "avg pool")
    assert by_words[0] == ("Can't differentiate avg pool 2d backward.", f"id:{AVG_POOL_ID}")
    by_tag = dict(autocomplete_choices(seeds, "AUTODIFF"))
    assert by_tag["Can't differentiate avg pool 2d backward."] == f"id:{AVG_POOL_ID}"
    everything = autocomplete_choices(seeds, "")
    assert len(everything) == 3
    pasted = autocomplete_choices(seeds, AVG_POOL_PASTE * 500)
    assert pasted and pasted[0][1] == f"id:{AVG_POOL_ID}"


def test_autocomplete_choices_fit_on_the_shared_catalog() -> None:
    service = PanicLookup(load_catalog([shared_data_dir() / RECORDS_FILE]))
    for current in ("", "tensor", "shape", "x" * 500, "burn"):
        choices = autocomplete_choices(service, current)
        assert len(choices) <= 25
        for name, value in choices:
            assert 1 <= units(name) <= 100 and 1 <= len(value) <= 100


FAMILY_NOTE_TEXT = "General advice for panics of this kind (Follow-on panic (look for the first one))."


def test_a_family_s_advice_says_so_in_the_footer_even_on_a_card_cut_to_fit(huge: Card) -> None:
    family = dataclasses.replace(huge, analysis="family:follow-on", analysis_note=FAMILY_NOTE_TEXT)
    for message in all_variants(family, "error"):
        body = assert_valid(message)
        assert body["embeds"][0]["footer"]["text"].startswith(FAMILY_NOTE_TEXT + " · panicbot")
    plain_body = assert_valid(all_variants(huge, "error")[0])
    assert "General advice" not in plain_body["embeds"][0]["footer"]["text"]
