"""The neutral card as a GitHub comment: GitHub-flavoured markdown with the sections of
`bot.card.render_markdown` (the example fix in a ```rust block, the source linked at its release), within
GitHub's 65,536-character comment limit, and a hidden marker by which the bot finds its own comment again.

Text that came from a paste (the title, the panics that follow) is escaped: it can neither ping anyone
(`@user`), link an issue, open HTML, nor close the marker; a URL in it (`http://localhost:8080/x`,
`www.example.com`) is shown in a code span, which GitHub never turns into a link."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bot import Card, LookupResult, redact
from bot.card import MarkdownStyle, confidence_percent, fenced, markdown_lines, reported_label

MAX_COMMENT_CHARS = 65_536
# Room under the limit for the marker and the footer, whatever they hold.
_BUDGET = MAX_COMMENT_CHARS - 1_024
# Field caps tried in turn until the comment fits: none, then ever shorter prose and fix.
_CAPS = (None, 16_000, 6_000, 2_000, 600)
QUOTE_MAX = 300
MARKER_PREFIX = "<!-- panicbot:"
_MARKER = re.compile(
    r"<!-- panicbot:record=([A-Za-z0-9_.:-]{1,128}) source=(issue|c[0-9]{1,20}) digest=([0-9a-f]{0,64}) -->"
)
NO_RECORD = "none"  # the marker's record on an answer that shows no card (usage, no match)
VOTE_HINT = "React with 👍 or 👎 to tell the maintainers whether this helped."
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")
# What GitHub's autolinker takes for a link: a scheme and `//` (any host, dotted or not), `www.`, or the
# schemes it links without slashes. Backslash-escaped dots do not stop it (`https://a\.b` still links).
_URL = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://|\bwww\.|\b(?:mailto|xmpp):)\S*")


@dataclass(frozen=True)
class Marker:
    """What the hidden marker of one of our comments says: the record shown, which paste it answers
    (`issue`, or `c<comment id>`) and a digest of that paste (empty for an answer to a mention)."""

    record_id: str
    source: str
    digest: str = ""

    def render(self) -> str:
        return f"<!-- panicbot:record={self.record_id} source={self.source} digest={self.digest} -->"


def read_marker(body: str) -> Marker | None:
    """The marker of one of our comments, or None."""
    # The last one: ours closes the comment, and a paste quoted above it could hold a lookalike.
    found = _MARKER.findall(body or "")
    return Marker(*found[-1]) if found else None


def no_mentions(text: str) -> str:
    """`@name` that pings nobody and links nothing (a zero-width space after the @)."""
    return _MENTION.sub("@\u200b", text)


def _escaped(text: str) -> str:
    return no_mentions(_MARKDOWN.sub(r"\\\1", text))


def plain(text: str) -> str:
    """Pasted text shown as itself: markdown and HTML escaped, mentions and issue links defused, URLs in
    code spans (never a live link)."""
    text = " ".join(text.split())
    parts: list[str] = []
    done = 0
    for url in _URL.finditer(text):
        parts += [_escaped(text[done : url.start()]), code_span(url.group())]
        done = url.end()
    return "".join(parts) + _escaped(text[done:])


def code_span(text: str) -> str:
    """Inline code that holds any backticks the text has."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


# What GitHub turns into a reference to an issue or pull request, which adds "mentioned this" to that
# issue's timeline each time the bot answers: `#123`, `GH-123`, `owner/name#123`, and links to an issue,
# pull request or discussion. In a code span it is plain text.
_ISSUE_REFERENCE = re.compile(
    r"(?i)\bhttps?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+(?:[#?/][\w=&/-]*)?"
    r"|(?<![\w/#`])(?:[\w.-]+/[\w.-]+)?#\d+\b|\bGH-\d+\b"
)
# An inline code span of the catalog's markdown (any run of backticks, closed by the same run).
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _prose(text: str) -> str:
    """The catalog's own markdown, kept, but never pinging anyone, opening HTML or referencing an issue
    (a commit subject's `(#2780)` would point at the user's own issue #2780, an analysis's
    `tracel-ai/burn#4158` would list the bot's every answer on that upstream issue)."""
    parts: list[str] = []
    done = 0
    for span in _INLINE_CODE.finditer(text):
        parts += [_unreferenced(text[done : span.start()]), span.group()]
        done = span.end()
    parts.append(_unreferenced(text[done:]))
    return no_mentions("".join(parts).replace("<", "&lt;"))


def _unreferenced(text: str) -> str:
    return _ISSUE_REFERENCE.sub(lambda found: code_span(found.group()), text)


def _cut(text: str, cap: int | None) -> str:
    if cap is None or len(text) <= cap:
        return text
    return text[: cap - 1].rstrip() + "…"


def _cut_lines(text: str, cap: int | None) -> tuple[str, bool]:
    """Whole lines of a code block up to `cap` characters (never a line cut in two); whether it was cut."""
    if cap is None or len(text) <= cap:
        return text, False
    kept: list[str] = []
    size = 0
    for line in text.splitlines():
        if size + len(line) + 1 > cap:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), True


def _body(card: Card, cap: int | None) -> str:
    def fix(code: str, language: str) -> list[str]:
        shown, was_cut = _cut_lines(code, cap)
        lines = fenced(shown, language or "rust")
        if was_cut:
            lines.append("*(The example is cut here: the source link shows the whole context.)*")
        return lines

    style = MarkdownStyle(
        title=lambda title: f"### {_cut(plain(title), 300 if cap else None)}",
        prose=lambda text: _prose(_cut(text, cap)),
        code=lambda text: code_span(_cut(text, cap)),
        fix=fix,
        context=context_line,
        # A code span, not a link: a link or `owner/repo#N` in a comment would add a "mentioned this issue"
        # reference to that upstream issue each time the bot answers.
        report=lambda url: code_span(reported_label(url)),
    )
    return "\n".join(markdown_lines(card, style)).strip()


def context_line(card: Card) -> str:
    """Source (linked at the release), tags, data set version and confidence, as a small footnote."""
    parts = []
    if card.source_label:
        label = card.source_label.replace("]", "\\]")
        parts.append(f"Source: [{label}]({card.source_url})" if card.source_url else label)
    if card.tags:
        parts.append("Tags: " + ", ".join(plain(tag) for tag in card.tags))
    if card.dataset_version:
        parts.append(f"Data set {plain(card.dataset_version)}")
    parts.append(f"Confidence {confidence_percent(card.confidence)}")
    return "<sub>" + " · ".join(parts) + "</sub>"


def card_markdown(card: Card) -> str:
    """The card's markdown, cut field by field (never inside a code fence) until it fits a comment."""
    for cap in _CAPS:
        text = _body(card, cap)
        if len(text) <= _BUDGET:
            return text
    # Hundreds of solutions: fewer of each list, as short as above.
    slim = replace(
        card,
        solutions=card.solutions[:10],
        prevention_tips=card.prevention_tips[:10],
        tags=card.tags[:20],
    )
    return _body(slim, _CAPS[-1])[:_BUDGET]


def card_comment(card: Card, marker: Marker) -> str:
    """The whole comment: the card, the vote hint, and the hidden marker."""
    text = f"{card_markdown(card)}\n\n{VOTE_HINT}\n\n{marker.render()}\n"
    assert len(text) <= MAX_COMMENT_CHARS
    return text


def marked(text: str, marker: Marker) -> str:
    """A comment of ours that is no card, with its hidden marker."""
    return f"{text}\n\n{marker.render()}\n"


def usage_comment(slug: str) -> str:
    return (
        "**panicbot** explains Rust panics from the Burn catalog. "
        f"Mention `@{slug}` in a comment that holds a pasted panic (or quotes one), or in any comment of an "
        "issue whose description holds one. In the repositories where it is switched on, pasted panics are "
        "answered by themselves."
    )


def note_comment(text: str) -> str:
    return plain(text)


def no_match_comment(result: LookupResult, query: str) -> str:
    """No known record: what was looked up (redacted), and nearby records."""
    if not result.panics:
        return (
            "I found no Rust panic there. Paste the panic as printed (from `thread '…' panicked at`) "
            "or type a few words of its message."
        )
    panic = result.panics[result.answer_panic or 0]
    looked_up = " ".join(redact(panic.message).split()) or " ".join(redact(query).split())
    where = f" at {code_span(redact(str(panic.location))[:QUOTE_MAX])}" if panic.location else ""
    lines = [f"🔍 **No known record** for this panic{where}."]
    if looked_up:
        lines.append("> " + plain(_cut(looked_up, QUOTE_MAX)))
    if not result.matches:
        lines.append("\nNothing in the catalog comes close.")
        return "\n".join(lines)
    lines.append("\n**Nearby records** (not the same message):")
    for match in result.matches:
        record = match.record
        message = code_span(_cut(record.errorMessage, 200))
        link = f" ([source]({record.githubUrl}))" if record.githubUrl else ""
        lines.append(f"- {message}{link} · {confidence_percent(match.confidence)}")
    return "\n".join(lines)
