"""Slack cards show where a panic is raised, what the releases say, the condition that fires it and the
paste's other panics that follow from it: each only when known, escaped, cut within every limit."""

from __future__ import annotations

import dataclasses
import re

import pytest
from aiohttp import ClientSession, web

from adapters.slack import render
from adapters.slack.app import SlackState, build_slack_app
from adapters.slack.render import SlackMessage, card_message
from adapters.slack.server import build_web_application
from adapters.slack.settings import load_slack_settings
from bot.card import NO_ANALYSIS, Card, build_card
from bot.lookup import PanicLookup
from bot.matcher import Match
from bot.records import Record, default_catalog
from tests.adapters.slack.fake_slack import HOST, FakeSlack, block_problems
from tests.adapters.slack.test_app import BOT_TOKEN, SIGNING_SECRET, FakeClock, Harness, header, run
from tests.adapters.slack.test_render import (
    AVG_POOL_PASTE,
    all_variants,
    assert_escaped,
    assert_valid,
    big_fix,
    sections,
    texts,
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
HOSTILE = "<@U123> @everyone *bold* _it_ ~no~ `tick` <!here> & a > b"
FUSION_PASTE = (
    "thread 'main' panicked at /home/ana/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-fusion-0.21.0/src/stream/execution/ordering.rs:49:13:\n"
    "Ordering is bigger than operations\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
CONSEQUENCES = "*Also in this paste, following from this panic*"


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


def facts(message: SlackMessage) -> str:
    """The section of site facts under the title, or "" when there is none."""
    found = [
        text
        for text in sections(message)
        if text.startswith(("*Details:*", "*Where:*", "*Release:*", "*Fires when:*", "*Condition changed:*"))
    ]
    assert len(found) <= 1
    return found[0] if found else ""


def consequences(message: SlackMessage) -> str:
    found = [text for text in sections(message) if text.startswith(CONSEQUENCES)]
    assert len(found) <= 1
    return found[0] if found else ""


def assert_slack_accepts(message: SlackMessage) -> None:
    """The checks of this file's sibling, and the fake Slack's: what Slack itself would refuse."""
    assert_valid(message)
    assert_escaped(message)
    assert block_problems({"text": message.text, "blocks": message.blocks}) == []


# -- shown when set, absent when empty ----------------------------------------------------------------


def test_site_facts_come_right_after_the_title(sited: Card) -> None:
    message = card_message(sited, ephemeral=True, record_id=sited.record_id)
    assert_slack_accepts(message)
    types = [block["type"] for block in message.blocks]
    assert types[:2] == ["header", "section"]
    assert message.blocks[1]["text"]["text"] == (
        "*Where:* burn-fusion 0.21.0, ordering.rs:49 in `OrderedExecution::execute_optimization`\n"
        "*Release:* No longer raised since burn-fusion 0.22.0-pre.1.\n"
        "*Fires when:* `lhs.dims() != rhs.dims()`"
    )
    assert sections(message)[1].startswith("*What it means*\n")


def test_consequences_come_last_before_the_context_line(sited: Card) -> None:
    message = card_message(sited, ephemeral=False, record_id=sited.record_id)
    assert_slack_accepts(message)
    text = consequences(message)
    echo = "• `called ʼResult::unwrap()ʼ on an ʼErrʼ value: PoisonError { .. }`"
    assert text == f"{CONSEQUENCES}\n{echo}\n• `second echo`"
    assert sections(message)[-1] == text
    index = next(i for i, block in enumerate(message.blocks) if block.get("text", {}).get("text") == text)
    assert message.blocks[index + 1]["type"] == "divider"
    assert message.blocks[index + 2]["elements"][0]["text"].startswith("Source: ")


def test_shown_when_set_on_a_card_without_analysis_too(sited: Card) -> None:
    bare = dataclasses.replace(sited, has_analysis=False, cause=NO_ANALYSIS)
    message = card_message(bare, ephemeral=True, record_id=bare.record_id)
    assert_slack_accepts(message)
    assert [block["type"] for block in message.blocks] == [
        "header",
        "section",
        "section",
        "section",
        "divider",
        "context",
        "actions",
    ]
    assert sections(message)[0].startswith("*Where:* burn-fusion 0.21.0")
    assert sections(message)[1] == NO_ANALYSIS
    assert sections(message)[2].startswith(CONSEQUENCES)


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [
        ("where", WHERE, f"*Where:* {WHERE}"),
        ("release_note", RELEASE, f"*Release:* {RELEASE}"),
        ("fires_when", FIRES, f"*Fires when:* `{FIRES}`"),
        ("condition_note", CHANGED, f"*Condition changed:* {CHANGED}"),
    ],
)
def test_each_fact_only_when_set(avg_pool: Card, field: str, value: str, line: str) -> None:
    empty = dataclasses.replace(avg_pool, where="", release_note="", fires_when="", consequences=())
    message = card_message(dataclasses.replace(empty, **{field: value}), ephemeral=True, record_id="r")
    assert_slack_accepts(message)
    assert facts(message) == line
    assert consequences(message) == ""


def test_nothing_new_when_every_field_is_empty(avg_pool: Card) -> None:
    empty = dataclasses.replace(avg_pool, where="", release_note="", fires_when="  ", consequences=("  ",))
    message = card_message(empty, ephemeral=True, record_id="r")
    assert_slack_accepts(message)
    assert facts(message) == "" and consequences(message) == ""
    assert sections(message)[0].startswith("*What it means*")
    assert not any(re.search(r"Where|Release|Fires when|Also in this paste", t) for t in texts(message))


def test_consequences_only_when_set(avg_pool: Card) -> None:
    only = dataclasses.replace(avg_pool, where="", consequences=(ECHO,))
    message = card_message(only, ephemeral=True, record_id="r")
    assert facts(message) == ""
    assert consequences(message).startswith(CONSEQUENCES + "\n• `called")


def test_a_where_that_only_repeats_the_source_is_left_to_the_context_line(avg_pool: Card) -> None:
    # The seed card's "where" is the crate and file:line the Source link already shows.
    assert avg_pool.where == "burn-autodiff, module.rs:1498"
    assert facts(card_message(avg_pool, ephemeral=True, record_id="r")) == ""
    for said_more in ("burn-autodiff 0.19.0, module.rs:1498", "burn-autodiff, module.rs:1480"):
        card = dataclasses.replace(avg_pool, where=said_more)
        assert facts(card_message(card, ephemeral=True, record_id="r")) == f"*Where:* {said_more}"


# -- escaping -----------------------------------------------------------------------------------------


def test_hostile_fires_when_and_consequences_stay_text(sited: Card) -> None:
    card = dataclasses.replace(
        sited,
        where="<@U999> & *crate* 1.0, a.rs:1 in `f<T>`",
        release_note="Gone since <!channel> & co.",
        fires_when=HOSTILE,
        consequences=(HOSTILE, "```rust\nfn main() {}\n```", "line one\nline two <@U456>"),
    )
    for message in all_variants(card):
        assert_slack_accepts(message)
        joined = "\n".join(texts(message))
        assert "<@U123>" not in joined and "<!here>" not in joined and "<@U999>" not in joined
        escaped = "&lt;@U123&gt; @everyone *bold* _it_ ~no~ ʼtickʼ &lt;!here&gt; &amp; a &gt; b"
        assert f"*Fires when:* `{escaped}`" in facts(message)
        assert "*Where:* &lt;@U999&gt; &amp; *crate* 1.0, a.rs:1 in `f&lt;T&gt;`" in facts(message)
        assert "*Release:* Gone since &lt;!channel&gt; &amp; co." in facts(message)
        listed = consequences(message).split("\n")[1:]
        assert listed == [
            f"• `{escaped}`",
            "• `ʼʼʼrust fn main() {} ʼʼʼ`",
            "• `line one line two &lt;@U456&gt;`",
        ]
        # Each fact and echo is one inline code span: `*bold*` and mentions inside it are inert.
        for line in [*facts(message).split("\n"), *listed]:
            assert line.count("`") % 2 == 0, line


# -- limits -------------------------------------------------------------------------------------------


def maximal(card: Card, char: str = "x") -> Card:
    """Every field far over what any platform takes, the new ones included."""
    return dataclasses.replace(
        card,
        title="Tensor<B, 2> & friends: " + "very long title " * 30,
        cause="The cause & its <details> go on. " * 620,
        when="When <it> happens. " * 200,
        solutions=tuple(f"Solution {n}: " + "do the right thing " * 26 for n in range(40)),
        example_fix=big_fix(),
        prevention_tips=tuple(f"Tip {n} " + "x" * 300 for n in range(20)),
        tags=tuple(f"tag-{n}" for n in range(400)),
        where=f"burn-{char * 3_000} 0.21.0, {char * 3_000}.rs:49 in `{'<' * 3_000}::f`",
        release_note=f"No longer raised since {char * 5_000} & <{char * 5_000}>.",
        fires_when=f"{'<' * 4_000} != `{char * 4_000}`",
        condition_note=f"In {char * 3_000} (commit <{char * 3_000}>): `{'<' * 3_000}` from then on.",
        panics_doc=f"If the shapes <differ> & {char * 5_000}",
        consequences=tuple(f"echo {n} <@U{n}> " + char * 5_000 for n in range(40)),
        details=tuple(f"value {n} <@U{n}> " + char * 400 for n in range(20)),
    )


@pytest.mark.parametrize("char", ["x", "&", "🦀"], ids=["ascii", "entities", "emoji"])
def test_every_field_at_its_maximum_stays_valid(avg_pool: Card, char: str) -> None:
    card = maximal(avg_pool, char)
    for variant in (card, dataclasses.replace(card, has_analysis=False, cause=NO_ANALYSIS)):
        for message in [
            *all_variants(variant),
            card_message(variant, ephemeral=False, record_id="r" * 1_900, shared_by="U1", full_fix=True),
        ]:
            assert_slack_accepts(message)
            context = next(t for t in texts(message) if t.startswith("Source: "))
            assert context.endswith("Confidence 99%")
            shown = facts(message)
            if shown:
                assert all(line.count("`") % 2 == 0 for line in shown.split("\n")), shown
                caps = (
                    render.WHERE_MAX + render.RELEASE_NOTE_MAX + render.FIRES_WHEN_MAX + render.PANICS_DOC_MAX
                )
                caps += render.DETAILS_MAX + render.CONDITION_NOTE_MAX
                assert len(shown) <= caps + 110
            listed = consequences(message)
            if listed:
                assert re.search(r"\n_…and \d+ more_$", listed), listed
                assert all(line.count("`") == 2 for line in listed.split("\n")[1:-1]), listed


def test_long_facts_are_cut_with_an_ellipsis_and_closed_code(sited: Card) -> None:
    card = dataclasses.replace(
        sited,
        where="burn-fusion 0.21.0, ordering.rs:49 in `" + "Outer::" * 80 + "f`",
        release_note="Not raised here in burn-fusion 0.14.0: " + "this message moved. " * 60,
        fires_when="a.len() > b.len() && " * 40,
    )
    lines = facts(card_message(card, ephemeral=True, record_id="r")).split("\n")
    where, release, fires = lines
    assert where.startswith("*Where:* burn-fusion 0.21.0, ordering.rs:49 in `Outer::")
    assert where.endswith("…`") and where.count("`") == 2
    assert len(where) <= len("*Where:* ") + render.WHERE_MAX
    assert release.endswith("…") and len(release) <= len("*Release:* ") + render.RELEASE_NOTE_MAX
    assert fires.endswith("…`") and fires.count("`") == 2
    assert len(fires) <= len("*Fires when:* ") + render.FIRES_WHEN_MAX


def test_a_tight_message_gives_up_the_prose_before_the_facts(avg_pool: Card) -> None:
    card = dataclasses.replace(
        maximal(avg_pool),
        where=WHERE,
        release_note=RELEASE,
        fires_when=FIRES,
        condition_note="",
        panics_doc="",
        details=(),
    )
    message = card_message(card, ephemeral=True, record_id="r")
    assert_slack_accepts(message)
    assert facts(message) == f"*Where:* {WHERE}\n*Release:* {RELEASE}\n*Fires when:* `{FIRES}`"
    # The prose was cut to fit and the long echoes with it, down to a few.
    assert next(t for t in sections(message) if t.startswith("*What it means*")).endswith("…")


# -- end to end ---------------------------------------------------------------------------------------


def test_slash_command_on_an_old_release_paste_shows_where_and_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`/panic` with a paste naming burn-fusion 0.21.0 in a registry path, on the embedded catalog."""
    env = isolate(
        monkeypatch,
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_API_URL",
        "SLACK_AUTO_REPLY_CHANNELS",
        "SLACK_AUTO_REPLY_COOLDOWN_SECONDS",
        "PANICBOT_CATALOG",
    )

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
            env.setenv("SLACK_API_URL", fake.api_url)
            settings = load_slack_settings(http_mode=True)
            clock = FakeClock()
            state = SlackState(clock=clock, cooldown_seconds=settings.slack_auto_reply_cooldown_seconds)
            service = PanicLookup(default_catalog())
            app = build_slack_app(settings, service, state)
            runner = web.AppRunner(build_web_application(app, len(service.catalog.records)), access_log=None)
            await runner.setup()
            await web.TCPSite(runner, HOST, 0).start()
            try:
                async with ClientSession() as session:
                    h = Harness(fake, state, clock, f"http://{HOST}:{runner.addresses[0][1]}", session)
                    answer = await h.answer(FUSION_PASTE)
            finally:
                await runner.cleanup()
            assert fake.problems == [], "Slack would have refused these blocks"
            assert answer.body["response_type"] == "ephemeral"
            assert header(answer) == "Ordering is bigger than operations"
            shown = facts(SlackMessage(answer.body["text"], answer.body["blocks"]))
            assert shown.startswith(
                "*Where:* burn-fusion 0.21.0, ordering.rs:49 in `OrderedExecution::execute_optimization`\n"
                "*Release:* Reworded in burn-fusion 0.22.0-pre.1: from then on the same check reads "
                '"Ordering is bigger than operations: ordering len {}'
            )
            assert "\n*Fires when:* `" in shown
            assert "/blob/v0.21.0/crates/burn-fusion/" in "\n".join(
                texts(SlackMessage(answer.body["text"], answer.body["blocks"]))
            )

    run(scenario())


def test_the_end_to_end_paste_really_is_an_old_release_one() -> None:
    """What the end-to-end check relies on, from the core: the card of the paste has all four facts."""
    service = PanicLookup(default_catalog())
    result = service.lookup(FUSION_PASTE + "\nthread 'main' panicked at src/main.rs:3:5:\n" + ECHO)
    card = service.card(result)
    assert card is not None
    assert card.where.startswith("burn-fusion 0.21.0, ordering.rs:49")
    assert card.release_note and card.fires_when and card.consequences == (ECHO,)
    message = card_message(card, ephemeral=True, record_id=card.record_id)
    assert_slack_accepts(message)
    assert (
        consequences(message)
        == f"{CONSEQUENCES}\n• `called ʼResult::unwrap()ʼ on an ʼErrʼ value: PoisonError {{ .. }}`"
    )


def test_a_built_card_without_a_site_shows_no_facts() -> None:
    record = Record(id="r1", errorMessage="boom", filePath="src/a.rs", lineNumber=3)
    card = build_card(Match(record, 30.0, 0.7, (), 0, True, 0), "boom")
    message = card_message(card, ephemeral=False, record_id="r1")
    assert_slack_accepts(message)
    assert facts(message) == "" and consequences(message) == ""


def test_the_panics_doc_is_a_fact_line_escaped_and_cut(avg_pool: Card) -> None:
    card = dataclasses.replace(
        avg_pool, where=WHERE, panics_doc="If the padding is <negative> & *not* symmetric " * 20
    )
    shown = facts(card_message(card, ephemeral=False, record_id="r"))
    line = next(line for line in shown.split("\n") if line.startswith("*Its docs say it panics:* "))
    assert "&lt;negative&gt; &amp;" in line and "<negative>" not in line
    assert len(line) <= len("*Its docs say it panics:* ") + render.PANICS_DOC_MAX
    assert line.endswith("…")
    empty = dataclasses.replace(card, panics_doc=" ")
    assert "Its docs say" not in facts(card_message(empty, ephemeral=False, record_id="r"))


# -- a message opened by a banner ---------------------------------------------------------------------


def test_a_tensor_check_is_headed_by_its_reason_and_shows_the_pasted_values() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(RESHAPE_PASTE))
    assert card is not None
    message = card_message(card, ephemeral=True, record_id=card.record_id)
    assert_slack_accepts(message)
    assert message.blocks[0]["text"]["text"] == RESHAPE_TITLE
    assert facts(message).startswith(
        f"*Details:* `{RESHAPE_VALUES}`\n*Where:* burn-tensor 0.19.0, check.rs:156 in "
    )
    assert message.text.startswith(RESHAPE_TITLE)


def test_several_details_are_listed_as_code_escaped_and_first(sited: Card) -> None:
    card = dataclasses.replace(sited, details=(HOSTILE, "Streams: 1"))
    for message in all_variants(card):
        assert_slack_accepts(message)
        escaped = "&lt;@U123&gt; @everyone *bold* _it_ ~no~ ʼtickʼ &lt;!here&gt; &amp; a &gt; b"
        assert facts(message).startswith(f"*Details:*\n• `{escaped}`\n• `Streams: 1`\n*Where:* ")
    empty = dataclasses.replace(sited, details=(" ",))
    assert facts(card_message(empty, ephemeral=True, record_id="r")).startswith("*Where:* ")


def test_a_card_links_the_public_issues_where_its_error_was_reported() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(REPORTED_PASTE))
    assert card is not None
    message = card_message(card, ephemeral=False, record_id=card.record_id)
    assert_slack_accepts(message)
    contexts = [
        element["text"]
        for block in message.blocks
        if block["type"] == "context"
        for element in block["elements"]
    ]
    assert f"Reported in <{REPORTED_URL}|{REPORTED_LABEL}>" in "\n".join(contexts)
