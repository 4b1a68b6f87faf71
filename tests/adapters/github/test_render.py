"""The card as a GitHub comment: the sections of the neutral markdown, the fix in a ```rust block, within
65,536 characters, pasted text that pings and links nobody, and a marker only the bot's own text sets."""

from __future__ import annotations

import re
from dataclasses import replace

import cmarkgfm

from adapters.github.render import (
    MAX_COMMENT_CHARS,
    Marker,
    card_comment,
    no_match_comment,
    read_marker,
)
from bot import Card, PanicLookup
from bot.records import default_catalog
from tests.support.cards import REPORTED_LABEL, REPORTED_PASTE, REPORTED_URL, RESHAPE_PASTE
from tests.support.catalogs import seeds_catalog

PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
)


def avg_pool_card() -> Card:
    service = PanicLookup(seeds_catalog())
    card = service.card(service.lookup(PASTE))
    assert card is not None
    return card


def fences(text: str) -> list[str]:
    return re.findall(r"^`{3,}\w*$", text, flags=re.MULTILINE)


def test_the_comment_has_the_cards_sections_the_rust_fix_and_the_source_at_its_release() -> None:
    card = avg_pool_card()
    body = card_comment(card, Marker(card.record_id, "issue", "ab12"))
    assert body.startswith("### Can't differentiate avg pool 2d backward\\.")
    for section in ("**What it means:**", "**Solutions:**", "**Example fix:**", "**Prevention:**"):
        assert section in body
    assert "```rust\n" in body and len(fences(body)) % 2 == 0
    assert f"Source: [{card.source_label}]({card.source_url})" in body
    assert "👍" in body and "👎" in body
    assert read_marker(body) == Marker(card.record_id, "issue", "ab12")
    assert body.rstrip().endswith("-->")  # hidden when rendered


def test_a_huge_card_is_cut_to_fit_a_comment_never_inside_a_fence() -> None:
    card = avg_pool_card()
    huge = replace(
        card,
        example_fix="\n".join(f"let x{n} = tensor.clone(); // ```" for n in range(20_000)),
        cause="word " * 30_000,
        solutions=tuple("try this " * 1_000 for _ in range(200)),
        prevention_tips=tuple("and this " * 1_000 for _ in range(200)),
    )
    body = card_comment(huge, Marker(card.record_id, "c42"))
    assert len(body) <= MAX_COMMENT_CHARS
    opening = re.search(r"^(`{3,})rust$", body, flags=re.MULTILINE)
    assert opening is not None and len(opening[1]) == 4  # longer than the fix's own ``` runs
    assert re.search(rf"^{opening[1]}$", body, flags=re.MULTILINE)  # closed
    assert "The example is cut here" in body
    assert read_marker(body) == Marker(card.record_id, "c42")


def test_pasted_text_pings_nobody_links_nothing_and_cannot_forge_the_marker() -> None:
    card = avg_pool_card()
    forged = "<!-- panicbot:record=ffffffffffffffff source=issue digest= -->"
    hostile = replace(
        card,
        title=f"@maintainers see #123 <b>now</b> {forged}",
        consequences=(f"@everyone {forged}",),
    )
    body = card_comment(hostile, Marker(card.record_id, "issue"))
    title = body.splitlines()[0]
    assert "@maintainers" not in title and "@\u200bmaintainers" in title
    assert "<b>" not in title and "\\#123" in title
    assert read_marker(body) == Marker(card.record_id, "issue")  # ours closes the comment
    assert "`@everyone" in body  # in code: no ping


def test_no_known_record_quotes_the_paste_redacted_and_lists_nearby_records() -> None:
    service = PanicLookup(seeds_catalog())
    paste = (
        "thread 'main' panicked at src/main.rs:3:5:\n"
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 refused by @octocat\n"
    )
    result = service.lookup(paste)
    assert service.card(result) is None
    body = no_match_comment(result, paste)
    assert "No known record" in body
    assert "ghp_abcdefghijklmnopqrstuvwxyz" not in body and "@octocat" not in body


def test_a_tensor_check_is_titled_by_its_reason_and_shows_the_pasted_values() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(RESHAPE_PASTE))
    assert card is not None
    body = card_comment(card, Marker(card.record_id, "issue", "ab12"))
    title = "### Reshape: the given shape doesn't have the same number of elements as the current tensor\n"
    assert body.startswith(title + "\n**Details:** `Current shape: [2, 3], target shape: [4, 2].`\n")
    assert "check.rs:156" in body and "check.rs#L156" in body


def test_pasted_details_stay_code_and_within_the_comment() -> None:
    card = replace(
        avg_pool_card(),
        details=("@octocat ```` <b>x</b> #12", *(f"value {n} " + "x" * 5_000 for n in range(8))),
    )
    body = card_comment(card, Marker(card.record_id, "issue"))
    assert len(body) <= MAX_COMMENT_CHARS
    assert "**Details:**\n- `````@octocat ```` <b>x</b> #12`````\n" in body


def test_a_family_card_says_it_is_general_advice_and_fits_a_comment() -> None:
    service = PanicLookup(default_catalog())
    paste = (
        "thread 'main' panicked at "
        "crates/burn-train/src/learner/supervised/strategies/ddp/strategy.rs:155:14:\n"
        "worker reaper thread disconnected unexpectedly: RecvError\n"
    )
    card = service.card(service.lookup(paste))
    assert card is not None and card.analysis == "family:follow-on"
    body = card_comment(card, Marker(card.record_id, "issue", "ab12"))
    assert "_General advice for panics of this kind (Follow-on panic" in body
    assert "```sh\n" in body and len(fences(body)) % 2 == 0
    huge = replace(card, solutions=tuple("try this " * 1_000 for _ in range(200)))
    cut = card_comment(huge, Marker(card.record_id, "c42"))
    assert len(cut) <= MAX_COMMENT_CHARS and "General advice for panics of this kind" in cut


def test_reports_are_named_in_code_never_linked_so_upstream_issues_get_no_mention() -> None:
    service = PanicLookup(default_catalog())
    card = service.card(service.lookup(REPORTED_PASTE))
    assert card is not None
    body = card_comment(card, Marker(card.record_id, "issue"))
    assert f"**Reported in:** `{REPORTED_LABEL}`" in body
    assert REPORTED_URL not in body
    assert body.count(REPORTED_LABEL) == body.count(f"`{REPORTED_LABEL}`")


PASTED_URLS = (
    "http://localhost:8080/metrics",  # a dotless host: escaping dots never stopped this one
    "https://intranet/x",
    "https://evil.example.com/a?b=c",  # escaped dots did not stop GitHub either (`evil\.example\.com`)
    "www.example.org/path",
    "ftp://files/dump",
    "mailto:someone@example.com",
)


def links(markdown: str) -> list[str]:
    """The links GitHub shows for this markdown (its own renderer, cmark-gfm with the autolinker)."""
    html = cmarkgfm.github_flavored_markdown_to_html(markdown)
    return re.findall(r'<a href="([^"]*)"', html)


def test_urls_in_pasted_text_are_never_live_links_on_github() -> None:
    card = avg_pool_card()
    pasted = "thread 'main' panicked at " + " and ".join(PASTED_URLS)
    body = card_comment(replace(card, title=pasted), Marker(card.record_id, "issue"))
    assert links(body) == [card.source_url]  # the source link, and nothing from the paste
    for url in PASTED_URLS:
        assert f"`{url}`" in body  # shown as code, whole

    service = PanicLookup(seeds_catalog())
    for url in PASTED_URLS:
        query = f"thread 'main' panicked at src/main.rs:1:1:\nrequest to {url} failed"
        comment = no_match_comment(service.lookup(query), query)
        # Only the nearby records' source links (on GitHub), none from the paste.
        assert all(link.startswith("https://github.com/") for link in links(comment)), links(comment)


def references(markdown: str) -> list[str]:
    """What GitHub would take for a reference to an issue or pull request (which adds "mentioned this" to
    that issue): `#12`, `GH-12`, `owner/name#12` and issue links, outside code (as GitHub renders it)."""
    html = cmarkgfm.github_flavored_markdown_to_html(markdown)
    outside_code = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", " ", html, flags=re.S)
    pattern = (
        r"(?<![\w/#&])(?:[\w.-]+/[\w.-]+)?#\d+\b|\bGH-\d+\b|github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+"
    )
    return re.findall(pattern, outside_code)


def test_issue_references_in_the_analysis_and_history_reference_nothing() -> None:
    """A removal's or a condition change's commit subject ("... (#2780)") would point at the user's own
    issue #2780, and an analysis naming `tracel-ai/burn#4158` would list every answer on that issue."""
    card = replace(
        avg_pool_card(),
        release_note="No longer raised since burn-train 0.18.0: 'Fix checkpointer shutdown (#2780)'.",
        condition_note='In burn-tensor 0.16.0 (commit "Fix alignment (#2416)"): `a != b` from then on.',
        solutions=(
            "Upgrade to burn-import 0.20, which reads external data (tracel-ai/burn#4158, GH-12).",
            "See https://github.com/tracel-ai/burn/issues/3990 and keep `#[derive(Module)]` as it is.",
        ),
    )
    body = card_comment(card, Marker(card.record_id, "issue"))
    assert references(body) == []
    for shown in ("`#2780`", "`#2416`", "`tracel-ai/burn#4158`", "`GH-12`", "`#[derive(Module)]`"):
        assert shown in body
    assert "`https://github.com/tracel-ai/burn/issues/3990`" in body
    assert "**Condition changed:**" in body
