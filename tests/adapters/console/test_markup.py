"""Chat markup to HTML: what the platforms format is formatted, and nothing from a paste becomes markup."""

from __future__ import annotations

from adapters.console.markup import discord_markdown, github_markdown, slack_mrkdwn
from adapters.console.previews import discord_html, slack_html

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def test_slack_mrkdwn_formats_and_escapes() -> None:
    text = (
        "*What it means*\nuse `a &lt;b&gt;` and <https://example.com/x|the docs>\n```\nlet x = &amp;y;\n```"
    )
    html = str(slack_mrkdwn(text))
    assert "<strong>What it means</strong>" in html
    assert "<code>a &lt;b&gt;</code>" in html
    assert '<a href="https://example.com/x" rel="noopener noreferrer nofollow">the docs</a>' in html
    assert "let x = &amp;y;" in html and "<pre" in html


def test_no_paste_becomes_markup_anywhere() -> None:
    for render in (slack_mrkdwn, discord_markdown, github_markdown):
        html = str(render(f"**{HOSTILE}** `{HOSTILE}`\n```rust\n{HOSTILE}\n```\n- {HOSTILE}"))
        assert "<script" not in html and "<img" not in html
        assert "&lt;script&gt;" in html


def test_only_web_links_are_links() -> None:
    for text in (
        "[x](javascript:alert(1))",
        "<javascript:alert(1)|x>",
        '[x](https://a.example/"onmouseover=1)',
    ):
        html = str(discord_markdown(text)) + str(slack_mrkdwn(text))
        assert 'href="javascript' not in html
        assert '"onmouseover' not in html


def test_block_kit_and_embeds_become_escaped_html() -> None:
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": HOSTILE}},
        {"type": "section", "text": {"type": "mrkdwn", "text": HOSTILE}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": HOSTILE}]},
        {
            "type": "actions",
            "elements": [{"type": "button", "text": {"type": "plain_text", "text": HOSTILE}}],
        },
    ]
    embed = {
        "embeds": [
            {
                "title": HOSTILE,
                "url": "javascript:alert(1)",
                "description": HOSTILE,
                "fields": [{"name": HOSTILE, "value": HOSTILE}],
                "footer": {"text": HOSTILE},
                "color": 0xE74C3C,
            }
        ],
        "components": [{"style": "primary", "label": HOSTILE}],
    }
    for html in (str(slack_html(blocks)), str(discord_html(embed))):
        assert "<script" not in html and "<img" not in html and "javascript:" not in html
    assert "dc-error" in str(discord_html(embed))
