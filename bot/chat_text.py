"""Undo what chat clients and terminals do to a paste: markup, escapes, colours, quotes, fences, times."""

from __future__ import annotations

import re

MAX_TEXT_CHARS = 200_000
"""Longer pastes are cut: a panic worth answering starts well before this, and work stays bounded."""

_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Slack wraps links, mentions and channel names in <...>; literal angle brackets arrive as &lt; &gt;.
_SLACK_LINK = re.compile(r"<((?:https?://|mailto:|[#@!]\w)[^<>|\n]*)(?:\|([^<>\n]*))?>")
_FENCE_WITH_LANGUAGE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*(?=\n)")
# Discord users wrap a single line in inline code: `thread 'main' panicked at ...`
_INLINE_CODE_LINE = re.compile(r"^([ \t]*)`([^`\n]+)`[ \t]*$", re.MULTILINE)
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_TIMESTAMP_PREFIX = re.compile(
    r"^[ \t]*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?[ \t]*",
    re.MULTILINE,
)
_SMART_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00a0": " ",
        "\u200b": "",
        "\ufeff": "",
    }
)


def _slack_link_text(match: re.Match[str]) -> str:
    target, label = match.group(1), match.group(2)
    return label if label is not None else target


def normalize_chat_text(text: str) -> str:
    """Plain text as the program printed it, from what a chat message holds. Never raises."""
    text = text[:MAX_TEXT_CHARS]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    text = _CONTROL.sub("", text)
    text = text.translate(_SMART_QUOTES)
    text = _SLACK_LINK.sub(_slack_link_text, text)
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&#x27;", "'")):
        text = text.replace(entity, char)
    text = text.replace("&amp;", "&")
    text = _FENCE_WITH_LANGUAGE.sub("", text)
    text = text.replace("```", "\n")
    text = _QUOTE_PREFIX.sub("", text)
    text = _INLINE_CODE_LINE.sub(r"\1\2", text)
    return _TIMESTAMP_PREFIX.sub("", text)
