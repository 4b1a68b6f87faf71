"""Undo what chats and terminals do to a paste: markup, escapes, colours, bars, quotes, fences, times."""

from __future__ import annotations

import json
import re

MAX_TEXT_CHARS = 200_000
"""`normalize_chat_text` reads this much. Extraction reads a longer paste whole, normalising only the windows
around its panics (`bot.extract`)."""

# What starts the text of a panic; a window of a long paste is opened around each of them.
PANIC_MARKERS = ("panicked at", "panicked\u00a0at", "called `Result::", "called `Option::")

# Cursor movements and whole-line erasures (progress bars redrawing themselves) start a new drawing place:
# they become a line break, not nothing, so a bar never glues onto the panic text written after it. Erasing
# to the end of a line (`\x1b[K`, grep's colours) moves nothing and is dropped with the colours.
_CURSOR_MOVE = re.compile(r"\x1b\[(?:[0-9;]*[ABEFGHJfd]|[12]K)")
_LINE_BREAKS = re.compile(r"\r*\n\r*|\r+")  # a carriage return next to a line break moves nothing
_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_CHARS = tuple(chr(code) for code in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F))
# indicatif / tqdm / cargo bars: a run of bar cells and a count or a percentage on the same line.
_BAR_CELLS = re.compile(
    "[\u2588\u2589\u258a\u258b\u258c\u258d\u258e\u258f\u2591\u2592\u2593\u2501\u2578\u257a\u25a0\u25a1]{3,}"
    r"|\[[=#>\-. ]{6,}\]|\|[#= ]{6,}\|"
)
# What every bar starts with, looked for first with `in` (a fast scan).
_BAR_STARTS = tuple(
    "\u2588\u2589\u258a\u258b\u258c\u258d\u258e\u258f\u2591\u2592\u2593\u2501\u2578\u257a\u25a0\u25a1[|"
)
_BAR_COUNT = re.compile(r"\d+/\d+|\d+(?:\.\d+)?%")
MAX_BAR_LINE_CHARS = 1_000
# A quoted or logged panic whose line breaks became the two characters `\n` (or `\r\n`).
_ESCAPED_BREAK = re.compile(r"\\r\\n|\\n")
# A Windows path keeps its backslashes: `\nn\` in `src\nn\conv.rs` is no line break.
_BACKSLASH_PATH = re.compile(r"(?<![\w.~$:\\-])[\w.~$:-]*(?:\\[\w.+@~$-]+)+\.rs\b")
# The rest of a JSON string literal after its opening quote (escapes taken whole), up to its closing quote.
_JSON_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*"')
# A JSON string is looked for this far before the panic marker it holds.
JSON_QUOTE_LOOKBACK = 4_096
_THREAD_LOOKBACK = 320
# Slack wraps links, mentions and channel names in <...>; literal angle brackets arrive as &lt; &gt;.
_SLACK_LINK = re.compile(r"<((?:https?://|mailto:|[#@!]\w)[^<>|\n]*)(?:\|([^<>\n]*))?>")
_FENCE_WITH_LANGUAGE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*(?=\n)")
# Discord users wrap a single line in inline code: `thread 'main' panicked at ...`
_INLINE_CODE_LINE = re.compile(r"^([ \t]*)`([^`\n]+)`[ \t]*$", re.MULTILINE)
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
# Cheap necessary conditions, searched for from a literal (a fast scan), before the line-start patterns that
# are tried at every position of the text: a line starting with "`" or ">", a date's `-dd-dd dd:dd:dd`.
_FIRST_LINE_CODE_OR_QUOTE = re.compile(r"[ \t]*[`>]")
_LINE_CODE_OR_QUOTE = re.compile(r"\n[ \t]*[`>]")
_DATE_TIME = re.compile(r"-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")
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


def normalize_chat_text(text: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Plain text as the program printed it, from what a chat message holds (its first `max_chars`).
    Never raises."""
    text = text[:max_chars]
    text = unescape_quoted_panics(text)
    if "\x1b" in text:
        text = _CURSOR_MOVE.sub("\r", text)
    if "\r" in text:
        text = _LINE_BREAKS.sub("\n", text)
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if any(char in text for char in _CONTROL_CHARS):
        text = _CONTROL.sub("", text)
    text = drop_progress_bars(text)
    text = text.translate(_SMART_QUOTES)
    if "<" in text:
        text = _SLACK_LINK.sub(_slack_link_text, text)
    if "&" in text:
        for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&#x27;", "'")):
            text = text.replace(entity, char)
        text = text.replace("&amp;", "&")
    if "```" in text:
        text = _FENCE_WITH_LANGUAGE.sub("", text)
        text = text.replace("```", "\n")
    if ("`" in text or ">" in text) and (
        _FIRST_LINE_CODE_OR_QUOTE.match(text) or _LINE_CODE_OR_QUOTE.search(text)
    ):
        text = _QUOTE_PREFIX.sub("", text)
        text = _INLINE_CODE_LINE.sub(r"\1\2", text)
    return _TIMESTAMP_PREFIX.sub("", text) if _DATE_TIME.search(text) else text


def _has_marker(line: str) -> bool:
    return any(marker in line for marker in PANIC_MARKERS)


def drop_progress_bars(text: str) -> str:
    """`text` without its progress-bar lines (a bar drawn between a panic's lines would join its message).
    A line holding a panic marker stays: the panic printed after a bar is on the bar's line."""
    if not any(char in text for char in _BAR_STARTS) or not _BAR_CELLS.search(text):
        return text  # one scan for nearly every paste
    return "\n".join(line for line in text.split("\n") if not _is_progress_bar(line))


def _is_progress_bar(line: str) -> bool:
    return (
        len(line) <= MAX_BAR_LINE_CHARS
        and _BAR_CELLS.search(line) is not None
        and _BAR_COUNT.search(line) is not None
        and not _has_marker(line)
    )


def unescape_quoted_panics(text: str) -> str:
    """Line breaks written as `\\n` (a panic quoted in one line, a JSON log line) made real again, only on
    lines that hold a panic marker and only from that marker on, so Windows paths and other text keep their
    backslashes. A JSON string holding a panic is decoded whole (its `\\"`, `\\\\` and `\\u001b` too)."""
    if "\\n" not in text:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if "\\n" in line and _has_marker(line):
            lines[index] = _unescape_line(line)
    return "\n".join(lines)


def _first_marker(line: str, start: int) -> int:
    found = [at for at in (line.find(marker, start) for marker in PANIC_MARKERS) if at >= 0]
    return min(found) if found else -1


def _unescape_line(line: str) -> str:
    pieces: list[str] = []
    position = 0
    while position < len(line):
        at = _first_marker(line, position)
        if at < 0:
            break
        string = _json_string_around(line, position, at)
        if string is not None:
            opening, closing, decoded = string
            pieces += [line[position:opening], "\n", decoded, "\n"]
            position = closing
            continue
        begin = line.rfind("thread '", max(position, at - _THREAD_LOOKBACK), at)
        begin = at if begin < 0 else begin
        pieces += [line[position:begin], _unescape_breaks(line[begin:])]
        position = len(line)
    pieces.append(line[position:])
    return "".join(pieces)


def _unescape_breaks(text: str) -> str:
    pieces: list[str] = []
    position = 0
    for path in _BACKSLASH_PATH.finditer(text):
        pieces += [_ESCAPED_BREAK.sub("\n", text[position : path.start()]), path.group()]
        position = path.end()
    pieces.append(_ESCAPED_BREAK.sub("\n", text[position:]))
    return "".join(pieces)


def _json_string_around(line: str, floor: int, at: int) -> tuple[int, int, str] | None:
    """The JSON string literal holding position `at` (its start, end and decoded text), if there is one."""
    lowest = max(floor, at - JSON_QUOTE_LOOKBACK)
    opening = line.rfind('"', lowest, at)
    for _ in range(64):  # quotes escaped inside the string are stepped over, a bounded number of times
        if opening < 0:
            return None
        backslashes = len(line[lowest:opening]) - len(line[lowest:opening].rstrip("\\"))
        if backslashes % 2 == 0:
            break
        opening = line.rfind('"', lowest, opening)
    else:
        return None
    if opening > 0 and line[opening - 1] not in ":=[,{( \t":
        return None  # a closing quote of something else, not the start of a JSON value
    body = _JSON_STRING_BODY.match(line, opening + 1)
    if body is None or body.end() <= at:
        return None
    literal = line[opening : body.end()]
    try:
        decoded = json.loads(literal)
    except ValueError:
        return None
    return (opening, body.end(), decoded) if isinstance(decoded, str) else None
