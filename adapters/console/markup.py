"""Chat markup to safe HTML for the card previews: Slack's mrkdwn, Discord's markdown, GitHub markdown.

Every piece of text is escaped; only the few tags built here (strong, em, del, code, pre, a with an http(s)
href, br, ul/ol/li) ever reach the page, so a `<script>` in a paste shows as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import Markup, escape

_FENCE = re.compile(r"(`{3,})([a-zA-Z0-9_+-]*)\n?(.*?)\1", re.DOTALL)
_SLACK_INLINE = re.compile(
    r"<(?P<url>https?://[^|>\s]+)(?:\|(?P<label>[^>]+))?>"
    r"|`(?P<code>[^`\n]+)`"
    r"|(?<![\w*])\*(?P<bold>[^*\n]+)\*(?![\w*])"
    r"|(?<![\w_])_(?P<em>[^_\n]+)_(?![\w_])"
    r"|(?<![\w~])~(?P<strike>[^~\n]+)~(?![\w~])"
)
_MD_INLINE = re.compile(
    r"\[(?P<label>[^\]\n]+)\]\(<?(?P<url>https?://[^)>\s]+)>?\)"
    r"|`(?P<code>[^`\n]+)`"
    r"|\*\*(?P<bold>[^*\n]+?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^*\n]+)\*(?![\w*])"
    r"|~~(?P<strike>[^~\n]+)~~"
)
_SAFE_URL = re.compile(r"^https?://[^\s\"'<>]+$")


def _link(url: str, label: Markup) -> Markup:
    if not _SAFE_URL.match(url):
        return label
    return Markup('<a href="{}" rel="noopener noreferrer nofollow">{}</a>').format(url, label)


def _inline(text: str, pattern: re.Pattern[str], plain: Callable[[str], str]) -> Markup:
    out: list[Markup] = []
    position = 0
    for found in pattern.finditer(text):
        out.append(escape(plain(text[position : found.start()])))
        groups = found.groupdict()
        if groups.get("url"):
            label = plain(groups.get("label") or groups["url"])
            out.append(_link(plain(groups["url"]), escape(label)))
        elif groups.get("code") is not None:
            out.append(Markup("<code>{}</code>").format(plain(groups["code"])))
        elif groups.get("bold") is not None:
            out.append(Markup("<strong>{}</strong>").format(_inline(groups["bold"], pattern, plain)))
        elif groups.get("em") is not None:
            out.append(Markup("<em>{}</em>").format(_inline(groups["em"], pattern, plain)))
        elif groups.get("strike") is not None:
            out.append(Markup("<del>{}</del>").format(plain(groups["strike"])))
        position = found.end()
    out.append(escape(plain(text[position:])))
    return Markup("").join(out)


def _slack_plain(text: str) -> str:
    """Slack escapes &, < and > in message text: undo that before the page escapes them again."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _same(text: str) -> str:
    return text


def _blocks(text: str, pattern: re.Pattern[str], plain: Callable[[str], str]) -> Markup:
    out: list[Markup] = []
    position = 0
    for fence in _FENCE.finditer(text):
        out.append(_lines(text[position : fence.start()], pattern, plain))
        language = fence.group(2)
        code = plain(fence.group(3)).rstrip("\n")
        css = f"language-{language}" if language else "code"
        out.append(Markup('<pre class="{}"><code>{}</code></pre>').format(css, code))
        position = fence.end()
    out.append(_lines(text[position:], pattern, plain))
    return Markup("").join(out)


def _lines(text: str, pattern: re.Pattern[str], plain: Callable[[str], str]) -> Markup:
    lines = text.strip("\n").split("\n")
    if lines == [""]:
        return Markup("")
    rendered = [_inline(line, pattern, plain) for line in lines]
    return Markup('<p class="md">{}</p>').format(Markup("<br>").join(rendered))


def slack_mrkdwn(text: str) -> Markup:
    return _blocks(text, _SLACK_INLINE, _slack_plain)


def discord_markdown(text: str) -> Markup:
    return _blocks(text, _MD_INLINE, _same)


def github_markdown(text: str) -> Markup:
    """What GitHub shows of `render_markdown`: the same inline syntax, plus numbered and bulleted lists."""
    out: list[Markup] = []
    position = 0
    for fence in _FENCE.finditer(text):
        out.append(_github_lines(text[position : fence.start()]))
        language = fence.group(2)
        css = f"language-{language}" if language else "code"
        out.append(Markup('<pre class="{}"><code>{}</code></pre>').format(css, fence.group(3).rstrip("\n")))
        position = fence.end()
    out.append(_github_lines(text[position:]))
    return Markup("").join(out)


_LIST_ITEM = re.compile(r"^(?:(?P<number>\d+)\.|[-*•])\s+(?P<text>.*)$")


def _github_lines(text: str) -> Markup:
    out: list[Markup] = []
    paragraph: list[Markup] = []
    items: list[Markup] = []
    ordered = False

    def flush() -> None:
        nonlocal paragraph, items
        if paragraph:
            out.append(Markup('<p class="md">{}</p>').format(Markup("<br>").join(paragraph)))
            paragraph = []
        if items:
            tag = "ol" if ordered else "ul"
            out.append(Markup(f"<{tag}>") + Markup("").join(items) + Markup(f"</{tag}>"))
            items = []

    for line in text.split("\n"):
        item = _LIST_ITEM.match(line.strip())
        if not line.strip():
            flush()
        elif item:
            if paragraph:
                flush()
            ordered = item.group("number") is not None
            items.append(Markup("<li>{}</li>").format(_inline(item.group("text"), _MD_INLINE, _same)))
        else:
            if items:
                flush()
            paragraph.append(_inline(line, _MD_INLINE, _same))
    flush()
    return Markup("").join(out)
