"""Chat text in, zero or more Rust panics out: message, location, thread and backtrace frames."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.chat_text import normalize_chat_text
from bot.paths import canonical_path

# A pretty-printed Debug value (`{:#?}` of a Shape, a config) runs to a line per field or element.
MAX_MESSAGE_LINES = 400
# The old `panicked at 'message', path` form is searched for its closing quote this far ahead.
OLD_STYLE_MESSAGE_LINES = 80
MAX_PANICS = 20
MAX_FRAMES = 200

# Paths are bounded so that a line of many `panicked at` cannot make the scan quadratic.
_LOCATION = r"(?P<path>[^\s'\"`][^\n]{0,1000}?):(?P<line>\d{1,7}):(?P<col>\d{1,5})"
_THREAD = r"thread '(?P<thread>[^'\n]{0,300})'(?: \((?P<tid>\d+)\))? "
# Rust >= 1.73: `thread 'main' panicked at src/x.rs:1:2:` and the message on the next lines. Chat often
# joins them into one line, so the message may follow on the header line itself.
_HEADER_NEW = re.compile(rf"(?:{_THREAD})?panicked at {_LOCATION}:(?:[ \t]+(?P<rest>\S.*))?[ \t]*$")
# Rust < 1.73: `thread 'main' panicked at 'message', src/x.rs:1:2`; the quoted message may span lines.
_HEADER_OLD_START = re.compile(rf"(?:{_THREAD})?panicked at '")
_HEADER_OLD_END = re.compile(rf"', {_LOCATION}[ \t]*$", re.MULTILINE)
_FRAME_SYMBOL = re.compile(r"^\s*(?P<index>\d+): +(?P<symbol>\S.*?)\s*$")
_FRAME_AT = re.compile(rf"^\s*at {_LOCATION}\s*$")
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
    unwrap without its header) or `query` (no panic shape at all: the text is a typed query or a fragment).
    """

    message: str
    location: Location | None = None
    thread: str | None = None
    thread_id: int | None = None
    frames: tuple[Frame, ...] = field(default=())
    kind: str = "header"


def _location(path: str, line: str, col: str) -> Location:
    raw = path.strip()
    return Location(raw_path=raw, path=canonical_path(raw), line=int(line), column=int(col))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _message_lines(lines: list[str], start: int, indent: int) -> tuple[list[str], int]:
    """The message lines after a header at `start`, dedented by the header's indent; and the next index."""
    collected: list[str] = []
    index = start
    while index < len(lines) and len(collected) < MAX_MESSAGE_LINES:
        line = lines[index]
        if not line.strip():
            # burn's tensor-check block ends with one blank line; a Debug value never holds one.
            break
        if _MESSAGE_END.match(line):
            break
        cut = min(indent, _indent(line))
        collected.append(line[cut:].rstrip())
        index += 1
    return collected, index


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


def _old_style_panic(text: str, lines: list[str], index: int) -> tuple[Panic, int] | None:
    """`panicked at 'message', path:l:c`, whose message may run over several lines."""
    line = lines[index]
    start = _HEADER_OLD_START.search(line)
    if not start:
        return None
    rest = "\n".join([line[start.end() :], *lines[index + 1 : index + OLD_STYLE_MESSAGE_LINES]])
    end = _HEADER_OLD_END.search(rest)
    if not end:
        return None
    message = rest[: end.start()]
    used = message.count("\n") + 1
    panic = Panic(
        message=message,
        location=_location(end.group("path"), end.group("line"), end.group("col")),
        thread=start.group("thread"),
        thread_id=_thread_id(start.group("tid")),
    )
    return panic, index + used


def _new_style_panic(lines: list[str], index: int) -> tuple[Panic, int] | None:
    line = lines[index]
    header = _HEADER_NEW.search(line)
    if not header:
        return None
    body, next_index = _message_lines(lines, index + 1, _indent(line))
    rest = header.group("rest")
    message = "\n".join(([rest.rstrip()] if rest else []) + body).strip("\n")
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
        return Panic(panic.message, panic.location, panic.thread, panic.thread_id, frames, panic.kind), end
    return panic, index


def _headerless_messages(lines: list[str]) -> list[Panic]:
    """Runtime messages pasted without their header, such as an unwrap on an Err."""
    found = []
    for line in lines:
        unwrap = _UNWRAP.search(line)
        if unwrap:
            found.append(Panic(message=line[unwrap.start() :].strip(), kind="message"))
    return found


def extract_panics(text: str) -> list[Panic]:
    """Every panic in a chat message, in the order printed (the first is usually the root cause).

    With no panic shape in the text, the whole text is one `query` panic (a typed search or a pasted
    message fragment). Empty or whitespace-only text gives no panic. Never raises.
    """
    clean = normalize_chat_text(text)
    lines = clean.split("\n")
    panics: list[Panic] = []
    index = 0
    while index < len(lines) and len(panics) < MAX_PANICS:
        found = _new_style_panic(lines, index) or _old_style_panic(clean, lines, index)
        if found is None:
            index += 1
            continue
        panic, index = found
        panic, index = _attach_frames(panic, lines, index)
        panics.append(panic)
    if panics:
        return panics
    headerless = _headerless_messages(lines)
    if headerless:
        return headerless[:MAX_PANICS]
    query = clean.strip()
    return [Panic(message=query, kind="query")] if query else []
