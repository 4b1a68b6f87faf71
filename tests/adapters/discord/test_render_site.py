"""Discord cards show where a panic is raised, what the releases say, the condition that fires it and the
paste's other panics that follow from it: each only when known, escaped, cut within every limit."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from typing import Any

import pytest

from adapters.discord import render
from adapters.discord.bot import DiscordState
from adapters.discord.render import DiscordMessage, OptionSpec, card_message, units
from adapters.discord.runner import run_discord
from adapters.discord.settings import load_discord_settings
from bot.card import NO_ANALYSIS, Card, build_card
from bot.lookup import PanicLookup
from bot.matcher import Match
from bot.records import Record, default_catalog
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.test_bot import TOKEN, FakeClock, callback_data, run
from tests.adapters.discord.test_render import (
    AVG_POOL_PASTE,
    assert_valid,
    big_fix,
    fields,
    payload,
)
from tests.support.cards import (
    REPORTED_LABEL,
    REPORTED_PASTE,
    REPORTED_URL,
    RESHAPE_PASTE,
    RESHAPE_TITLE,
    RESHAPE_VALUES,
)
from tests.support.catalogs import seeds_catalog
from tests.support.local_only import isolate

WHERE = "burn-fusion 0.21.0, ordering.rs:49 in `OrderedExecution::execute_optimization`"
RELEASE = "No longer raised since burn-fusion 0.22.0-pre.1."
FIRES = "lhs.dims() != rhs.dims()"
CHANGED = 'In burn-tensor 0.16.0 (commit "Fix alignment (#2416)" (28f99d14e9)): `a != b` from then on.'
ECHO = "called `Result::unwrap()` on an `Err` value: PoisonError { .. }"
HOSTILE = (
    "<@123456789012345678> @everyone @here *bold* __under__ `tick` <@&123456789012345678> [x](https://e.x)"
)
FUSION_PASTE = (
    "thread 'main' panicked at /home/ana/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-fusion-0.21.0/src/stream/execution/ordering.rs:49:13:\n"
    "Ordering is bigger than operations\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
CONSEQUENCES = "Also in this paste, following from this panic"


@pytest.fixture(scope="module")
def avg_pool() -> Card:
    seeds = PanicLookup(seeds_catalog())
    card = seeds.card(seeds.lookup(AVG_POOL_PASTE))
    assert card is not None
    return card


@pytest.fixture
def sited(avg_pool: Card) -> Card:
    return dataclasses.replace(
        avg_pool, where=WHERE, release_note=RELEASE, fires_when=FIRES, consequences=(ECHO, "second echo")
    )


def embed(message: DiscordMessage) -> dict[str, Any]:
    [found] = assert_valid(message)["embeds"]
    return dict(found)


def facts(message: DiscordMessage) -> list[str]:
    """The site-fact lines that open the description."""
    description = embed(message).get("description") or ""
    return [
        line
        for line in description.split("\n")
        if line.startswith(("**Where:**", "**Release:**", "**Fires when:**", "**Condition changed:**"))
    ]


def variants(card: Card) -> list[DiscordMessage]:
    options = [OptionSpec(f"option {n}", f"995:r{n}", f"file.rs:{n} · 99%") for n in range(25)]
    return [
        card_message(card, severity="error", ephemeral=True, options=options),
        card_message(
            card,
            severity="error",
            ephemeral=False,
            asker_id=2**63,
            tally={"up": 1200, "down": 3},
            shared_by="a member with a very long display name " * 5,
        ),
    ]


# -- shown when set, absent when empty ----------------------------------------------------------------


def test_site_facts_open_the_description_before_the_cause(sited: Card) -> None:
    shown = embed(card_message(sited, severity="error", ephemeral=True))
    assert shown["description"] == (
        "**Where:** burn-fusion 0.21.0, ordering.rs:49 in `OrderedExecution::execute_optimization`\n"
        "**Release:** No longer raised since burn-fusion 0.22.0-pre.1.\n"
        "**Fires when:** `lhs.dims() != rhs.dims()`\n"
        "\n" + sited.cause
    )


def test_consequences_come_after_the_analysis_before_the_source(sited: Card) -> None:
    body = assert_valid(card_message(sited, severity="error", ephemeral=True))
    assert list(fields(body)) == [
        "When it happens",
        "Solutions",
        "Example fix",
        "Prevention",
        CONSEQUENCES,
        "Source",
        "Tags",
    ]
    assert fields(body)[CONSEQUENCES] == (
        "• `called 'Result::unwrap()' on an 'Err' value: PoisonError { .. }`\n• `second echo`"
    )
    [item] = [item for item in body["embeds"][0]["fields"] if item["name"] == CONSEQUENCES]
    assert item["inline"] is False


def test_shown_when_set_on_a_card_without_analysis_too(sited: Card) -> None:
    bare = dataclasses.replace(sited, has_analysis=False, cause=NO_ANALYSIS)
    body = assert_valid(card_message(bare, ephemeral=False, asker_id=42))
    description = body["embeds"][0]["description"]
    assert description.startswith("**Where:** burn-fusion 0.21.0, ordering.rs:49")
    assert description.endswith("\n\n" + NO_ANALYSIS)
    assert list(fields(body)) == [CONSEQUENCES, "Source", "Tags"]


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [
        ("where", WHERE, f"**Where:** {WHERE}"),
        ("release_note", RELEASE, f"**Release:** {RELEASE}"),
        ("fires_when", FIRES, f"**Fires when:** `{FIRES}`"),
        ("condition_note", CHANGED, f"**Condition changed:** {CHANGED}"),
    ],
)
def test_each_fact_only_when_set(avg_pool: Card, field: str, value: str, line: str) -> None:
    empty = dataclasses.replace(avg_pool, where="", release_note="", fires_when="", consequences=())
    message = card_message(dataclasses.replace(empty, **{field: value}), ephemeral=True)
    assert embed(message)["description"] == f"{line}\n\n{avg_pool.cause}"
    assert CONSEQUENCES not in fields(assert_valid(message))


def test_nothing_new_when_every_field_is_empty(avg_pool: Card) -> None:
    empty = dataclasses.replace(avg_pool, where="", release_note=" ", fires_when="  ", consequences=("  ",))
    body = assert_valid(card_message(empty, ephemeral=True))
    assert body["embeds"][0]["description"] == avg_pool.cause
    assert CONSEQUENCES not in fields(body)


def test_consequences_only_when_set(avg_pool: Card) -> None:
    only = dataclasses.replace(avg_pool, where="", consequences=(ECHO,))
    body = assert_valid(card_message(only, ephemeral=True))
    assert body["embeds"][0]["description"] == avg_pool.cause
    assert fields(body)[CONSEQUENCES].startswith("• `called 'Result::unwrap()'")


def test_a_where_that_only_repeats_the_source_is_left_to_the_source_field(avg_pool: Card) -> None:
    # The seed card's "where" is the crate and file:line the Source field already shows.
    assert avg_pool.where == "burn-autodiff, module.rs:1498"
    assert facts(card_message(avg_pool, ephemeral=True)) == []
    for said_more in ("burn-autodiff 0.19.0, module.rs:1498", "burn-autodiff, module.rs:1480"):
        card = dataclasses.replace(avg_pool, where=said_more)
        assert facts(card_message(card, ephemeral=True)) == [f"**Where:** {said_more}"]


# -- escaping -----------------------------------------------------------------------------------------


def test_hostile_fires_when_and_consequences_stay_text(sited: Card) -> None:
    card = dataclasses.replace(
        sited,
        where="@everyone *crate* 1.0, a_b.rs:1 in `f<@123456789012345678>`",
        release_note="Gone since @here and **bold** <@123456789012345678>.",
        fires_when=HOSTILE,
        consequences=(HOSTILE, "```rust\nfn main() {}\n```", "line one\nline two"),
    )
    for message in variants(card):
        body = assert_valid(message)
        where, release, fires = facts(message)
        mentions = re.compile(r"@(everyone|here|[!&]?[0-9]{17,20})")
        for text in (where, release, fires, fields(body)[CONSEQUENCES]):
            assert not mentions.search(text), text
        # Outside code, markdown is escaped; the function name stays code, its mention broken up.
        assert where == (
            "**Where:** @\u200beveryone \\*crate\\* 1.0, a\\_b.rs:1 in `f<@\u200b123456789012345678>`"
        )
        assert (
            release == "**Release:** Gone since @\u200bhere and \\*\\*bold\\*\\* <@\u200b123456789012345678>."
        )
        code = (
            "<@\u200b123456789012345678> @\u200beveryone @\u200bhere *bold* __under__ 'tick' "
            "<@\u200b&123456789012345678> [x](https://e.x)"
        )
        # Inside inline code markdown is inert; one span per line, never closed early.
        assert fires == f"**Fires when:** `{code}`"
        assert fields(body)[CONSEQUENCES].split("\n") == [
            f"• `{code}`",
            "• `'''rust fn main() {} '''`",
            "• `line one line two`",
        ]


# -- limits -------------------------------------------------------------------------------------------


def maximal(card: Card, char: str = "x") -> Card:
    """Every field far over what Discord takes, the new ones included."""
    return dataclasses.replace(
        card,
        title="Tensor<B, 2> & **friends** 🦀: " + "very long title " * 30,
        cause="The cause and its *details* go on. " * 620,
        when="When it happens. " * 200,
        solutions=tuple(f"Solution {n}: " + "do the right thing " * 26 for n in range(40)),
        example_fix=big_fix(),
        prevention_tips=tuple(f"Tip {n} " + "x" * 300 for n in range(20)),
        tags=tuple(f"tag-{n}" for n in range(400)),
        where=f"burn-{char * 3_000} 0.21.0, {char * 3_000}.rs:49 in `{'@everyone' * 400}::f`",
        release_note=f"No longer raised since {char * 5_000} & <{char * 5_000}>.",
        fires_when=f"{'<' * 4_000} != `{char * 4_000}`",
        condition_note=f"In {char * 3_000} (commit <{char * 3_000}>): `{'<' * 3_000}` from then on.",
        panics_doc=f"If the shapes *differ* @everyone {char * 5_000}",
        consequences=tuple(f"echo {n} @everyone " + char * 5_000 for n in range(40)),
        details=tuple(f"value {n} @everyone " + char * 400 for n in range(20)),
    )


@pytest.mark.parametrize("char", ["x", "*", "🦀", "\\"], ids=["ascii", "markdown", "emoji", "backslash"])
def test_every_field_at_its_maximum_stays_valid(avg_pool: Card, char: str) -> None:
    card = maximal(avg_pool, char)
    for variant in (card, dataclasses.replace(card, has_analysis=False, cause=NO_ANALYSIS)):
        for message in variants(variant):
            body = assert_valid(message)
            [shown] = body["embeds"]
            assert render.embed_size(message.embeds[0]) <= render.EMBEDS_TOTAL_MAX
            assert units(shown["description"]) <= render.DESCRIPTION_MAX
            where, release, fires, changed = facts(message)
            assert units(changed) <= len("**Condition changed:** ") + render.CONDITION_NOTE_MAX
            assert changed.endswith(("…", "…`")) and changed.count("`") % 2 == 0, changed
            assert units(where) <= len("**Where:** ") + render.WHERE_MAX and where.endswith(("…", "…`"))
            assert units(release) <= len("**Release:** ") + render.RELEASE_NOTE_MAX and release.endswith("…")
            assert fires.endswith("…`") and units(fires) <= len("**Fires when:** ") + render.FIRES_WHEN_MAX
            for line in (where, fires):
                assert line.count("`") % 2 == 0, line
            listed = fields(body)[CONSEQUENCES]
            assert units(listed) <= render.FIELD_VALUE_MAX
            assert re.search(r"\n\*…and \d+ more\*$", listed), listed
            assert "Confidence 99%" in shown["footer"]["text"]


def test_long_facts_are_cut_with_an_ellipsis_and_closed_code(sited: Card) -> None:
    card = dataclasses.replace(
        sited,
        where="burn-fusion 0.21.0, ordering.rs:49 in `" + "Outer::" * 80 + "f`",
        release_note="Not raised here in burn-fusion 0.14.0: " + "this message moved. " * 60,
        fires_when="a.len() > b.len() && " * 40,
    )
    where, release, fires = facts(card_message(card, ephemeral=True))
    assert where.startswith("**Where:** burn-fusion 0.21.0, ordering.rs:49 in `Outer::")
    assert where.endswith("…`") and where.count("`") == 2
    assert release.endswith("…") and fires.endswith("…`") and fires.count("`") == 2


# -- end to end ---------------------------------------------------------------------------------------


def test_slash_command_on_an_old_release_paste_shows_where_and_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`/panic query:` with a paste naming burn-fusion 0.21.0 in a registry path, on the embedded catalog."""
    env = isolate(
        monkeypatch,
        "DISCORD_TOKEN",
        "DISCORD_HELP_CHANNEL_IDS",
        "DISCORD_API_URL",
        "DISCORD_SHARD_COUNT",
        "DISCORD_SHARD_IDS",
        "DISCORD_AUTO_REPLY_COOLDOWN_SECONDS",
        "PANICBOT_CATALOG",
    )

    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            env.setenv("DISCORD_TOKEN", TOKEN)
            env.setenv("DISCORD_API_URL", fake.api_url)
            settings = load_discord_settings()
            state = DiscordState(clock=FakeClock(), cooldown_seconds=600)
            task = asyncio.create_task(run_discord(settings, PanicLookup(default_catalog()), state))
            try:
                await fake.wait_for_identify()
                callback = await fake.callback(await fake.slash(FUSION_PASTE))
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            assert fake.problems == [], "Discord would have refused these"
            assert fake.pings == [], "a message went out that could ping"
            data = callback_data(callback)
            [shown] = data["embeds"]
            assert shown["title"] == "Ordering is bigger than operations"
            assert shown["description"].startswith(
                "**Where:** burn-fusion 0.21.0, ordering.rs:49 in `OrderedExecution::execute_optimization`\n"
                "**Release:** Reworded in burn-fusion 0.22.0-pre.1: from then on the same check reads "
                '"Ordering is bigger than operations: ordering len {}'
            )
            assert "/blob/v0.21.0/crates/burn-fusion/" in shown["url"]

    run(scenario())


def test_the_end_to_end_paste_really_is_an_old_release_one() -> None:
    """What the end-to-end check relies on, from the core: the card of the paste has all four facts."""
    service = PanicLookup(default_catalog())
    result = service.lookup(FUSION_PASTE + "\nthread 'main' panicked at src/main.rs:3:5:\n" + ECHO)
    card = service.card(result)
    assert card is not None
    assert card.release_note and card.fires_when and card.consequences == (ECHO,)
    body = payload(card_message(card, ephemeral=True))
    assert fields(body)[CONSEQUENCES] == "• `called 'Result::unwrap()' on an 'Err' value: PoisonError { .. }`"


def test_a_built_card_without_a_site_shows_no_facts() -> None:
    record = Record(id="r1", errorMessage="boom", filePath="src/a.rs", lineNumber=3)
    card = build_card(Match(record, 30.0, 0.7, (), 0, True, 0), "boom")
    message = card_message(card, ephemeral=False)
    assert facts(message) == []
    assert CONSEQUENCES not in fields(assert_valid(message))


def test_the_panics_doc_opens_the_description_escaped_and_cut(avg_pool: Card) -> None:
    card = dataclasses.replace(avg_pool, panics_doc="If the padding is *not* symmetric @everyone " * 20)
    description = embed(card_message(card, ephemeral=False)).get("description") or ""
    line = next(line for line in description.split("\n") if line.startswith("**Its docs say it panics:** "))
    assert "@everyone" not in line and "\\*not\\*" in line
    assert units(line) <= len("**Its docs say it panics:** ") + render.PANICS_DOC_MAX
    empty = dataclasses.replace(card, panics_doc="")
    assert "Its docs say" not in (embed(card_message(empty, ephemeral=False)).get("description") or "")


# -- a message opened by a banner ---------------------------------------------------------------------


def test_a_tensor_check_is_titled_by_its_reason_and_shows_the_pasted_values() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(RESHAPE_PASTE))
    assert card is not None
    shown = embed(card_message(card, severity="error", ephemeral=True))
    assert shown["title"] == RESHAPE_TITLE
    assert shown["description"].startswith(
        f"**Details:** `{RESHAPE_VALUES}`\n**Where:** burn-tensor 0.19.0, check.rs:156 in "
    )


def test_several_details_are_listed_as_code_defused_and_first(sited: Card) -> None:
    card = dataclasses.replace(sited, details=(HOSTILE, "Streams: 1"))
    for message in variants(card):
        description = embed(message)["description"]
        lines = description.split("\n")
        assert lines[0] == "**Details:**"
        assert (
            lines[1].startswith("• `") and lines[1].endswith("`") and "<@123456789012345678>" not in lines[1]
        )
        assert lines[2] == "• `Streams: 1`"
        assert lines[3].startswith("**Where:** ")
    cards = [
        dataclasses.replace(maximal(sited, char), has_analysis=has) for char in "x*" for has in (True, False)
    ]
    for each in cards:
        for message in variants(each):
            description = embed(message)["description"]
            listed = description.split("**Where:**", 1)[0]
            assert units(listed) <= len("**Details:**\n") + render.DETAILS_MAX + 2


def test_a_card_links_the_public_issues_where_its_error_was_reported() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(REPORTED_PASTE))
    assert card is not None
    shown = embed(card_message(card, severity="error", ephemeral=False))
    # A masked link whose URL is in angle brackets: no preview of the upstream issue unfurls under the card.
    assert f"**Reported in:** [{REPORTED_LABEL}](<{REPORTED_URL}>)" in shown["description"]
