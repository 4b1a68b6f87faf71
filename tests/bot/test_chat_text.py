"""Chat markup undone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.chat_text import MAX_TEXT_CHARS, normalize_chat_text


def test_slack_escapes_links_and_mentions() -> None:
    text = "see <https://x.dev/a|the docs> and <https://x.dev/b> &lt;B&gt; &amp; <@U123> in <#C1|general>"
    assert normalize_chat_text(text) == "see the docs and https://x.dev/b <B> & @U123 in general"


def test_literal_angle_brackets_survive_outside_slack() -> None:
    assert normalize_chat_text("thread '<unnamed>' panicked") == "thread '<unnamed>' panicked"


def test_fences_quotes_smart_quotes_crlf_ansi_timestamps() -> None:
    text = "```rust\r\n> \u2018a\u2019 \u201cb\u201d\r\n\x1b[1;31m[2025-07-24T22:25:03.123Z] c\x1b[0m\r\n```"
    assert normalize_chat_text(text).strip("\n") == "'a' \"b\"\nc"


def test_huge_pastes_are_cut() -> None:
    assert len(normalize_chat_text("x" * (MAX_TEXT_CHARS + 10))) == MAX_TEXT_CHARS


@given(st.text())
def test_normalize_never_raises(text: str) -> None:
    assert isinstance(normalize_chat_text(text), str)
