"""Block Kit for panicbot's Slack answers: the card, no-match notes, more matches, help and errors.

Pure: core results in, `SlackMessage` (notification text + block dicts) out. Blocks are built with
`slack_sdk.models.blocks`, whose `to_dict()` checks Slack's per-block limits; the budgets here keep whole
messages under the limits the SDK does not check (block count, total size).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from bot.card import NO_ANALYSIS, Card, confidence_percent, reported_label
from bot.matcher import LookupResult, Match
from bot.redact import redact

ACTION_SHARE = "panicbot_share"
ACTION_MORE = "panicbot_more"
ACTION_FULL_FIX = "panicbot_full_fix"
ACTION_VOTE_UP = "panicbot_vote_up"
ACTION_VOTE_DOWN = "panicbot_vote_down"

HEADER_MAX = HeaderBlock.text_max_length  # 150
SECTION_MAX = SectionBlock.text_max_length  # 3,000
# Slack allows 50 blocks; staying strictly below leaves no off-by-one doubt.
MAX_BLOCKS = 49
# Messages whose blocks total ~12-13k characters fail with msg_blocks_too_long. The JSON of the blocks
# (ASCII-escaped, so every non-ASCII character counts several times) over-counts: a strict budget.
MESSAGE_BUDGET = 12_000
FALLBACK_MAX = 300
CONTEXT_MAX = 1_000
BUTTON_VALUE_MAX = ButtonElement.value_max_length  # 2,000
# A part cut below this many characters says too little to keep: it is dropped instead.
MIN_PART = 200
# Each squeeze keeps this share of the part it shrinks.
SHRINK = 0.9
# The site facts under the title (escaped characters, inline code with its backticks) and each echo listed
# near the end: short by nature, so a long one is cut here whatever room the message has.
WHERE_MAX = 300
RELEASE_NOTE_MAX = 600
FIRES_WHEN_MAX = 300
PANICS_DOC_MAX = 300
CONDITION_NOTE_MAX = 300
CONSEQUENCE_MAX = 300
CONSEQUENCES_LABEL = "*Also in this paste, following from this panic*"
# The pasted values under a banner message's title (a tensor check's shapes), first of the facts.
DETAILS_MAX = 900
DETAILS_LABEL = "*Details:*"

ELLIPSIS = "…"
FENCE = "```"
# Looks like a backtick but cannot close Slack's code block early.
FENCE_STANDIN = "ʼ"
_VOTE_EMOJI = {"up": "👍", "down": "👎"}
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
_LONG_BACKTICKS = re.compile(r"`{3,}")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class SlackMessage:
    """What a listener posts: `text` is the notification/fallback, `blocks` the Block Kit payload."""

    text: str
    blocks: list[dict[str, Any]]


# -- text helpers -------------------------------------------------------------------------------------


def escape_mrkdwn(text: str) -> str:
    """Slack's control characters as entities, `&` first so the others are not escaped twice."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _hard_cut(text: str, limit: int) -> str:
    """At most `limit` characters of escaped text, never ending inside an `&amp;`/`&lt;`/`&gt;` entity."""
    head = text[: max(limit, 0)]
    amp = head.rfind("&", max(len(head) - 4, 0))
    if len(head) < len(text) and amp != -1 and ";" not in head[amp:]:
        head = head[:amp]
    return head


def _cut(text: str, limit: int) -> str:
    """Escaped text cut to `limit` characters on a line, else a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    room = limit - len(ELLIPSIS)
    head = _hard_cut(text, room)
    # A boundary far back would throw away most of the room: then a hard cut reads better.
    for separator in ("\n", " "):
        at = head.rfind(separator)
        if at >= room // 2:
            return head[:at].rstrip() + ELLIPSIS
    return head + ELLIPSIS


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _link(url: str, label: str) -> str:
    """A `<url|label>` link; `label` is raw text. `|` and `>` would end the link early, so they go."""
    safe_url = escape_mrkdwn(url.strip()).replace("|", "%7C").replace(" ", "%20")
    return f"<{safe_url}|{escape_mrkdwn(label).replace('|', '¦')}>"


def _inline_code(text: str, limit: int) -> str:
    """Raw `text` as inline code within `limit` characters: escaped, on one line, its backticks replaced so
    none ends the code early. Inside it, `*bold*` and `<@U123>` stay text."""
    code = escape_mrkdwn(_one_line(text).replace("`", FENCE_STANDIN))
    return f"`{_cut(code, limit - 2)}`"


def _mrkdwn(text: str) -> MarkdownTextObject:
    # verbatim: Slack must not turn pasted `@here` or channel names into live mentions; the links and user
    # mentions built here use the explicit <...> syntax, which still works.
    return MarkdownTextObject(text=text, verbatim=True)


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=_mrkdwn(_cut(text, SECTION_MAX)))


def _context(text: str) -> ContextBlock:
    return ContextBlock(elements=[_mrkdwn(_cut(text, SECTION_MAX))])


def _button(label: str, action_id: str, value: str, style: str | None = None) -> ButtonElement:
    return ButtonElement(text=PlainTextObject(text=label), action_id=action_id, value=value, style=style)


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    # to_dict() runs the SDK's validators: an over-long header or section raises here, not at Slack.
    return [block.to_dict() for block in blocks]


def message_size(blocks: list[dict[str, Any]]) -> int:
    """The size the budget is measured in: the blocks as (ASCII) JSON."""
    return len(json.dumps(blocks))


def _fits(blocks: list[dict[str, Any]]) -> bool:
    return len(blocks) <= MAX_BLOCKS and message_size(blocks) <= MESSAGE_BUDGET


def _fallback(text: str) -> str:
    return _cut(escape_mrkdwn(_one_line(text)), FALLBACK_MAX)


def _list_text(label: str, items: list[str], numbered: bool, limit: int) -> str:
    """`label` and as many escaped items as fit in `limit`, then how many were left out."""
    lines = [label]
    size = len(label)
    for index, item in enumerate(items):
        marker = f"{index + 1}." if numbered else "•"
        line = f"{marker} {escape_mrkdwn(_one_line(item))}"
        # Room for the "…and N more" line, should a later item not fit.
        note_room = 20 if index + 1 < len(items) else 0
        if size + 1 + len(line) + note_room <= limit:
            lines.append(line)
            size += 1 + len(line)
            continue
        shown = index
        if index == 0:
            # A first item longer than the room is cut rather than lost: the list says something.
            lines.append(_cut(line, limit - size - 1 - note_room))
            shown = 1
        if len(items) > shown:
            lines.append(f"_{ELLIPSIS}and {len(items) - shown} more_")
        break
    return "\n".join(lines)


def _code_list(label: str, items: Sequence[str], limit: int) -> str:
    """`label` and as many items as fit in `limit`, each as inline code, then how many were left out."""
    lines = [label]
    size = len(label)
    for index, item in enumerate(items):
        note_room = 20 if index + 1 < len(items) else 0
        room = limit - size - 1 - note_room
        line = "• " + _inline_code(item, CONSEQUENCE_MAX)
        if len(line) <= room:
            lines.append(line)
            size += 1 + len(line)
            continue
        shown = index
        if index == 0 and room >= 20:
            # A first item longer than the room is cut rather than lost: the list says something.
            lines.append("• " + _inline_code(item, room - 2))
            shown = 1
        if len(items) > shown:
            lines.append(f"_{ELLIPSIS}and {len(items) - shown} more_")
        break
    return "\n".join(lines)


# -- the site facts -----------------------------------------------------------------------------------


def shown_where(card: Card) -> str:
    """The card's "where", unless it only repeats the source location (crate and file:line, no release and
    no function): the context line's Source already says that."""
    where = _one_line(card.where)
    components = set(card.source_label.split("/"))
    if where and all(token in components for token in re.split(r"[\s,]+", where) if token):
        return ""
    return where


def _details_text(card: Card, limit: int) -> str:
    """The pasted values within `limit` characters: one as inline code after the label, several as a list
    of inline code (then how many were left out); "" when there are none or no room."""
    items = [item for item in card.details if _one_line(item)]
    if not items or limit <= len(DETAILS_LABEL) + 3:
        return ""
    if len(items) == 1:
        return f"{DETAILS_LABEL} " + _inline_code(
            items[0], min(limit - len(DETAILS_LABEL) - 1, CONSEQUENCE_MAX)
        )
    return _code_list(DETAILS_LABEL, items, limit)


def _fact_limits(card: Card) -> dict[str, int]:
    """The starting room of each site fact: its whole (escaped) text up to its cap, 0 when there is none."""
    details = _details_text(card, SECTION_MAX)
    where = escape_mrkdwn(shown_where(card))
    release = escape_mrkdwn(_one_line(card.release_note))
    fires = _inline_code(card.fires_when, FIRES_WHEN_MAX) if _one_line(card.fires_when) else ""
    consequences = [item for item in card.consequences if _one_line(item)]
    listed = _code_list(CONSEQUENCES_LABEL, consequences, SECTION_MAX) if consequences else ""
    return {
        # A list keeps room for its "…and N more" line: with that room, all of it is shown.
        "details": min(len(details) + 20, DETAILS_MAX) if details else 0,
        "where": min(len(where), WHERE_MAX),
        "release": min(len(release), RELEASE_NOTE_MAX),
        "fires": len(fires),
        "panics": min(len(escape_mrkdwn(_one_line(card.panics_doc))), PANICS_DOC_MAX),
        "changed": min(len(escape_mrkdwn(_one_line(card.condition_note))), CONDITION_NOTE_MAX),
        # The list keeps room for its "…and N more" line: with that room, all of it is shown.
        "consequences": min(len(listed) + 20, SECTION_MAX) if listed else 0,
    }


def _cut_closing_code(text: str, limit: int) -> str:
    """Escaped mrkdwn within `limit` characters; cut inside a `code` span (a function, a condition), the span
    is closed, not left to run on."""
    if len(text) <= limit:
        return text
    text = _cut(text, limit - 1)
    return text + "`" if text.count("`") % 2 else text


def _facts_text(card: Card, limits: dict[str, int]) -> str:
    """The pasted values, where the panic is raised, what the releases say and the condition that fires
    it, a line each."""
    lines = []
    if limits["details"] and (details := _details_text(card, limits["details"])):
        lines.append(details)
    if limits["where"]:
        where = escape_mrkdwn(shown_where(card))
        lines.append("*Where:* " + _cut_closing_code(where, limits["where"]))
    if limits["release"]:
        lines.append("*Release:* " + _cut(escape_mrkdwn(_one_line(card.release_note)), limits["release"]))
    if limits["fires"]:
        lines.append("*Fires when:* " + _inline_code(card.fires_when, limits["fires"]))
    if limits["changed"]:
        note = escape_mrkdwn(_one_line(card.condition_note))
        lines.append("*Condition changed:* " + _cut_closing_code(note, limits["changed"]))
    if limits["panics"]:
        doc = _cut(escape_mrkdwn(_one_line(card.panics_doc)), limits["panics"])
        lines.append("*Its docs say it panics:* " + doc)
    return "\n".join(lines)


# -- the code block -----------------------------------------------------------------------------------


def _code_text(fix: str) -> str:
    """The fix as it goes between fences: escaped, with no run of three backticks left inside."""
    return escape_mrkdwn(_LONG_BACKTICKS.sub(lambda run: FENCE_STANDIN * len(run.group()), fix))


def _take_lines(code: str, limit: int) -> tuple[str, int, bool]:
    """Whole lines of `code` within `limit` characters: (text, lines left out, whether it was cut).

    Only a first line longer than the whole room is cut inside, so that something is shown.
    """
    if len(code) <= limit:
        return code, 0, False
    lines = code.split("\n")
    kept: list[str] = []
    size = 0
    for line in lines:
        extra = len(line) + (1 if kept else 0)
        if size + extra > limit:
            break
        kept.append(line)
        size += extra
    if not kept:
        return _cut(lines[0], limit), len(lines) - 1, True
    return "\n".join(kept), len(lines) - len(kept), True


def _pieces(line: str, size: int) -> list[str]:
    """A line split into pieces of at most `size` characters, never inside an entity."""
    pieces = []
    while len(line) > size:
        # An entity is never split, unless the room is too small to hold one at all.
        head = _hard_cut(line, size) or line[:size]
        pieces.append(head)
        line = line[len(head) :]
    pieces.append(line)
    return pieces


def _chunks(code: str, size: int) -> list[str]:
    """`code` in runs of whole lines of at most `size` characters (longer lines are split)."""
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for line in code.split("\n"):
        for piece in _pieces(line, size):
            extra = len(piece) + (1 if current else 0)
            if current and length + extra > size:
                chunks.append("\n".join(current))
                current, length, extra = [], 0, len(piece)
            current.append(piece)
            length += extra
    chunks.append("\n".join(current))
    return chunks


def _fenced(label: str, code: str, note: str = "") -> str:
    # Newlines around the code keep a backtick at its edge from merging with the fence.
    text = f"{label}\n{FENCE}\n{code}\n{FENCE}"
    return f"{text}\n{note}" if note else text


def _fence_overhead(label: str, note_room: int) -> int:
    return len(_fenced(label, "")) + note_room


def _cut_note(lines_left: int) -> str:
    if lines_left:
        return f"_{ELLIPSIS}cut here: {lines_left} more line{'s' if lines_left != 1 else ''}_"
    return f"_{ELLIPSIS}cut here_"


def _fix_sections(card: Card, limit: int, full: bool) -> tuple[list[str], bool]:
    """Section texts for the example fix within `limit` characters of code; and whether it was cut."""
    code = _code_text(card.example_fix)
    label = "*Example fix*"
    note_room = 40
    if limit <= 0:
        return [f"{label}: too long for this card{'.' if full else ' (button below).'}"], True
    if not full:
        room = min(limit, SECTION_MAX - _fence_overhead(label, note_room))
        shown, lines_left, cut = _take_lines(code, room)
        return [_fenced(label, shown, _cut_note(lines_left) if cut else "")], cut
    shown, lines_left, cut = _take_lines(code, limit)
    chunk_room = SECTION_MAX - _fence_overhead(f"{label} (99/99)", note_room)
    chunks = _chunks(shown, chunk_room)
    texts = []
    for number, chunk in enumerate(chunks, 1):
        part = label if len(chunks) == 1 else f"{label} ({number}/{len(chunks)})"
        last = number == len(chunks)
        texts.append(_fenced(part, chunk, _cut_note(lines_left) if cut and last else ""))
    return texts, cut


# -- cards ---------------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """How much of each part of a card to show; squeezed step by step until the message fits."""

    prevention: bool = True
    limits: dict[str, int] = field(default_factory=dict)

    def squeeze(self, full_fix: bool) -> bool:
        """Shrink the next part; False when nothing is left to shrink."""
        if self.prevention:
            self.prevention = False
            return True
        if self.limits["solutions"] > 0:
            self._shrink("solutions")
            return True
        # Asked for the whole fix, the reader gives up the prose first, and the site facts (where, release,
        # condition: often the whole answer) only after the fix. Largest first, short facts go last anyway.
        facts = ["details", "where", "release", "fires", "changed", "panics"]
        order = ["cause", "when", "context", "consequences"]
        order += [] if full_fix else ["fix", *facts]
        candidates = [name for name in order if self.limits[name] > self._floor(name)]
        if not candidates and full_fix and self.limits["fix"] > 0:
            candidates = ["fix"]
        if not candidates and full_fix:
            candidates = [name for name in facts if self.limits[name] > 0]
        if not candidates:
            return False
        self._shrink(max(candidates, key=lambda name: self.limits[name]))
        return True

    @staticmethod
    def _floor(name: str) -> int:
        # The context line carries the source link and the confidence: it is cut, never dropped.
        return MIN_PART if name == "context" else 0

    def _shrink(self, name: str) -> None:
        smaller = int(self.limits[name] * SHRINK)
        self.limits[name] = max(smaller, self._floor(name)) if smaller >= MIN_PART else self._floor(name)


def _header(card: Card) -> HeaderBlock:
    title = _one_line(card.title) or _one_line(card.catalog_message) or card.record_id or "Rust panic"
    # Plain text, but Slack still decodes &amp;/&lt;/&gt; in text objects; emoji=False keeps `:x:` literal.
    return HeaderBlock(text=PlainTextObject(text=_cut(escape_mrkdwn(title), HEADER_MAX), emoji=False))


def slack_context_line(card: Card, limit: int = CONTEXT_MAX) -> str:
    """Source link, tags, data set version and confidence as Slack mrkdwn.

    The source and the confidence always stay (a link is never cut through); the data set version and
    then the tags give way to `limit`.
    """
    source = ""
    label = card.source_label or ("source" if card.source_url else "")
    if label:
        label = label if len(label) <= 200 else ELLIPSIS + label[-199:]
        linked = card.source_url and len(card.source_url) <= 1_000
        source = f"Source: {_link(card.source_url, label)}" if linked else escape_mrkdwn(label)
    confidence = f"Confidence {confidence_percent(card.confidence)}"
    version = "Data set " + escape_mrkdwn(card.dataset_version[:100]) if card.dataset_version else ""

    def join(*parts: str) -> str:
        return " · ".join(part for part in parts if part)

    line = join(source, confidence)
    if version and len(join(source, version, confidence)) <= limit:
        line = join(source, version, confidence)
    else:
        version = ""
    room = limit - len(line) - len(" · Tags: ")
    if card.tags and room >= 20:
        tags = _cut(escape_mrkdwn(", ".join(_one_line(tag) for tag in card.tags)), room)
        line = join(source, f"Tags: {tags}", version, confidence)
    return line


def _card_blocks(
    card: Card,
    plan: _Plan,
    *,
    ephemeral: bool,
    record_id: str,
    lookup_key: str | None,
    vote: str | None,
    tally: dict[str, int] | None,
    shared_by: str | None,
    full_fix: bool,
    more_available: bool,
) -> list[Block]:
    blocks: list[Block] = [_header(card)]
    if shared_by:
        who = f"<@{shared_by}>" if _USER_ID.fullmatch(shared_by) else escape_mrkdwn(shared_by)
        blocks.append(_context(f"Shared by {who}"))
    facts = _facts_text(card, plan.limits)
    if facts:
        blocks.append(_section(facts))
    fix_cut = False
    if not card.has_analysis:
        blocks.append(_section(escape_mrkdwn(card.cause or NO_ANALYSIS)))
    else:
        limits = plan.limits
        if card.cause and limits["cause"]:
            label = "*What it means*\n"
            blocks.append(_section(label + _cut(escape_mrkdwn(card.cause), limits["cause"] - len(label))))
        if card.when and limits["when"]:
            label = "*When it happens*\n"
            blocks.append(_section(label + _cut(escape_mrkdwn(card.when), limits["when"] - len(label))))
        if card.solutions and limits["solutions"]:
            text = _list_text("*Solutions*", list(card.solutions), True, limits["solutions"])
            blocks.append(_section(text))
        if card.example_fix:
            texts, fix_cut = _fix_sections(card, limits["fix"], full_fix)
            blocks.extend(_section(text) for text in texts)
        if card.prevention_tips and plan.prevention:
            blocks.append(
                _section(_list_text("*Prevention*", list(card.prevention_tips), False, SECTION_MAX))
            )
        if card.analysis_note:  # a family's advice says so under its text, whatever was cut above
            blocks.append(_context(f"_{escape_mrkdwn(card.analysis_note)}_"))
    if card.reported_in:
        reports = ", ".join(_link(url, reported_label(url)) for url in card.reported_in)
        blocks.append(_context(f"Reported in {reports}"))
    if plan.limits["consequences"]:
        consequences = [item for item in card.consequences if _one_line(item)]
        blocks.append(_section(_code_list(CONSEQUENCES_LABEL, consequences, plan.limits["consequences"])))
    blocks.append(DividerBlock())
    blocks.append(_context(slack_context_line(card, plan.limits["context"])))
    if vote:
        blocks.append(_context(f"You voted {_VOTE_EMOJI[vote]}"))
    elif tally and any(tally.values()):
        # A public card speaks for nobody in particular: it shows the count, not one reader's vote.
        up, down = tally.get("up", 0), tally.get("down", 0)
        blocks.append(_context(f"{_VOTE_EMOJI['up']} {up} · {_VOTE_EMOJI['down']} {down}"))
    buttons = []
    value = action_value(record_id, lookup_key, card.confidence, shared_by)
    if len(value) > BUTTON_VALUE_MAX:
        # A record id (or a name) too long to ride in a button: the card goes out without the buttons
        # that would carry it rather than not at all.
        lookup_key, shared_by = None, None
        value = action_value(record_id, None, card.confidence, None)
        if len(value) > BUTTON_VALUE_MAX:
            return blocks
    if ephemeral:
        buttons.append(_button("Share in channel", ACTION_SHARE, value, "primary"))
        if more_available and lookup_key:
            buttons.append(_button("More matches", ACTION_MORE, value))
    if fix_cut and not full_fix:
        buttons.append(_button("Show full example fix", ACTION_FULL_FIX, value))
    buttons.append(_button("👍", ACTION_VOTE_UP, value, "primary" if vote == "up" else None))
    buttons.append(_button("👎", ACTION_VOTE_DOWN, value, "danger" if vote == "down" else None))
    blocks.append(ActionsBlock(elements=buttons))
    return blocks


@dataclass(frozen=True)
class ActionValue:
    """What a card's buttons carry: the record, the stored lookup behind the card, and its confidence."""

    record_id: str
    lookup_key: str | None
    confidence: float
    shared_by: str | None = None


def action_value(
    record_id: str, lookup_key: str | None, confidence: float, shared_by: str | None = None
) -> str:
    return f"{record_id}|{lookup_key or ''}|{confidence:.3f}|{shared_by or ''}"


def parse_action_value(value: str) -> ActionValue:
    """The inverse of `action_value`; a bare record id (or junk) parses without raising."""
    record_id, _, rest = (value or "").partition("|")
    key, _, rest = rest.partition("|")
    confidence, _, shared_by = rest.partition("|")
    try:
        number = min(1.0, max(0.0, float(confidence)))
    except ValueError:
        number = 0.0
    return ActionValue(record_id, key or None, number, shared_by or None)


def encode_alternatives(matches: Sequence[tuple[str, float]], limit: int = 5) -> str | None:
    """The other matches of a lookup, carried in the card's buttons (`id:confidence,...`): "More matches"
    then needs no memory of the paste, and works on whichever replica Slack sends the click to."""
    parts = [
        f"{record_id}:{confidence:.3f}"
        for record_id, confidence in matches
        if record_id and len(record_id) <= 64 and not any(char in record_id for char in "|,:")
    ]
    return ",".join(parts[:limit]) or None


def decode_alternatives(text: str | None) -> list[tuple[str, float]]:
    """The inverse of `encode_alternatives`; anything malformed is skipped, never raised."""
    found = []
    for part in (text or "").split(","):
        record_id, _, confidence = part.partition(":")
        try:
            found.append((record_id, min(1.0, max(0.0, float(confidence)))))
        except ValueError:
            continue
    return [(record_id, confidence) for record_id, confidence in found if record_id]


def card_message(
    card: Card,
    *,
    ephemeral: bool,
    record_id: str,
    lookup_key: str | None = None,
    vote: str | None = None,
    tally: dict[str, int] | None = None,
    shared_by: str | None = None,
    full_fix: bool = False,
    more_available: bool = True,
) -> SlackMessage:
    """The answer card: under the title where the panic is raised, what the releases say and the condition
    that fires it; the analysis; the paste's other panics that follow from this one; the context line.

    Too big for one message, it drops the prevention tips, then cuts the solutions, then the longest part
    (with `full_fix`, the fix is kept whole as long as anything else can give)."""
    if vote not in (None, "up", "down"):
        raise ValueError(f"vote must be 'up', 'down' or None, not {vote!r}")
    plan = _Plan(
        limits={
            "cause": SECTION_MAX,
            "when": SECTION_MAX,
            "solutions": SECTION_MAX,
            "fix": len(_code_text(card.example_fix)) if full_fix else SECTION_MAX,
            "context": CONTEXT_MAX,
            **_fact_limits(card),
        }
    )
    while True:
        built = _card_blocks(
            card,
            plan,
            ephemeral=ephemeral,
            record_id=record_id,
            lookup_key=lookup_key,
            vote=vote,
            tally=tally,
            shared_by=shared_by,
            full_fix=full_fix,
            more_available=more_available,
        )
        blocks = _dicts(built)
        if _fits(blocks) or not plan.squeeze(full_fix):
            return SlackMessage(text=_fallback(card.summary), blocks=blocks)


# -- other messages ------------------------------------------------------------------------------------


def _match_line(match: Match) -> str:
    """One record of a list: its message (linked to the source), where it is raised, the confidence."""
    record = match.record
    message = _one_line(record.errorMessage)
    message = message if len(message) <= 150 else message[:149] + ELLIPSIS
    head = _link(record.githubUrl, message) if record.githubUrl else f"*{escape_mrkdwn(message)}*"
    where = ""
    if record.filePath:
        location = f"{record.filePath}:{record.lineNumber}" if record.lineNumber else record.filePath
        where = f" · `{escape_mrkdwn(location[-200:])}`"
    return f"{head}{where} · confidence {confidence_percent(match.confidence)}"


def _bullets(lines: list[str], limit: int) -> str:
    """Formatted lines (links inside: not cut, not escaped again) as bullets within `limit` characters."""
    out: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        bullet = f"• {line}"
        if size + len(bullet) + 1 > limit - 20:
            out.append(f"_{ELLIPSIS}and {len(lines) - index} more_")
            break
        out.append(bullet)
        size += len(bullet) + 1
    return "\n".join(out)


def _list_message(text: str, intro: str, label: str, matches: list[Match], outro: str = "") -> SlackMessage:
    """An intro section, then the matches as a list; the list shrinks until the message fits."""
    lines = [_match_line(match) for match in matches]
    limit = SECTION_MAX
    while True:
        blocks: list[Block] = [_section(intro)]
        if lines:
            head = f"{label}\n" if label else ""
            blocks.append(_section(head + _bullets(lines, limit - len(head))))
        if outro:
            blocks.append(_context(outro))
        dicts = _dicts(blocks)
        if _fits(dicts) or limit < MIN_PART:
            return SlackMessage(text=_fallback(text), blocks=dicts)
        limit = int(limit * SHRINK)


def no_match_message(result: LookupResult, *, query: str) -> SlackMessage:
    """No known record: says so, quotes what was looked up, and lists nearby records (never a card)."""
    if not result.panics:
        intro = (
            "I found no Rust panic in that text. Paste the panic as printed (from `thread '…' panicked at`)"
            " or type a few words of its message."
        )
        return _list_message("No Rust panic found in that text.", intro, "", [])
    panic = result.panics[result.answer_panic or 0]
    # Quoted back into the channel (a mention's reply is public): no token or home-directory name rides along.
    looked_up = _one_line(redact(panic.message)) or _one_line(redact(query))
    # A backtick in the path would end the inline code early.
    location = escape_mrkdwn(redact(str(panic.location)).replace("`", "'")) if panic.location else ""
    where = f" at `{location}`" if location else ""
    intro = f":mag: *No known record* for this panic{where}."
    if looked_up:
        intro += "\n>" + _cut(escape_mrkdwn(looked_up), 300)
    nearby = list(result.matches)
    outro = "" if nearby else "Nothing in the catalog comes close."
    label = "*Nearby records* (not the same message)"
    return _list_message("No known record for this panic.", intro, label, nearby, outro)


def more_matches_message(result: LookupResult, *, skip_record_id: str | None) -> SlackMessage:
    """The next best records after the one already shown, with their confidence and source links."""
    others = [match for match in result.matches if match.record.id != skip_record_id]
    if not others:
        return _list_message("No other matches.", "No other matches for this panic.", "", [])
    records = f"{len(others)} record{'s' if len(others) != 1 else ''}"
    intro = f"*Other matches* ({records}, best first)"
    return _list_message(f"Other matches: {records}.", intro, "", others)


def usage_message() -> SlackMessage:
    """How to ask panicbot: the slash command, a mention, the message shortcut."""
    text = (
        "*panicbot* explains Rust panics from the Burn catalog.\n"
        "• `/panic &lt;paste or words&gt;`: paste a panic, or type a few words of its message. "
        "The answer is shown only to you; *Share in channel* posts it for everyone.\n"
        "• Mention the bot with a paste, in a channel or a thread: it answers in the thread.\n"
        "• In a thread, where slash commands do not work, use panicbot's message shortcut "
        "(the message's ⋯ menu) on the message holding the panic."
    )
    fallback = "Use /panic <paste or words>, mention the bot with a paste, or use its message shortcut."
    return SlackMessage(text=_fallback(fallback), blocks=_dicts([_section(text)]))


def error_message(text: str) -> SlackMessage:
    """A short note for the user when something failed; `text` is plain, it is escaped here."""
    note = _one_line(text) or "Something went wrong."
    body = _cut(escape_mrkdwn(note), 1_000)
    return SlackMessage(text=_fallback(note), blocks=_dicts([_section(f":warning: {body}")]))
