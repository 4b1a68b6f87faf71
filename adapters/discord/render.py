"""Discord embeds and component specs for panicbot's answers: the card, no-match notes, usage and errors.

Pure: core results in, `DiscordMessage` (content, `discord.Embed`s, button/select specs) out; no connection.
Sizes are counted in UTF-16 code units, never fewer than characters, so a message stays within Discord's
limits however they are counted (an over-long embed is refused whole with 50035 Invalid Form Body).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import discord
from discord.utils import escape_markdown, escape_mentions

from bot.card import NO_ANALYSIS, Card, confidence_percent, reported_label
from bot.matcher import LookupResult, Match
from bot.records import Record
from bot.redact import redact

# Discord's limits that shape what is built here (the tests check every limit on the JSON sent: fields
# <= 25, footer <= 2,048, <= 5 buttons a row, custom_id <= 100 and the rest).
TITLE_MAX = 256
DESCRIPTION_MAX = 4_096
FIELD_VALUE_MAX = 1_024
EMBEDS_TOTAL_MAX = 6_000
CONTENT_MAX = 2_000
LINK_URL_MAX = 512
SELECT_OPTIONS_MAX = 25
OPTION_TEXT_MAX = 100
CHOICES_MAX = 25
CHOICE_TEXT_MAX = 100

# A card reads best well under the limits: the cause starts at this size and every part may shrink.
CAUSE_START = 3_000
FIX_FIELDS_START = 3
# A part is never cut below this many characters (the parts left then always fit in 6,000).
MIN_PART = 200
SHRINK = 0.8
QUOTE_MAX = 300
# The site facts at the top of the description and each echo listed near the end (units, escaped): short by
# nature, so a long one is cut here; with the other parts at their floor they still fit in 6,000.
WHERE_MAX = 300
RELEASE_NOTE_MAX = 500
FIRES_WHEN_MAX = 300
PANICS_DOC_MAX = 300
CONDITION_NOTE_MAX = 300
CONSEQUENCE_MAX = 300
CONSEQUENCES_NAME = "Also in this paste, following from this panic"
# The pasted values under a banner message's title (a tensor check's shapes), first of the facts.
DETAILS_MAX = 500
DETAILS_LABEL = "**Details:**"

ELLIPSIS = "…"
FENCE = "```"
ZWSP = "\u200b"
ID_PREFIX = "id:"
# Record ids go into custom_ids (<= 100 characters with the rest); longer ones travel as a hash.
RECORD_KEY_MAX = 40

SEVERITY_COLOURS = {
    "critical": 0x992D22,
    "fatal": 0x992D22,
    "error": 0xE74C3C,
    "warning": 0xE67E22,
    "warn": 0xE67E22,
    "info": 0x3498DB,
    "notice": 0x3498DB,
}
DEFAULT_COLOUR = 0x95A5A6
VOTE_EMOJI = {"up": "👍", "down": "👎"}
DISMISS_EMOJI = "🗑️"

# custom_id templates: discord.py's DynamicItem routes a click by these, even after a restart.
POST_TEMPLATE = r"pb:post:(?P<confidence>[0-9]{1,4}):(?P<record>.+)"
VOTE_TEMPLATE = r"pb:vote:(?P<vote>up|down):(?P<confidence>[0-9]{1,4}):(?P<asker>[0-9]{1,20}):(?P<record>.+)"
DISMISS_TEMPLATE = r"pb:del:(?P<asker>[0-9]{1,20})"
MORE_TEMPLATE = r"pb:more"
_OPTION_VALUE = re.compile(r"(?P<confidence>[0-9]{1,4}):(?P<record>.+)")
_WHITESPACE = re.compile(r"\s+")
_LONG_BACKTICKS = re.compile(r"`{3,}")
_URL = re.compile(r"https?://[^\s<>\"]+")
_LANGUAGE = re.compile(r"[A-Za-z0-9+#-]{1,20}")


# -- specs -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ButtonSpec:
    """A button: `custom_id` for ours, `url` for a link button (which has no custom_id)."""

    style: str  # "primary", "secondary", "success", "danger" or "link"
    label: str | None = None
    emoji: str | None = None
    custom_id: str | None = None
    url: str | None = None
    row: int = 0


@dataclass(frozen=True)
class OptionSpec:
    label: str
    value: str
    description: str | None = None
    default: bool = False


@dataclass(frozen=True)
class SelectSpec:
    custom_id: str
    placeholder: str
    options: tuple[OptionSpec, ...]
    row: int = 1


ComponentSpec = ButtonSpec | SelectSpec


@dataclass
class DiscordMessage:
    """What a handler sends: `content` and/or embeds, and the components of its view."""

    content: str | None = None
    embeds: list[discord.Embed] = field(default_factory=list)
    components: list[ComponentSpec] = field(default_factory=list)


@dataclass(frozen=True)
class Action:
    """A parsed custom_id: what a click asks for."""

    kind: str  # "post", "vote", "dismiss" or "more"
    record_key: str = ""
    confidence: float = 0.0
    vote: str | None = None
    asker_id: int = 0


# -- text helpers ------------------------------------------------------------------------------------------


def units(text: str) -> int:
    """Length in UTF-16 code units: an emoji counts 2, so a limit met here is met however Discord counts."""
    return len(text.encode("utf-16-le")) // 2


def _head(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` units."""
    size = 0
    for index, character in enumerate(text):
        size += 2 if ord(character) > 0xFFFF else 1
        if size > limit:
            return text[:index]
    return text


def _no_dangling_escape(text: str) -> str:
    # A cut right after a lone backslash would escape whatever follows it (the ellipsis, a closing mark).
    trailing = len(text) - len(text.rstrip("\\"))
    return text[:-1] if trailing % 2 else text


def cut(text: str, limit: int) -> str:
    """`text` within `limit` units, cut on a line, else a word boundary, and marked with an ellipsis."""
    if units(text) <= limit:
        return text
    room = max(limit - 1, 0)
    head = _head(text, room)
    # A boundary far back would throw away most of the room: then a hard cut reads better.
    for separator in ("\n", " "):
        at = head.rfind(separator)
        if at >= room // 2:
            head = head[:at].rstrip()
            break
    return _no_dangling_escape(head) + ELLIPSIS


def cut_markdown(text: str, limit: int) -> str:
    """Like `cut`, never leaving a code fence open: an open fence would swallow the rest of the card."""
    shown = cut(text, limit)
    if shown.count(FENCE) % 2:
        shown = shown[: shown.rfind(FENCE)].rstrip() + ELLIPSIS
    return shown


def one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text or "").strip()


def plain(text: str) -> str:
    """Text shown as typed: no markdown, no mention syntax (pings are off anyway; this keeps it readable)."""
    return escape_mentions(escape_markdown(text))


def _inline_code(text: str) -> str:
    # A backtick would end the inline code early.
    return "`" + text.replace("`", "'") + "`"


def _code_span(text: str, limit: int) -> str:
    """Raw `text` as inline code on one line within `limit` units: inside it markdown is inert, and the
    mention syntax is broken up as in `plain`."""
    return _inline_code(cut(escape_mentions(one_line(text).replace("`", "'")), max(limit - 2, 1)))


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _with_code(text: str, limit: int) -> str:
    """Raw `text` whose `code` spans (a function name) stay code and the rest is `plain`, within `limit`
    units: a span that does not fit is cut inside, so no backtick is left open."""
    text = one_line(text)
    pieces: list[tuple[str, bool]] = []
    start = 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [(text[start : span.start()], False), (span.group(1), True)]
        start = span.end()
    pieces.append((text[start:], False))
    shown = ""
    for raw, is_code in pieces:
        if not raw:
            continue
        piece = _code_span(raw, FIELD_VALUE_MAX) if is_code else plain(raw)
        room = limit - units(shown)
        if units(piece) > room:
            if room >= len("`…`"):
                shown += _code_span(raw, room) if is_code else cut(piece, room)
            break
        shown += piece
    return shown


def _valid_url(url: str | None, limit: int) -> str | None:
    """An http(s) URL Discord accepts as an embed/button link, else None (a bad one is a 50035)."""
    url = (url or "").strip()
    return url if _URL.fullmatch(url) and len(url) <= limit else None


def _link(label: str, url: str | None) -> str:
    """A masked link `[label](<url>)`; the angle brackets keep Discord from previewing the page."""
    text = plain(label).replace("[", "\\[").replace("]", "\\]")
    target = _valid_url(url, 1_000)
    if target is None:
        return text
    return f"[{text}](<{target.replace(')', '%29').replace('>', '%3E')}>)"


def embed_size(embed: discord.Embed) -> int:
    """What Discord counts towards the 6,000 of a message: title, description, fields, footer, author."""
    data = embed.to_dict()
    parts = [data.get("title", ""), data.get("description", "")]
    parts += [text for item in data.get("fields", []) for text in (item["name"], item["value"])]
    parts += [data.get("footer", {}).get("text", ""), data.get("author", {}).get("name", "")]
    return sum(units(part) for part in parts)


# -- record keys and custom ids ----------------------------------------------------------------------------


def record_key(record_id: str) -> str:
    """The record as written into a custom_id: its id, or a stable hash of a long or odd one."""
    if len(record_id) <= RECORD_KEY_MAX and record_id.isprintable() and not record_id.startswith("~"):
        return record_id
    return "~" + hashlib.sha256(record_id.encode()).hexdigest()[: RECORD_KEY_MAX - 1]


class RecordKeys:
    """Maps the hashed keys of a catalog back to record ids (short ids are their own key)."""

    def __init__(self, record_ids: Iterable[str]) -> None:
        self._long = {record_key(rid): rid for rid in record_ids if record_key(rid) != rid}

    def resolve(self, key: str) -> str:
        return self._long.get(key, key)


def confidence_code(confidence: float) -> str:
    return str(max(0, min(1000, round(confidence * 1000))))


def _confidence(code: str) -> float:
    return min(1.0, int(code) / 1000)


def post_id(record_id: str, confidence: float) -> str:
    return f"pb:post:{confidence_code(confidence)}:{record_key(record_id)}"


def vote_id(vote: str, record_id: str, confidence: float, asker_id: int) -> str:
    return f"pb:vote:{vote}:{confidence_code(confidence)}:{asker_id}:{record_key(record_id)}"


def dismiss_id(asker_id: int) -> str:
    return f"pb:del:{asker_id}"


MORE_ID = "pb:more"


def parse_custom_id(custom_id: str) -> Action | None:
    """The action behind one of our custom_ids; None for anything else (never raises)."""
    if match := re.fullmatch(POST_TEMPLATE, custom_id):
        return Action("post", match["record"], _confidence(match["confidence"]))
    if match := re.fullmatch(VOTE_TEMPLATE, custom_id):
        return Action(
            "vote", match["record"], _confidence(match["confidence"]), match["vote"], int(match["asker"])
        )
    if match := re.fullmatch(DISMISS_TEMPLATE, custom_id):
        return Action("dismiss", asker_id=int(match["asker"]))
    if custom_id == MORE_ID:
        return Action("more")
    return None


def option_value(record_id: str, confidence: float) -> str:
    return f"{confidence_code(confidence)}:{record_key(record_id)}"


def parse_option_value(value: str) -> tuple[str, float] | None:
    """(record key, confidence) from a "More matches" option value; None for junk."""
    match = _OPTION_VALUE.fullmatch(value or "")
    return (match["record"], _confidence(match["confidence"])) if match else None


# -- the card ----------------------------------------------------------------------------------------------


def severity_colour(severity: str | None) -> int:
    return SEVERITY_COLOURS.get((severity or "").strip().lower(), DEFAULT_COLOUR)


def _title(card: Card) -> str:
    title = one_line(card.title) or one_line(card.catalog_message) or card.record_id or "Rust panic"
    # The title is the pasted line: a token in it must not be posted (or shared) again.
    return cut(plain(redact(title)), TITLE_MAX)


def _code(fix: str) -> str:
    """The fix as it goes between fences: no run of three backticks left to close the block early."""
    return _LONG_BACKTICKS.sub(lambda run: ZWSP.join(run.group()), fix)


def _code_chunks(code: str, size: int) -> list[list[str]]:
    """`code` as runs of whole lines of at most `size` units each; longer lines are split."""
    chunks: list[list[str]] = [[]]
    length = 0
    for line in code.split("\n"):
        pieces = [line]
        while units(pieces[-1]) > size:
            head = _head(pieces[-1], size) or pieces[-1][:1]
            pieces[-1:] = [head, pieces[-1][len(head) :]]
        for piece in pieces:
            extra = units(piece) + (1 if chunks[-1] else 0)
            if chunks[-1] and length + extra > size:
                chunks.append([])
                length, extra = 0, units(piece)
            chunks[-1].append(piece)
            length += extra
    return chunks


def _fix_fields(card: Card, max_fields: int) -> list[tuple[str, str]]:
    """(name, value) fields for the example fix, each a closed ```rust block; the rest is counted."""
    language = card.example_fix_language if _LANGUAGE.fullmatch(card.example_fix_language) else ""
    opening, closing = f"{FENCE}{language}\n", f"\n{FENCE}"
    note_room = 40
    room = FIELD_VALUE_MAX - units(opening) - units(closing) - note_room
    chunks = _code_chunks(_code(card.example_fix), room)
    shown = chunks[:max_fields]
    left = sum(len(chunk) for chunk in chunks[max_fields:])
    fields = []
    for number, chunk in enumerate(shown, 1):
        name = "Example fix" if len(shown) == 1 else f"Example fix ({number}/{len(shown)})"
        value = opening + "\n".join(chunk) + closing
        if number == len(shown) and left:
            value += f"\n*{ELLIPSIS}{left} more line{'s' if left != 1 else ''} at the source*"
        fields.append((name, value))
    return fields


def _code_list_value(items: Sequence[str], limit: int) -> str:
    """As many items as fit in `limit` units, each as inline code, then how many were left out."""
    lines: list[str] = []
    size = 0
    for index, item in enumerate(items):
        line = "• " + _code_span(item, CONSEQUENCE_MAX)
        note_room = 20 if index + 1 < len(items) else 0
        if size + units(line) + 1 + note_room <= limit:
            lines.append(line)
            size += units(line) + 1
            continue
        shown = index
        if index == 0:
            # A first item longer than the room is cut rather than lost: the list says something.
            lines.append("• " + _code_span(item, limit - note_room - 1 - units("• ")))
            shown = 1
        if len(items) > shown:
            lines.append(f"*{ELLIPSIS}and {len(items) - shown} more*")
        break
    return "\n".join(lines)


def shown_where(card: Card) -> str:
    """The card's "where", unless it only repeats the source location (crate and file:line, no release and
    no function): the Source field already says that."""
    where = one_line(card.where)
    components = set(card.source_label.split("/"))
    if where and all(token in components for token in re.split(r"[\s,]+", where) if token):
        return ""
    return where


def _facts(card: Card) -> str:
    """The pasted values, where the panic is raised, what the releases say and the condition that fires
    it, a line each (several values: a list)."""
    lines = []
    details = [item for item in card.details if one_line(item)]
    if len(details) == 1:
        lines.append(f"{DETAILS_LABEL} " + _code_span(details[0], min(DETAILS_MAX, CONSEQUENCE_MAX)))
    elif details:
        lines += [DETAILS_LABEL, _code_list_value(details, DETAILS_MAX)]
    if where := shown_where(card):
        lines.append("**Where:** " + _with_code(where, WHERE_MAX))
    if release := one_line(card.release_note):
        lines.append("**Release:** " + cut(plain(release), RELEASE_NOTE_MAX))
    if one_line(card.fires_when):
        lines.append("**Fires when:** " + _code_span(card.fires_when, FIRES_WHEN_MAX))
    if one_line(card.condition_note):
        lines.append("**Condition changed:** " + _with_code(card.condition_note, CONDITION_NOTE_MAX))
    if doc := one_line(card.panics_doc):
        lines.append("**Its docs say it panics:** " + cut(plain(doc), PANICS_DOC_MAX))
    if card.reported_in:
        # Masked links, angle brackets keeping Discord from unfurling a preview of each issue.
        reports = ", ".join(f"[{reported_label(url)}](<{url}>)" for url in card.reported_in)
        lines.append("**Reported in:** " + reports)
    return "\n".join(lines)


def _description(facts: str, body: str) -> str | None:
    return "\n\n".join(part for part in (facts, body) if part) or None


def _list_value(items: Sequence[str], numbered: bool, limit: int) -> str:
    """As many items as fit in `limit` units, then how many were left out."""
    lines: list[str] = []
    size = 0
    for index, item in enumerate(items):
        marker = f"{index + 1}." if numbered else "•"
        line = f"{marker} {one_line(item)}"
        note_room = 20 if index + 1 < len(items) else 0
        if size + units(line) + 1 + note_room <= limit:
            lines.append(line)
            size += units(line) + 1
            continue
        shown = index
        if index == 0:
            # A first item longer than the room is cut rather than lost: the list says something.
            lines.append(cut_markdown(line, limit - note_room - 1))
            shown = 1
        if len(items) > shown:
            lines.append(f"*{ELLIPSIS}and {len(items) - shown} more*")
        break
    return "\n".join(lines)


@dataclass
class _Plan:
    """How much of each part to show; squeezed step by step until the card fits in 6,000."""

    cause: int = CAUSE_START
    when: int = FIELD_VALUE_MAX
    solutions: int = FIELD_VALUE_MAX
    fix_fields: int = FIX_FIELDS_START
    prevention: bool = True
    consequences: int = FIELD_VALUE_MAX

    def squeeze(self) -> bool:
        """Shrink the next part; False when everything is at its floor."""
        if self.prevention:
            self.prevention = False
            return True
        if self.fix_fields > 1:
            self.fix_fields -= 1
            return True
        sizes = {
            "cause": self.cause,
            "when": self.when,
            "solutions": self.solutions,
            "consequences": self.consequences,
        }
        name, size = max(sizes.items(), key=lambda item: item[1])
        if size <= MIN_PART:
            return False
        setattr(self, name, max(MIN_PART, int(size * SHRINK)))
        return True


def _footer(card: Card) -> str:
    # A family's advice says so first: the footer is always shown, whatever the plan cut.
    parts = [card.analysis_note, "panicbot"] if card.analysis_note else ["panicbot"]
    if card.dataset_version:
        parts.append(f"Data set {one_line(card.dataset_version)[:100]}")
    parts.append(f"Confidence {confidence_percent(card.confidence)}")
    return " · ".join(parts)


def _card_embed(card: Card, plan: _Plan, severity: str | None, shared_by: str | None) -> discord.Embed:
    embed = discord.Embed(
        title=_title(card),
        url=_valid_url(card.source_url, 2_000),
        colour=severity_colour(severity),
    )
    if shared_by:
        embed.set_author(name=cut(f"Shared by {one_line(shared_by)}", 100))
    # The site facts open the description: the first thing read under the title.
    facts = _facts(card)
    room = DESCRIPTION_MAX - (units(facts) + 2 if facts else 0)
    if not card.has_analysis:
        # Records without analysis (or with one under review) get a small card: where the panic is raised.
        embed.description = _description(facts, cut(card.cause or NO_ANALYSIS, room))
    else:
        embed.description = _description(
            facts, cut_markdown(card.cause, min(plan.cause, room)) if card.cause else ""
        )
        if card.when:
            embed.add_field(name="When it happens", value=cut_markdown(card.when, plan.when), inline=False)
        if card.solutions:
            value = _list_value(card.solutions, True, plan.solutions)
            embed.add_field(name="Solutions", value=value, inline=False)
        if card.example_fix.strip():
            for name, value in _fix_fields(card, plan.fix_fields):
                embed.add_field(name=name, value=value, inline=False)
        if card.prevention_tips and plan.prevention:
            value = _list_value(card.prevention_tips, False, FIELD_VALUE_MAX)
            embed.add_field(name="Prevention", value=value, inline=False)
    consequences = [item for item in card.consequences if one_line(item)]
    if consequences:
        value = _code_list_value(consequences, min(plan.consequences, FIELD_VALUE_MAX))
        embed.add_field(name=CONSEQUENCES_NAME, value=value, inline=False)
    if card.source_label or card.source_url:
        label = card.source_label or "source"
        label = label if len(label) <= 200 else ELLIPSIS + label[-199:]
        source = _link(label, card.source_url)
        # A link cut short is no link: too long a one shows as the plain location.
        source = source if units(source) <= FIELD_VALUE_MAX else cut(plain(label), FIELD_VALUE_MAX)
        embed.add_field(name="Source", value=source, inline=True)
    if card.tags:
        tags = cut(plain(", ".join(one_line(tag) for tag in card.tags)), MIN_PART)
        embed.add_field(name="Tags", value=tags, inline=True)
    embed.set_footer(text=_footer(card))
    return embed


def card_embed(card: Card, *, severity: str | None = None, shared_by: str | None = None) -> discord.Embed:
    """The card as one embed within every limit: where the panic is raised, what the releases say and the
    condition that fires it open the description, before the cause; the paste's other panics that follow
    from this one come before the source. Over 6,000 it drops the prevention tips, then shows less of the
    fix, then cuts the longest prose or list, never below a readable floor."""
    plan = _Plan(consequences=FIELD_VALUE_MAX if card.consequences else 0)
    while True:
        embed = _card_embed(card, plan, severity, shared_by)
        if embed_size(embed) <= EMBEDS_TOTAL_MAX or not plan.squeeze():
            return embed


def _vote_button(
    vote: str, card: Card, asker_id: int, pressed: str | None, tally: dict[str, int] | None
) -> ButtonSpec:
    count = (tally or {}).get(vote, 0)
    style = "secondary"
    if pressed == vote:
        style = "success" if vote == "up" else "danger"
    return ButtonSpec(
        style=style,
        label=str(count) if count else None,
        emoji=VOTE_EMOJI[vote],
        custom_id=vote_id(vote, card.record_id, card.confidence, asker_id),
    )


def card_components(
    card: Card,
    *,
    ephemeral: bool,
    asker_id: int = 0,
    options: Sequence[OptionSpec] = (),
    vote: str | None = None,
    tally: dict[str, int] | None = None,
) -> list[ComponentSpec]:
    """The card's view. Private (ephemeral): Post publicly, 👍/👎, the source, More matches.
    Public: 👍/👎 with everyone's counts, 🗑 for the asker (and moderators), the source."""
    if vote not in (None, "up", "down"):
        raise ValueError(f"vote must be 'up', 'down' or None, not {vote!r}")
    buttons: list[ComponentSpec] = []
    if ephemeral:
        buttons.append(
            ButtonSpec(
                style="primary", label="Post publicly", custom_id=post_id(card.record_id, card.confidence)
            )
        )
        buttons += [_vote_button(v, card, 0, vote, None) for v in ("up", "down")]
    else:
        buttons += [_vote_button(v, card, asker_id, None, tally) for v in ("up", "down")]
        buttons.append(ButtonSpec(style="secondary", emoji=DISMISS_EMOJI, custom_id=dismiss_id(asker_id)))
    url = _valid_url(card.source_url, LINK_URL_MAX)
    if url:
        buttons.append(ButtonSpec(style="link", label="Source", url=url))
    # Discord refuses a menu with two options of one value; a menu of one choice says nothing.
    distinct = tuple({option.value: option for option in reversed(options)}.values())[::-1]
    if ephemeral and len(distinct) > 1:
        shown = distinct[:SELECT_OPTIONS_MAX]
        buttons.append(SelectSpec(custom_id=MORE_ID, placeholder="More matches", options=shown, row=1))
    return buttons


def card_message(
    card: Card,
    *,
    severity: str | None = None,
    ephemeral: bool,
    asker_id: int = 0,
    options: Sequence[OptionSpec] = (),
    vote: str | None = None,
    tally: dict[str, int] | None = None,
    shared_by: str | None = None,
) -> DiscordMessage:
    """The answer card: one embed coloured by severity, and its buttons (see `card_components`)."""
    return DiscordMessage(
        embeds=[card_embed(card, severity=severity, shared_by=shared_by)],
        components=card_components(
            card, ephemeral=ephemeral, asker_id=asker_id, options=options, vote=vote, tally=tally
        ),
    )


def _location(record: Record) -> str:
    if not record.filePath:
        return ""
    return f"{record.filePath}:{record.lineNumber}" if record.lineNumber else record.filePath


def match_options(matches: Sequence[Match], shown_record_id: str) -> list[OptionSpec]:
    """The "More matches" menu: every match (the shown one marked as chosen), best first."""
    options: list[OptionSpec] = []
    seen: set[str] = set()
    for match in matches[:SELECT_OPTIONS_MAX]:
        record = match.record
        value = option_value(record.id, match.confidence)
        if value in seen:
            continue
        seen.add(value)
        where = _location(record)
        where = where if len(where) <= 70 else ELLIPSIS + where[-69:]
        description = " · ".join(part for part in (where, confidence_percent(match.confidence)) if part)
        options.append(
            OptionSpec(
                label=cut(one_line(record.errorMessage) or record.id, OPTION_TEXT_MAX),
                value=value,
                description=cut(description, OPTION_TEXT_MAX),
                default=record.id == shown_record_id,
            )
        )
    return options


def with_default(options: Sequence[OptionSpec], value: str) -> list[OptionSpec]:
    """The same menu with `value` marked as the one shown."""
    return [
        OptionSpec(option.label, option.value, option.description, option.value == value)
        for option in options
    ]


# -- other messages ----------------------------------------------------------------------------------------


def _match_line(match: Match) -> str:
    record = match.record
    message = cut(one_line(record.errorMessage), 120)
    head = _link(message, record.githubUrl) if record.githubUrl else f"**{plain(message)}**"
    where = _location(record)
    where = f" · {_inline_code(where[-150:])}" if where else ""
    return f"• {head}{where} · confidence {confidence_percent(match.confidence)}"


def _with_lines(head: str, lines: Sequence[str], limit: int = CONTENT_MAX) -> str:
    """`head`, then as many whole lines as fit in `limit`, then how many were left out."""
    text = head
    for index, line in enumerate(lines):
        note = f"\n*{ELLIPSIS}and {len(lines) - index} more*"
        if units(text) + 1 + units(line) + units(note) > limit:
            return text + note
        text += "\n" + line
    return text


def no_match_message(result: LookupResult, *, query: str) -> DiscordMessage:
    """No known record: says so, quotes what was looked up, lists nearby records. Never an embed, so it
    never looks like a card."""
    if not result.panics:
        return DiscordMessage(
            content=(
                "I found no Rust panic in that text. Paste the panic as printed (from "
                "`thread '…' panicked at`) or type a few words of its message."
            )
        )
    panic = result.panics[result.answer_panic or 0]
    # Quoted back in public (help channels): no token or home-directory name rides along.
    looked_up = one_line(redact(panic.message)) or one_line(redact(query))
    where = f" at {_inline_code(redact(str(panic.location)))}" if panic.location else ""
    head = f"🔍 **No known record** for this panic{where}."
    if looked_up:
        head += "\n> " + cut(plain(looked_up), QUOTE_MAX)
    if not result.matches:
        return DiscordMessage(content=head + "\nNothing in the catalog comes close.")
    head += "\n**Nearby records** (not the same message):"
    return DiscordMessage(content=_with_lines(head, [_match_line(m) for m in result.matches]))


def usage_message() -> DiscordMessage:
    """How to ask panicbot."""
    return DiscordMessage(
        content=(
            "**panicbot** explains Rust panics from the Burn catalog.\n"
            "• `/panic query:` paste a panic or type a few words of its message. The answer is only for "
            "you (unless you add `public: True`); **Post publicly** shares it.\n"
            "• Mention panicbot in a message with a paste, or in a reply to the message holding one.\n"
            "• On any message: **Apps → Explain this panic**.\n"
            "• In the help channels, pastes of known panics are answered by themselves."
        )
    )


def error_message(text: str) -> DiscordMessage:
    """A short note when something failed; `text` is plain."""
    return DiscordMessage(content="⚠️ " + cut(plain(one_line(text) or "Something went wrong."), 1_000))


def posted_message() -> DiscordMessage:
    """What the private card turns into once it was posted for everyone."""
    return DiscordMessage(content="Posted in the channel for everyone.")
