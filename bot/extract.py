"""Chat text in, zero or more Rust panics out: message, location, thread and backtrace frames."""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bot.chat_text import MAX_TEXT_CHARS, PANIC_MARKERS, normalize_chat_text
from bot.paths import canonical_path

# A pretty-printed Debug value (`{:#?}` of a Shape, a config) runs to a line per field or element.
MAX_MESSAGE_LINES = 400
# The old `panicked at 'message', path` form is searched for its closing quote this far ahead.
OLD_STYLE_MESSAGE_LINES = 80
MAX_PANICS = 20
MAX_FRAMES = 200
# A header whose line carries no message: its message is on the next non-blank line, this few blank lines on.
MAX_BLANK_LINES_BEFORE_MESSAGE = 3

# A paste longer than MAX_TEXT_CHARS is read through windows around its panic markers: from the marker's line
# (at most WINDOW_BEFORE characters back) to WINDOW_AFTER characters past the last marker the window holds
# (room for a 400-line message and 200 frames), a window being at most WINDOW_MAX characters.
WINDOW_BEFORE = 2_048
WINDOW_AFTER = 65_536
WINDOW_MAX = 1_048_576
# Beyond this a paste is cut, and the Extraction says so (`truncated`): no chat message is this long.
MAX_PASTE_CHARS = 32 * 1024 * 1024

# Paths are bounded so that a line of many `panicked at` cannot make the scan quadratic.
# A path never holds `panicked at `: on a line of many, each is tried only up to the next.
_LOCATION = r"(?P<path>[^\s'\"`](?:(?!panicked at )[^\n]){0,1000}?):(?P<line>\d{1,7}):(?P<col>\d{1,5})"
_THREAD = r"thread '(?P<thread>[^'\n]{0,300})'(?: \((?P<tid>\d+)\))? "
# Rust >= 1.73: `thread 'main' panicked at src/x.rs:1:2:` and the message on the next lines. Chat often
# joins them into one line, so the message may follow on the header line itself.
_HEADER_NEW = re.compile(rf"(?:{_THREAD})?panicked at {_LOCATION}:(?:[ \t]+(?P<rest>\S.*))?[ \t]*$")
# Rust < 1.73: `thread 'main' panicked at 'message', src/x.rs:1:2`; the quoted message may span lines.
_HEADER_OLD_START = re.compile(rf"(?:{_THREAD})?panicked at '")
_HEADER_OLD_END = re.compile(rf"', {_LOCATION}[ \t]*$", re.MULTILINE)
_FRAME_SYMBOL = re.compile(r"^\s*(?P<index>\d+): +(?P<symbol>\S.*?)\s*$")
_FRAME_AT = re.compile(rf"^\s*at {_LOCATION}\s*$")
# A cheap necessary condition for a new-style header: its `:line:col:`, with the whitespace a wrapped path
# loses anywhere in it. Only a line holding such a colon, or the line before it, can start a header.
_LOCATION_HINT = re.compile(r":(?=\s*\d[\d\s]*:\s*\d[\d\s]*:)")
_OLD_HEADER_HINT = re.compile("panicked at '")
_UNWRAP = re.compile(
    r"called `(?:Result|Option)::(?:unwrap|expect)(?:_err)?\(\)` on an? `(?:Err|None)` value"
)

# Lines that end a panic message: what the runtime, the test harness or cargo prints after it.
_MESSAGE_END = re.compile(
    r"^\s*(?:note: (?:run with|Some details are omitted|panic did not)|stack backtrace:|"
    r"failures:|test result:|---- \S.* stdout ----|test \S+ \.\.\. |error: (?:test failed|process didn't)|"
    r"(?:thread '[^'\n]*'(?: \(\d+\))? )?panicked at |Caused by:|warning: build failed|"
    r"error: failed to run custom build command|=== PANIC ===)"
)


# A logger's line after the message: `[<time>] LEVEL module::path ...`, `LEVEL module::path: ...`,
# env_logger's `[<time> LEVEL module]` (a leading ISO timestamp is already gone, see chat_text).
_LEVEL = r"(?:TRACE|DEBUG|INFO|WARN(?:ING)?|ERROR)"
_MODULE = r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z0-9_]+)*"
_LOG_LINE = re.compile(
    rf"^[ \t]*(?:\[[^\]\n]{{1,80}}\][ \t]*{_LEVEL}[ \t]+{_MODULE}|\[?{_LEVEL}[ \t]+{_MODULE}(?:\]|:(?!:)))"
)
# A note the user wrote after a message line: `attempt to divide by zero      # <- the real cause`.
_USER_NOTE = re.compile(r"[ \t]{2,}(?:#|//|<-+|\u2190)(?=\s|$)")

# The same ends, met inside a line (a paste whose line breaks chat has lost).
_JOINED_END = re.compile(
    r"[ \t]+(?:note: (?:run with `RUST_BACKTRACE|Some details are omitted|panic did not)|stack backtrace:)"
)


@dataclass(frozen=True)
class Location:
    """Where a panic was raised: the path as pasted and as a repository path."""

    raw_path: str
    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where


@dataclass(frozen=True)
class Frame:
    """One backtrace frame: the function and, when printed, where it is."""

    index: int
    symbol: str
    location: Location | None = None


@dataclass(frozen=True)
class Panic:
    """One panic found in a paste.

    `kind` tells how it was found: `header` (a `panicked at` line), `message` (a runtime message such as an
    unwrap without its header), `relayed` (a panic message another panic's message carries, such as cubecl's
    `CallError(task panicked on device runner thread: <message>)`: it comes right after the panic relaying it,
    its location only when the relayed text has one) or `query` (no panic shape at all: the text is a typed
    query or a fragment).

    `follow_on` is True for a panic that echoes an earlier one rather than causing anything: a later unwrap of
    a `PoisonError`, a `SendError`/`RecvError`, a joined thread's `Any { .. }`, `panic in a destructor during
    cleanup`, burn-fusion's `Ordering is bigger than operations` after another panic, a message repeating an
    earlier panic's; and a panic whose relayed message was extracted (the relayed panic after it is the
    cause), even when it comes first. `root_panic_index` gives the first panic that is not a follow-on.
    """

    message: str
    location: Location | None = None
    thread: str | None = None
    thread_id: int | None = None
    frames: tuple[Frame, ...] = field(default=())
    kind: str = "header"
    follow_on: bool = False


@dataclass(frozen=True)
class Extraction:
    """The panics of a paste, and whether all of it was read: `truncated` is True when the paste was longer
    than MAX_PASTE_CHARS and only its first MAX_PASTE_CHARS characters were searched."""

    panics: tuple[Panic, ...]
    truncated: bool = False


def _location(path: str, line: str, col: str) -> Location:
    raw = path.strip()
    return Location(raw_path=raw, path=canonical_path(raw), line=int(line), column=int(col))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _message_lines(lines: list[str], start: int, indent: int, depth: int = 0) -> tuple[list[str], int]:
    """The message lines after a header at `start`, dedented by the header's indent; and the next index.
    `depth` is how many brackets the message opened before `start` (its header line's part)."""
    collected: list[str] = []
    index = start
    while index < len(lines) and len(collected) < MAX_MESSAGE_LINES:
        line = lines[index]
        if not line.strip():
            # burn's tensor-check block ends with one blank line; a Debug value never holds one.
            break
        if _ends_message(lines, index, depth):
            break
        cut = min(indent, _indent(line))
        kept = line[cut:].rstrip()
        if depth == 0:
            kept = _without_user_note(kept)
        collected.append(kept)
        depth = max(0, depth + _opened(line))
        index += 1
    return collected, index


def _opened(text: str) -> int:
    """How many more brackets `text` opens than it closes."""
    return (
        text.count("(")
        + text.count("[")
        + text.count("{")
        - text.count(")")
        - text.count("]")
        - text.count("}")
    )


def _inside_value(prefix: str, depth: int = 0) -> bool:
    """Whether the text after `prefix` is inside a quoted string, inline code or a bracketed (Debug) value."""
    return (
        prefix.count('"') % 2 == 1
        or prefix.count("`") % 2 == 1
        or depth + prefix.count("(") > prefix.count(")")
        or depth + prefix.count("[") > prefix.count("]")
        or depth + prefix.count("{") > prefix.count("}")
    )


def _ends_message(lines: list[str], index: int, depth: int = 0) -> bool:
    """Whether the line at `index` ends the message before it: the runtime's or cargo's next line, another
    panic's header (after a logger's prefix too, not inside a value such as a relaying `CallError(..)`), or a
    logger's next line."""
    line = lines[index]
    if _MESSAGE_END.match(line) or _LOG_LINE.match(line):
        return True
    if "panicked at" not in line:
        return False
    found = _header(lines, index)
    start = found[0].start() if found else -1
    if start < 0 and "panicked at '" in line:
        old = _HEADER_OLD_START.search(line)
        start = old.start() if old else -1
    return start >= 0 and not _inside_value(line[:start], depth)


def _without_user_note(line: str) -> str:
    """A message line without the note its paster wrote after it (`boom      # <- the cause`): only a note
    after two spaces, with text before it, outside any quoted string or bracketed value."""
    if "  " not in line:
        return line
    for note in _USER_NOTE.finditer(line):
        before = line[: note.start()]
        if before.strip() and not _inside_value(before):
            return before
    return line


def _frames(lines: list[str], start: int) -> tuple[tuple[Frame, ...], int]:
    """Backtrace frames after a `stack backtrace:` line at `start`."""
    frames: list[Frame] = []
    index = start + 1
    while index < len(lines) and len(frames) < MAX_FRAMES:
        symbol = _FRAME_SYMBOL.match(lines[index])
        if not symbol:
            break
        location = None
        if index + 1 < len(lines):
            at = _FRAME_AT.match(lines[index + 1])
            if at:
                location = _location(at.group("path"), at.group("line"), at.group("col"))
                index += 1
        frames.append(Frame(int(symbol.group("index")), symbol.group("symbol"), location))
        index += 1
    return tuple(frames), index


def _thread_id(value: str | None) -> int | None:
    return int(value) if value else None


def _old_style_panic(lines: list[str], index: int) -> tuple[Panic, int] | None:
    """`panicked at 'message', path:l:c`, whose message may run over several lines."""
    line = lines[index]
    if "panicked at '" not in line:
        return None
    start = _HEADER_OLD_START.search(line)
    if not start:
        return None
    rest = "\n".join([line[start.end() :], *lines[index + 1 : index + OLD_STYLE_MESSAGE_LINES]])
    end = _HEADER_OLD_END.search(rest)
    if not end:
        return _cut_old_style_panic(lines, index, start)
    message = rest[: end.start()]
    used = message.count("\n") + 1
    panic = Panic(
        message=message,
        location=_location(end.group("path"), end.group("line"), end.group("col")),
        thread=start.group("thread"),
        thread_id=_thread_id(start.group("tid")),
    )
    return panic, index + used


def _cut_old_style_panic(lines: list[str], index: int, start: re.Match[str]) -> tuple[Panic, int]:
    """`panicked at 'message` whose closing `', path:l:c` was cut from the paste: the message runs to a blank
    line, a `note:` or `stack backtrace:` line, a logger's line or the next panic."""
    collected = [lines[index][start.end() :].rstrip()]
    depth = max(0, _opened(collected[0]))
    next_index = index + 1
    while next_index < len(lines) and next_index - index < OLD_STYLE_MESSAGE_LINES:
        line = lines[next_index]
        if not line.strip() or line.lstrip().startswith("note:") or _ends_message(lines, next_index, depth):
            break
        collected.append(line.rstrip())
        depth = max(0, depth + _opened(line))
        next_index += 1
    message = "\n".join(collected).strip()
    if message.endswith(("'", "',")) and message.count("'") % 2 == 1:
        message = message.rstrip(",")[:-1].rstrip()  # the closing quote, with the location cut after it
    panic = Panic(message=message, thread=start.group("thread"), thread_id=_thread_id(start.group("tid")))
    return panic, next_index


def _header(lines: list[str], index: int) -> tuple[re.Match[str], int] | None:
    """The new-style header on the line at `index`, and how many lines it takes: 2 when a terminal wrapped
    its path onto the next line (anywhere, even inside a word; a space chat put at the wrap is dropped)."""
    line = lines[index]
    if "panicked at " in line:
        header = _HEADER_NEW.search(line)
        if header:
            return header, 1
    return _wrapped_header(lines, index)


def _wrapped_header(lines: list[str], index: int) -> tuple[re.Match[str], int] | None:
    if index + 1 >= len(lines):
        return None
    following = lines[index + 1]
    if "panicked at" in following or ":" not in following:
        return None
    following = following.strip()
    head = lines[index].rstrip()
    at = head.rfind("panicked at")
    if at < 0 or not following:
        return None
    start = head[at + len("panicked at") :].lstrip()
    if start.startswith("'") or any(char.isspace() for char in start):
        return None  # the old `panicked at '...'` form, or prose
    joined = head + following if start else head + " " + following
    header = _HEADER_NEW.search(joined, max(0, at - 400))
    if header is None or header.start("path") < at or any(char.isspace() for char in header.group("path")):
        return None
    return header, 2


def _new_style_panic(lines: list[str], index: int) -> tuple[Panic, int] | None:
    line = lines[index]
    if "panicked at" not in line:
        return None  # a plain scan first: most lines of a long log are not headers
    header = _HEADER_NEW.search(line) if "panicked at " in line else None
    if header:
        span = 1
    else:
        # A log of many header fragments comes here for every line: the next line's own `panicked at` first.
        if index + 1 >= len(lines) or "panicked at" in lines[index + 1]:
            return None
        found = _wrapped_header(lines, index)
        if not found:
            return None
        header, span = found
    rest = header.group("rest")
    first = index + span
    depth = max(0, _opened(rest)) if rest else 0
    body, next_index = _message_lines(lines, first, _indent(line), depth)
    if not rest and not body:
        # A blank line between the header and its message (chat, a log's double spacing, a bar erased).
        start = first
        while (
            start < len(lines) and start - first < MAX_BLANK_LINES_BEFORE_MESSAGE and not lines[start].strip()
        ):
            start += 1
        if start > first:
            later, later_next = _message_lines(lines, start, _indent(line))
            if later:
                body, next_index = later, later_next
    head = [_without_user_note(rest.rstrip())] if rest else []
    message = "\n".join(head + body).strip("\n")
    # Joined onto one line by chat, the runtime's `note: run with RUST_BACKTRACE=1` follows the message.
    joined_end = _JOINED_END.search(message)
    if joined_end:
        message = message[: joined_end.start()]
    panic = Panic(
        message=message,
        location=_location(header.group("path"), header.group("line"), header.group("col")),
        thread=header.group("thread"),
        thread_id=_thread_id(header.group("tid")),
    )
    return panic, next_index


def _attach_frames(panic: Panic, lines: list[str], index: int) -> tuple[Panic, int]:
    """Backtrace frames printed right after the panic (after its `note:` lines) belong to it."""
    probe = index
    while (
        probe < len(lines) and probe - index < 4 and not lines[probe].strip().startswith("stack backtrace:")
    ):
        if _HEADER_NEW.search(lines[probe]) or _HEADER_OLD_START.search(lines[probe]):
            return panic, index
        probe += 1
    if probe < len(lines) and lines[probe].strip().startswith("stack backtrace:"):
        frames, end = _frames(lines, probe)
        return replace(panic, frames=frames), end
    return panic, index


def _headerless_messages(lines: list[str], text: str) -> list[Panic]:
    """Runtime messages pasted without their header, such as an unwrap on an Err; a relaying `CallError(`
    left open at the end of its line runs on over the next lines until it closes."""
    found = []
    for index in _lines_holding(text, _UNWRAP.search):
        line = lines[index]
        unwrap = _UNWRAP.search(line)
        if unwrap:
            message = _without_user_note(line[unwrap.start() :].strip())
            depth = _opened(message[message.find("CallError(") :]) if "CallError(" in message else 0
            following = index + 1
            while depth > 0 and following < min(len(lines), index + OLD_STYLE_MESSAGE_LINES):
                if not lines[following].strip() or _ends_message(lines, following, depth):
                    break
                message += "\n" + lines[following].strip()
                depth += _opened(lines[following])
                following += 1
            found.append(Panic(message=message, kind="message"))
    return found


def extract_panics(text: str) -> list[Panic]:
    """Every panic in a chat message, in the order printed (the first is usually the root cause; see
    `Panic.follow_on` and `root_panic_index`).

    With no panic shape in the text, the whole text is one `query` panic (a typed search or a pasted
    message fragment). Empty or whitespace-only text gives no panic. Never raises.
    """
    return list(extract(text).panics)


def extract(text: str) -> Extraction:
    """`extract_panics` with whether the whole paste was read. A paste of any length up to MAX_PASTE_CHARS is
    read whole in time linear in its length (only windows around its panic markers are normalised when it is
    longer than MAX_TEXT_CHARS). Never raises."""
    truncated = len(text) > MAX_PASTE_CHARS
    if truncated:
        text = text[:MAX_PASTE_CHARS]
    small = len(text) <= MAX_TEXT_CHARS
    clean = normalize_chat_text(text) if small else ""
    pieces = (
        [clean]
        if small
        else (normalize_chat_text(text[start:end], end - start) for start, end in panic_windows(text))
    )
    headers: list[Panic] = []
    headerless: list[Panic] = []
    for piece in pieces:
        lines = piece.split("\n")
        headers += _header_panics(lines, piece)
        if len(headers) >= MAX_PANICS:
            break
        if not headers and len(headerless) < MAX_PANICS:
            headerless += _headerless_messages(lines, piece)
    panics = headers[:MAX_PANICS] or headerless[:MAX_PANICS]
    if panics:
        return Extraction(tuple(_with_follow_ons(panics)), truncated)
    query = (clean if small else normalize_chat_text(text[:MAX_TEXT_CHARS])).strip()
    return Extraction((Panic(message=query, kind="query"),) if query else (), truncated)


def _header_panics(lines: list[str], text: str) -> list[Panic]:
    """The panics with a `panicked at` header in normalised lines (`text` split at its line breaks), with
    their frames. Only the lines that can start a header are tried (`_header_lines`)."""
    panics: list[Panic] = []
    candidates = _header_lines(text)
    position = 0
    index = 0
    while len(panics) < MAX_PANICS:
        position = bisect_left(candidates, index, position)
        if position >= len(candidates):
            break
        index = candidates[position]
        found = _new_style_panic(lines, index) or _old_style_panic(lines, index)
        if found is None:
            index += 1
            continue
        panic, index = found
        panic, index = _attach_frames(panic, lines, index)
        panics.append(panic)
    return panics


def _header_lines(text: str) -> list[int]:
    """The sorted indexes of the lines of `text` that can start a header, found by a few C-level scans: an
    old-style header's line holds `panicked at '`; a new-style header's line or the next (a wrapped path)
    holds its `:line:col:` (`_LOCATION_HINT`). Every other line is skipped without a Python call."""
    found = set(_lines_holding(text, _LOCATION_HINT.search))
    found.update([index - 1 for index in found if index > 0])
    found.update(_lines_holding(text, _OLD_HEADER_HINT.search))
    return sorted(found)


def _lines_holding(text: str, search: Callable[[str, int], re.Match[str] | None]) -> list[int]:
    """The indexes, in order, of the lines of `text` on which `search(text, start)` finds a hit starting
    (one call a line holding one, the line breaks counted in C)."""
    lines: list[int] = []
    line = counted = start = 0
    while (hit := search(text, start)) is not None:
        at = hit.start()
        line += text.count("\n", counted, at)
        counted = at
        lines.append(line)
        start = text.find("\n", at)
        if start < 0:
            break
    return lines


def panic_windows(text: str) -> list[tuple[int, int]]:
    """Disjoint `(start, end)` spans of `text`, in order, holding every panic marker and what follows each
    (see WINDOW_BEFORE, WINDOW_AFTER, WINDOW_MAX). `str.find` does the searching, so a long paste costs a few
    fast scans, and the windows' total length is at most the paste's."""
    windows: list[tuple[int, int]] = []
    position = 0
    # Each marker's next place, searched for again only once passed: an absent marker is scanned for once.
    found = dict.fromkeys(PANIC_MARKERS, -2)
    while (marker := _next_marker(text, position, found)) >= 0:
        line_start = text.rfind("\n", max(position, marker - WINDOW_BEFORE), marker)
        start = line_start + 1 if line_start >= 0 else max(position, marker - WINDOW_BEFORE)
        end = _window_end(text, start, marker)
        windows.append((start, end))
        position = max(end, marker + 1)
    return windows


def _window_end(text: str, start: int, marker: int) -> int:
    end, searched = marker + WINDOW_AFTER, marker + 1
    # Markers inside the window stretch it, so a panic is never cut from its message or frames.
    while end < len(text):
        last = _last_marker(text, searched, end)
        if last < 0:
            break
        if last + WINDOW_AFTER - start > WINDOW_MAX:
            # Full: it ends before the line of this marker, which then opens the next window whole.
            cut = text.rfind("\n", max(marker + 1, last - WINDOW_BEFORE), last)
            return cut if cut > marker else last
        searched, end = end, last + WINDOW_AFTER
    if end >= len(text):
        return len(text)
    line_end = text.find("\n", end, end + WINDOW_BEFORE)
    return line_end if line_end >= 0 else end


def _next_marker(text: str, start: int, found: dict[str, int]) -> int:
    """The first marker at or after `start`; `found` holds each marker's place found last (-1: none after it,
    -2: not searched for yet), `start` never decreasing between calls."""
    for marker, at in found.items():
        if at == -2 or 0 <= at < start:
            found[marker] = text.find(marker, start)
    places = [at for at in found.values() if at >= 0]
    return min(places) if places else -1


def _last_marker(text: str, start: int, end: int) -> int:
    return max(text.rfind(marker, start, end) for marker in PANIC_MARKERS)


# Panic messages that echo an earlier panic instead of causing anything.
_ECHO_ERROR = re.compile(
    r"(?:`Err` value|[^\s:]): (?:PoisonError\b|(?:Try)?(?:Send|Recv)(?:Timeout)?Error\b|"
    r"(?:Try)?RecvTimeoutError::Disconnected|Any \{ \.\. \})"
)
_ECHO_START = (
    "panic in a destructor during cleanup",
    "panic in a function that cannot unwind",
    "thread panicked while processing panic",
    "panicked while processing panic",
    "a scoped thread panicked",
    "Ordering is bigger than operations",
)
# Messages that carry another panic's message: cubecl/burn's device runner, tokio's JoinError.
# Their words may be broken over lines (a terminal's wrap), so any whitespace may come between them.
_RELAY = re.compile(r"task\s+panicked\s+on\s+device\s+runner\s+thread:\s")
_RELAY_WITHOUT_MESSAGE = re.compile(
    r"task\s+panicked\s+on\s+device\s+runner\s+thread|device\s+runner\s+channel\s+disconnected|JoinError::Panic"
)
_JOIN_ERROR = re.compile(r'JoinError::Panic\(Id\(\d+\), "((?:[^"\\]|\\.)*)"')


def root_panic_index(panics: list[Panic] | tuple[Panic, ...]) -> int | None:
    """The index of the first panic that is not a follow-on (the likely cause), or None if there is none."""
    return next((index for index, panic in enumerate(panics) if not panic.follow_on), None)


def _with_follow_ons(panics: list[Panic]) -> list[Panic]:
    """The panics with `follow_on` set and each relayed message added as its own panic after its relayer."""
    marked: list[Panic] = []
    seen: set[str] = set()
    for position, panic in enumerate(panics):
        relayed = _relayed_panic(panic.message)
        later = position > 0
        if relayed is not None:
            marked.append(replace(panic, follow_on=True))
            marked.append(replace(relayed, follow_on=later and _is_echo(relayed.message, seen)))
        else:
            marked.append(replace(panic, follow_on=later and _is_echo(panic.message, seen)))
        seen.update(found.message for found in marked[-2:] if found.message)
    return marked[:MAX_PANICS]


def _is_echo(message: str, earlier: set[str]) -> bool:
    first_lines = message.split("\n", 2)
    first_line = first_lines[0]
    # A relay's words broken over two lines: its `CallError(` opens the first line.
    relay = "\n".join(first_lines[:2]) if "CallError(" in first_line else first_line
    return (
        message in earlier
        or message.startswith(_ECHO_START)
        or _ECHO_ERROR.search(first_line) is not None
        or _RELAY_WITHOUT_MESSAGE.search(relay) is not None
    )


def _relayed_panic(message: str) -> Panic | None:
    """The panic a message relays, when it carries one's message."""
    relayed = _relayed_text(message)
    if not relayed:
        return None
    lines = relayed.split("\n")
    found = _new_style_panic(lines, 0) or _old_style_panic(lines, 0)
    if found is not None and found[0].message:
        return replace(found[0], kind="relayed")
    return Panic(message=relayed, kind="relayed")


def _relayed_text(message: str) -> str | None:
    relay = _RELAY.search(message) if "task" in message else None
    if relay is not None:
        at = relay.start()
        rest = message[relay.end() :]
        if message.rfind("CallError(", 0, at) >= 0:
            rest = rest[: _closing_parenthesis(rest)]
        return rest.strip() or None
    join = _JOIN_ERROR.search(message)
    if join is None:
        return None
    try:
        text = json.loads(f'"{join.group(1)}"')
    except ValueError:
        text = join.group(1).replace('\\"', '"')
    return str(text).strip() or None


def _closing_parenthesis(text: str) -> int:
    """Where the parenthesis opened before `text` closes; at the last `)` if the text never balances it."""
    depth = 1
    for position, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return position
    last = text.rfind(")")
    return last if last >= 0 else len(text)
