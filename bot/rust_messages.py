"""What Rust does to a message: format placeholders in the source, prefixes and blocks added at run time."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[^{}\n]*\}")
# Words of two letters or more, and numbers of three digits or more (`op_82239`, `4096`): a number is
# part of a message's text as a word is, and tells near-identical messages apart.
_TOKEN = re.compile(r"[a-z]{2,}|[0-9]{3,}")
_ESCAPE_TABLE = str.maketrans({char: "\\" + char for char in ".^$*+?()[]{}|\\"})

_RUNTIME_PREFIXES = (
    "not implemented: ",
    "not yet implemented: ",
    "internal error: entered unreachable code: ",
)
_ASSERT_NEW = re.compile(r"^assertion `left [=!]= right` failed: (?P<msg>.*?)(?:\n\s*left: .*)?$", re.DOTALL)
_ASSERT_OLD = re.compile(r"^assertion failed: `\(left [=!]= right\)`\n.*?`: (?P<msg>.*)$", re.DOTALL)
_ASSERT_LEFT_RIGHT = re.compile(r"\n\s*left: .*$", re.DOTALL)
_TENSOR_CHECK = re.compile(r"=== Tensor Operation Error ===")
_TENSOR_REASON = re.compile(r"^\s*\d+\. (?P<reason>.*?)\s*$", re.MULTILINE)
_TENSOR_BANNER = "Tensor Operation Error"
_TENSOR_OPERATION = re.compile(r"^\s*Operation: '(?P<operation>[^'\n]*)'\s*$", re.MULTILINE)
_NUMBERED_REASON = re.compile(r"^\s*(?P<number>\d+)\. (?P<reason>.*?)\s*$", re.MULTILINE)
# A banner: a run of three or more of one decoration character opens the line (`=== Tensor Operation Error
# ===`, `---`, `#### Report`); its words are what is left between the runs.
_BANNER = re.compile(r"^([=*#~_+-])\1{2,}")
_DECORATION = "=*#~_+- \t"
_LIST_MARKER = re.compile(r"^[-*•]\s+")
# The end of a sentence: a stop, then a space and what may start one (`no. of` goes on).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[`'\"])")


def split_format_string(message: str) -> list[str]:
    """The literal segments between format placeholders (`{}`, `{:?}`, `{name:#?}`); `{{`/`}}` are literal."""
    segments = [""]
    position = 0
    for match in _PLACEHOLDER.finditer(message):
        segments[-1] += message[position : match.start()]
        token = match.group(0)
        if token == "{{":
            segments[-1] += "{"
        elif token == "}}":
            segments[-1] += "}"
        else:
            segments.append("")
        position = match.end()
    segments[-1] += message[position:]
    return segments


def literal_text(message: str, filler: str = " ") -> str:
    """The message with every placeholder replaced by `filler`."""
    return filler.join(split_format_string(message))


def specificity(segments: list[str]) -> int:
    """How much a message says by itself: its literal characters but spaces, placeholders not counted."""
    return len("".join("".join(segments).split()))


def tokens(text: str) -> list[str]:
    """Lower-case words of two letters or more and numbers of three digits or more: the unit of the token
    index and of typo correction (numbers are never corrected)."""
    return _TOKEN.findall(text.lower())


def segment_tokens(segments: list[str]) -> tuple[set[str], set[str]]:
    """All tokens of the literal segments, and the safe ones among them: those a filled-in message is sure
    to hold as whole tokens. A word touching a placeholder (`{}elements`) can merge with the value
    (`5elements` is fine, `xelements` is not), so it is not safe."""
    every: set[str] = set()
    safe: set[str] = set()
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        lowered = segment.lower()
        found = _TOKEN.findall(lowered)
        if not found:
            continue
        every.update(found)
        # A token touches an end exactly when the segment starts (ends) with it: tokens are maximal runs.
        low = 1 if index > 0 and lowered.startswith(found[0]) else 0
        high = len(found) - 1 if index < last and lowered.endswith(found[-1]) else len(found)
        safe.update(found[low:high])
    return every, safe


def pattern_from_message(message: str) -> str:
    """The regex the data set derives from a message: escaped literals, `(.+?)` per placeholder."""
    return "(.+?)".join(escape_literal(segment) for segment in split_format_string(message))


def pattern_segments(pattern: str) -> list[str] | None:
    """Literal segments of a pattern made only of escaped literals and `(.+?)`; None for other regexes."""
    segments = []
    for part in pattern.split("(.+?)"):
        # Escaped backslashes first: every other backslash must then escape the metacharacter after it,
        # which holds exactly when removing them and escaping again gives the piece back.
        pieces = part.split("\\\\") if "\\" in part else [part]
        literal = []
        for piece in pieces:
            unescaped = piece.replace("\\", "")
            if escape_literal(unescaped) != piece:
                return None
            literal.append(unescaped)
        segments.append("\\".join(literal))
    return segments


def escape_literal(text: str) -> str:
    """Escape regex metacharacters the way the data set does (spaces and quotes stay as they are)."""
    return text.translate(_ESCAPE_TABLE)


def message_variants(message: str) -> list[str]:
    """The message as printed and the record message(s) it may hold once Rust's additions are removed.

    `not implemented: X` -> X; ``assertion `left == right` failed: X`` + left/right lines -> X; a burn-tensor
    check block -> each numbered reason.
    """
    text = message.strip()
    variants = [text]
    for prefix in _RUNTIME_PREFIXES:
        if text.startswith(prefix):
            variants.append(text[len(prefix) :].strip())
    assertion = _ASSERT_NEW.match(text) or _ASSERT_OLD.match(text)
    if assertion:
        variants.append(assertion.group("msg").strip())
    elif "\n" in text and _ASSERT_LEFT_RIGHT.search(text):
        variants.append(_ASSERT_LEFT_RIGHT.sub("", text).strip())
    if "\n" in text and not _TENSOR_CHECK.search(text):
        # Log lines printed right after the panic can run on into the message: its first line alone.
        variants.append(text.split("\n", 1)[0].strip())
    if _TENSOR_CHECK.search(text):
        variants.extend(m.group("reason") for m in _TENSOR_REASON.finditer(text))
    unique: list[str] = []
    for variant in variants:
        if variant and variant not in unique:
            unique.append(variant)
    return unique


@dataclass(frozen=True)
class Headline:
    """What a message opened by a banner says: the line that explains it, and the pasted lines of values."""

    title: str
    details: tuple[str, ...]


def _banner_words(line: str) -> str | None:
    """The words of a banner line (`=== Tensor Operation Error ===` -> `Tensor Operation Error`, `-----` ->
    ``), or None when the line is no banner."""
    stripped = line.strip()
    if not _BANNER.match(stripped):
        return None
    return stripped.strip(_DECORATION)


def _lower_first(text: str) -> str:
    """`The given shape` -> `the given shape`, `Can't` -> `can't`; a name (`DType`, `CUDA`) is kept."""
    if len(text) > 1 and text[0].isupper() and (text[1].islower() or text[1] == "'"):
        return text[0].lower() + text[1:]
    return text


def _first_sentence(text: str) -> tuple[str, str]:
    """A reason's first sentence without its full stop, and the rest (often the pasted values)."""
    end = _SENTENCE_END.search(text)
    head, rest = (text[: end.start()], text[end.end() :]) if end else (text, "")
    if head.endswith(".") and not head.endswith(".."):
        head = head[:-1]
    return head.strip(), rest.strip()


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def _tensor_headline(lines: list[str], catalog_message: str) -> Headline | None:
    """A burn-tensor check: `<Operation>: <first sentence of the reason>`, the reason's rest and the other
    reasons as details. The reason whose text the catalogued message opens with is the title's."""
    text = "\n".join(lines)
    reasons = [(m.group("number"), m.group("reason")) for m in _NUMBERED_REASON.finditer(text)]
    reasons = [(number, reason) for number, reason in reasons if reason]
    if not reasons:
        return None
    opening = _normalised(split_format_string(catalog_message)[0]) if catalog_message else ""
    chosen = next(
        (
            index
            for index, (_, reason) in enumerate(reasons)
            if opening and _normalised(reason).startswith(opening)
        ),
        0,
    )
    sentence, rest = _first_sentence(reasons[chosen][1])
    operation = _TENSOR_OPERATION.search(text)
    name = " ".join(operation.group("operation").split()) if operation else ""
    title = f"{name}: {_lower_first(sentence)}" if name and sentence else sentence or name
    if not title:
        return None
    others = [f"{number}. {reason}" for index, (number, reason) in enumerate(reasons) if index != chosen]
    return Headline(title, tuple(part for part in (rest, *others) if part))


def headline(message: str, catalog_message: str = "") -> Headline | None:
    """The title and details of a message whose first line is a banner, None for any other message.

    A burn-tensor check (`=== Tensor Operation Error ===`, `Operation: 'Reshape'`, numbered reasons) reads
    `Reshape: the given shape doesn't have ...`, its values (`Current shape: [2, 3], ...`) and other reasons
    as details; `catalog_message` (the matched record's) picks the reason. Any other banner: its words and
    the first line under it, the other lines as details (list markers and bare rules left out)."""
    lines = [" ".join(line.split()) for line in message.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return None
    words = _banner_words(lines[0])
    if words is None:
        return None
    if words == _TENSOR_BANNER:
        found = _tensor_headline(lines[1:], catalog_message)
        if found is not None:
            return found
    content = []
    for line in lines[1:]:
        inner = _banner_words(line)
        text = _LIST_MARKER.sub("", line) if inner is None else inner
        if text:
            content.append(text)
    if not content:
        return Headline(words, ()) if words else None
    title = f"{words}: {content[0]}" if words else content[0]
    return Headline(title, tuple(content[1:]))
