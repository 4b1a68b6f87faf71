"""The platform-neutral answer card built from a match, and its plain-text/markdown rendering."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.families import FAMILY_NOTE, FamilyAnalysis
from bot.matcher import Match
from bot.records import Record
from bot.redact import redact
from bot.rust_messages import headline

# The echoes listed on a card: how many, and how much of each first line.
MAX_CONSEQUENCES = 5
MAX_CONSEQUENCE_CHARS = 200
# The pasted lines of values under a banner message's title (a tensor check's shapes): how many, how long.
MAX_DETAILS = 8
MAX_DETAIL_CHARS = 300
# The public reports a card links to ("Reported in tracel-ai/burn#4950"): how many, how long a link may be.
MAX_REPORTS = 3
MAX_REPORT_URL_CHARS = 300
NO_ANALYSIS = "No analysis yet for this error: the source link shows where it is raised."
UNDER_REVIEW = (
    "The analysis of this record is under review (it seems to describe another error), so it is not shown: "
    "the source link shows where this panic is raised."
)


@dataclass(frozen=True)
class Card:
    """Everything a chat adapter shows for one answer. Empty strings/tuples mean "not known"."""

    record_id: str
    title: str
    cause: str
    when: str
    solutions: tuple[str, ...]
    example_fix: str
    example_fix_language: str
    prevention_tips: tuple[str, ...]
    source_url: str
    source_label: str
    tags: tuple[str, ...]
    dataset_version: str
    confidence: float
    has_analysis: bool
    catalog_message: str
    under_review: bool = False
    where: str = ""
    """Where the panic is raised: crate and release, file and line, function (`burn-fusion 0.21.0, ...`)."""
    fires_when: str = ""
    """The condition that fires it, one line of the source (an assert's expression, the guarding `if`)."""
    release_note: str = ""
    """What the releases say: "No longer raised since burn-fusion 0.20.0." (often the whole answer)."""
    condition_note: str = ""
    """How the firing condition changed across releases, next to the release shown, and the commit that
    changed it when known: "In burn-tensor 0.16.0 (commit ...): `a != b` before, `c != d` from then on."."""
    consequences: tuple[str, ...] = ()
    """First lines (redacted) of the paste's other panics that follow from this one (echoes, not causes)."""
    panics_doc: str = ""
    """The `# Panics` section of the doc of the function that raises it, when it has one (its own words)."""
    details: tuple[str, ...] = ()
    """What a pasted message opened by a banner says under its title, as printed (redacted): a tensor
    check's values (`Current shape: [2, 3], target shape: [4, 2].`) and its other reasons."""
    analysis: str = "none"
    """Whose analysis the card shows: "record" (written for it), "family:NAME" (its kind's) or "none"."""
    analysis_note: str = ""
    """Said under a family's text: "General advice for panics of this kind (ONNX model import)"."""
    reported_in: tuple[str, ...] = ()
    """Public issues where this error was reported (URLs, the record's `reportedIn`): evidence, not advice."""

    @property
    def summary(self) -> str:
        """One line for notifications and fallbacks."""
        head = f"{self.title} ({self.source_label})" if self.source_label else self.title
        return f"{head}: {self.cause}" if self.cause else head


def _join_nonempty(*parts: str | None) -> str:
    return " ".join(part.strip() for part in parts if part and part.strip())


_ONE_FENCE = re.compile(r"\A```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)\n?```[ \t]*\Z", re.DOTALL)


def unfenced(example: str) -> tuple[str, str]:
    """An example written as one fenced block (```sh ... ```) -> its code and language; else Rust as is."""
    found = _ONE_FENCE.match(example.strip())
    if found is None or "```" in found.group(2):
        return example, "rust"
    return found.group(2), found.group(1).lower() or "rust"


_GITHUB_THREAD = re.compile(
    r"https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(?:issues|pull|discussions)/(\d+)/?(?:[#?].*)?"
)


# A URL every chat markup can carry as it is: no space, bracket, parenthesis, angle bracket, pipe or quote.
_LINKABLE_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#@!$&*+,;=%-]+")


def reported_in(record: Record) -> tuple[str, ...]:
    """The record's `reportedIn` URLs a card can link to: http(s), one line, not too long, at most three."""
    found = getattr(record, "reportedIn", None)
    if not isinstance(found, list | tuple):
        return ()
    urls = [
        url
        for url in found
        if isinstance(url, str) and len(url) <= MAX_REPORT_URL_CHARS and _LINKABLE_URL.fullmatch(url)
    ]
    return tuple(dict.fromkeys(urls))[:MAX_REPORTS]


def reported_label(url: str) -> str:
    """How a report reads on a card: `tracel-ai/burn#4950` for a GitHub issue, pull request or discussion,
    else the URL without its scheme."""
    found = _GITHUB_THREAD.fullmatch(url)
    if found is not None:
        return f"{found.group(1)}#{found.group(2)}"
    return url.split("://", 1)[-1].rstrip("/")


def source_label(record: Record) -> str:
    if not record.filePath:
        return ""
    return f"{record.filePath}:{record.lineNumber}" if record.lineNumber else record.filePath


_LINE_ANCHOR = re.compile(r"#L\d+(?:-L\d+)?$")


def anchored(url: str, line: int | None) -> str:
    """`url` with its line anchor (`#L1480-L1516`, `#L241`) naming `line`: a card names one line."""
    return _LINE_ANCHOR.sub(f"#L{line}", url) if url and line else url


def _title_and_details(pasted: str, catalog_message: str) -> tuple[str, tuple[str, ...]]:
    """The card's title and the pasted lines of values: a message opened by a banner (a tensor check)
    reads as the line that explains it (`Reshape: the given shape doesn't ...`); any other, its first line.
    The pasted text goes back into a channel: no token or home-directory name may ride along."""
    found = headline(pasted, catalog_message)
    if found is None:
        return redact(pasted.splitlines()[0].strip()), ()
    details = tuple(redact(detail)[:MAX_DETAIL_CHARS] for detail in found.details[:MAX_DETAILS])
    return redact(found.title), details


def build_card(
    match: Match,
    pasted_message: str | None = None,
    dataset_version: str | None = None,
    *,
    under_review: bool = False,
    where: str = "",
    fires_when: str = "",
    release_note: str = "",
    condition_note: str = "",
    source_url: str = "",
    consequences: tuple[str, ...] = (),
    panics_doc: str = "",
    family: FamilyAnalysis | None = None,
    first_solution: str = "",
    source: str = "",
) -> Card:
    """The card for a match. The title is the message as pasted (its first line; for a message opened by
    a banner, the line that explains it, the values under it as `details`), else the catalogued one.
    `source_url` and `source` (`file:line`) name the site the card is about (its line in the pasted
    release); by default the record's own, its link anchored at its line.

    `under_review` (the analysis seems to describe another error) keeps the analysis off the card: a wrong
    cause presented with confidence is worse than none. `family` (the analysis of the record's kind) fills a
    card whose record has no analysis of its own, and says so in `analysis_note`."""
    record = match.record
    title_source = (pasted_message or "").strip() or record.errorMessage
    title = record.errorMessage
    details: tuple[str, ...] = ()
    if title_source.strip():
        title, details = _title_and_details(title_source, record.errorMessage)
    show_analysis = record.has_analysis and not under_review
    # A family's text stands in only where nothing was written for the record (nor is under review).
    kind = family if family is not None and not record.has_analysis else None
    if under_review:
        cause = UNDER_REVIEW
    elif record.has_analysis:
        cause = (record.documentation or "").strip()
    elif kind is not None:
        cause = kind.documentation
    else:
        cause = NO_ANALYSIS
    if kind is not None:
        when = _join_nonempty(kind.triggerScenarios, kind.commonSituations)
        solutions, example, tips = kind.solutions, kind.exampleFix.strip("\n"), kind.preventionTips
        tags = tuple(dict.fromkeys((*record.tags, *kind.tags)))
    elif show_analysis:
        when = _join_nonempty(record.triggerScenarios, record.commonSituations)
        solutions = tuple(s.strip() for s in record.solutions if s.strip())
        example = (record.exampleFix or "").strip("\n")
        tips = tuple(t.strip() for t in record.preventionTips if t.strip())
        tags = tuple(record.tags)
    else:
        when, solutions, example, tips = "", (), "", ()
        tags = () if under_review else tuple(record.tags)
    if first_solution and (show_analysis or kind is not None):
        solutions = (first_solution, *solutions)  # the release that no longer raises it, from history
    example, language = unfenced(example)
    return Card(
        record_id=record.id,
        title=title,
        cause=cause,
        when=when,
        solutions=solutions,
        example_fix=example,
        example_fix_language=language,
        prevention_tips=tips,
        source_url=source_url or anchored(record.githubUrl or "", record.lineNumber),
        source_label=source or source_label(record),
        tags=tags,
        dataset_version=dataset_version or "",
        confidence=match.confidence,
        has_analysis=show_analysis or kind is not None,
        catalog_message=record.errorMessage,
        under_review=under_review,
        where=where,
        fires_when=fires_when,
        release_note=release_note,
        condition_note=condition_note,
        consequences=tuple(
            redact(text.strip().splitlines()[0])[:MAX_CONSEQUENCE_CHARS]
            for text in consequences
            if text.strip()
        )[:MAX_CONSEQUENCES],
        panics_doc=panics_doc,
        details=details,
        analysis="record" if show_analysis else f"family:{kind.family}" if kind is not None else "none",
        analysis_note=f"{FAMILY_NOTE} ({kind.title})." if kind is not None else "",
        reported_in=reported_in(record),
    )


@dataclass(frozen=True)
class MarkdownStyle:
    """How one markdown dialect writes a card's parts; `markdown_lines` walks the sections in one order for
    all of them (the terminal's plain markdown, a GitHub comment)."""

    title: Callable[[str], str]
    prose: Callable[[str], str]
    code: Callable[[str], str]
    fix: Callable[[str, str], list[str]]  # (code, language) -> its lines, fences included
    context: Callable[[Card], str]
    report: Callable[[str], str] = lambda url: f"[{reported_label(url)}]({url})"
    """One public report of the error, from its URL."""


def fenced(code: str, language: str) -> list[str]:
    """A fenced block whose fence is longer than any run of backticks inside."""
    longest_run = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest_run + 1)
    return [f"{fence}{language}", code, fence]


def markdown_lines(card: Card, style: MarkdownStyle) -> list[str]:
    """The card's sections, each only when known, in the order every markdown rendering shows them."""
    lines = [style.title(card.title), ""]
    if len(card.details) == 1:
        lines += [f"**Details:** {style.code(card.details[0])}", ""]
    elif card.details:
        lines += ["**Details:**", *[f"- {style.code(text)}" for text in card.details], ""]
    for label, text in (("Where", card.where), ("Release", card.release_note)):
        if text:
            lines += [f"**{label}:** {style.prose(text)}", ""]
    if card.fires_when:
        lines += [f"**Fires when:** {style.code(card.fires_when)}", ""]
    if card.condition_note:
        lines += [f"**Condition changed:** {style.prose(card.condition_note)}", ""]
    for label, text in (
        ("Its docs say it panics", card.panics_doc),
        ("What it means", card.cause),
        ("When it happens", card.when),
    ):
        if text:
            lines += [f"**{label}:** {style.prose(text)}", ""]
    if card.solutions:
        numbered = [f"{n}. {style.prose(s)}" for n, s in enumerate(card.solutions, 1)]
        lines += ["**Solutions:**", *numbered, ""]
    if card.example_fix:
        lines += ["**Example fix:**", *style.fix(card.example_fix, card.example_fix_language), ""]
    if card.prevention_tips:
        lines += ["**Prevention:**", *[f"- {style.prose(tip)}" for tip in card.prevention_tips], ""]
    if card.analysis_note:
        lines += [f"_{style.prose(card.analysis_note)}_", ""]
    if card.reported_in:
        lines += ["**Reported in:** " + ", ".join(style.report(url) for url in card.reported_in), ""]
    if card.consequences:
        lines += [
            "**Also in this paste, following from this panic:**",
            *[f"- {style.code(text)}" for text in card.consequences],
            "",
        ]
    lines.append(style.context(card))
    return lines


def render_markdown(card: Card) -> str:
    """Markdown that reads well as plain text too: the CLI and every chat fallback use it."""
    style = MarkdownStyle(
        title=lambda title: f"**{title}**",
        prose=lambda text: text,
        code=lambda text: f"`{text}`",
        fix=fenced,
        context=context_line,
    )
    return "\n".join(markdown_lines(card, style)).strip() + "\n"


def card_json(
    card: Card, site: dict[str, Any] | None = None, history: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The card as data (`lookup --json`'s `card`, `card ID --format json`): what the chat cards show, and
    the record's history across releases (`bot.history.history_json`, null for a hand-written record)."""
    return {
        "record_id": card.record_id,
        "title": card.title,
        "details": list(card.details),
        "analysis": card.analysis,
        "analysis_note": card.analysis_note or None,
        "documentation": card.cause if card.has_analysis else None,
        "note": None if card.has_analysis else card.cause,
        "when": card.when or None,
        "solutions": list(card.solutions),
        "exampleFix": card.example_fix or None,
        "exampleFixLanguage": card.example_fix_language if card.example_fix else None,
        "preventionTips": list(card.prevention_tips),
        "tags": list(card.tags),
        "where": card.where or None,
        "fires_when": card.fires_when or None,
        "release_note": card.release_note or None,
        "condition_note": card.condition_note or None,
        "panics_doc": card.panics_doc or None,
        "consequences": list(card.consequences),
        "reported_in": [{"label": reported_label(url), "url": url} for url in card.reported_in],
        "source": {"label": card.source_label or None, "url": card.source_url or None},
        "site": site,
        "history": history,
        "dataset_version": card.dataset_version or None,
        "confidence": card.confidence,
    }


def context_line(card: Card) -> str:
    """Source, tags, data set version and confidence on one line."""
    parts = []
    if card.source_label:
        parts.append(
            f"Source: [{card.source_label}]({card.source_url})" if card.source_url else card.source_label
        )
    if card.tags:
        parts.append("Tags: " + ", ".join(card.tags))
    if card.dataset_version:
        parts.append(f"Data set {card.dataset_version}")
    parts.append(f"Confidence {confidence_percent(card.confidence)}")
    return " · ".join(parts)


def confidence_percent(confidence: float) -> str:
    """Rounded down, so that a capped 0.995 never reads as a certain 100 %."""
    return f"{int(confidence * 100)}%"
