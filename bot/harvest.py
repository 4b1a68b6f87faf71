"""Panic sites with a literal message in Rust source, and the baseline records the data set makes of them.

Text in, sites and records out: the caller reads the files. The conventions (id, slug, tags, backgroundTag,
pattern) are those of `../shared/data/burn-panics.jsonl`, which this reproduces for the macro kinds it scans.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from bot.records import Record
from bot.rust_messages import escape_literal, pattern_from_message, split_format_string

# Macro name -> index of its message argument (assert_eq!(left, right, "msg", ...)).
MACRO_MESSAGE_ARGUMENT: dict[str, int] = {
    "panic": 0,
    "todo": 0,
    "unimplemented": 0,
    "unreachable": 0,
    "assert": 1,
    "debug_assert": 1,
    "assert_eq": 2,
    "assert_ne": 2,
    "debug_assert_eq": 2,
    "debug_assert_ne": 2,
}
EXPECT = "expect"
# burn-tensor's checks: `TensorError::new(<message>)`, optionally `.details(<more>)`, both literal strings or
# `format!` of one; printed as one numbered reason, the message and its details joined by a space.
TENSOR_CHECK = "tensor_check"
KINDS = (*MACRO_MESSAGE_ARGUMENT, EXPECT, TENSOR_CHECK)

BACKGROUND_TAGS: dict[str, str] = {
    "panic": "explicit-panic",
    "expect": "expect-failed",
    "assert": "assertion-failed",
    "debug_assert": "assertion-failed",
    "assert_eq": "assertion-mismatch",
    "assert_ne": "assertion-mismatch",
    "debug_assert_eq": "assertion-mismatch",
    "debug_assert_ne": "assertion-mismatch",
    "todo": "unimplemented-api-stub",
    "unimplemented": "unimplemented-api-stub",
    "unreachable": "unreachable-invariant",
    TENSOR_CHECK: "tensor-check-failed",
}

# Test, bench and example code never runs in a user's program, so its panics are not worth a record.
SKIPPED_DIRECTORIES = frozenset({"tests", "benches", "examples"})
SLUG_MAX_LENGTH = 80

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())
# Items an attribute can sit on: after `#[cfg(test)]` such an item runs to its `;` or its body's `}`.
_ITEM_KEYWORDS = frozenset(
    {"fn", "mod", "impl", "struct", "enum", "trait", "const", "static", "use", "type", "pub", "unsafe",
     "async", "extern", "macro_rules", "union", "let"}
)  # fmt: skip
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<comment>//[^\n]*)|(?P<block>/\*)|(?P<ident>[^\W\d]\w*)"
    r"|(?P<number>\d\w*(?:\.\d\w*)?)|(?P<quote>\")|(?P<tick>')|(?P<punct>.)",
    re.DOTALL,
)
_BLOCK_EDGE = re.compile(r"/\*|\*/")
_STRING_STOP = re.compile(r"[\"\\]")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "0": "\0", "'": "'", '"': '"'}
# What a `\` at the end of a line skips at the start of the next one (the Rust reference's whitespace).
_CONTINUATION_SPACE = " \t\n\r"
_SLUG_NON_WORD = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class HarvestedSite:
    """One panic site: the call (macro or `.expect`), its literal message and where it is (1-based)."""

    repo: str
    sha: str
    file_path: str
    kind: str
    message: str
    line: int
    column: int
    function: str | None

    @property
    def is_format(self) -> bool:
        """`.expect` takes a plain string; every macro here takes a format string."""
        return self.kind != EXPECT

    @property
    def message_pattern(self) -> str:
        return message_pattern(self.message, is_format=self.is_format)

    @property
    def background_tag(self) -> str:
        return BACKGROUND_TAGS[self.kind]

    @property
    def github_url(self) -> str:
        return github_url(self.repo, self.sha, self.file_path, self.line)


@dataclass(frozen=True)
class _Token:
    kind: str  # "ident", "punct", "str" (a string literal a message can be), "lit" (any other literal)
    text: str  # the identifier, the punctuation character, or the string's value
    start: int  # offset in the normalised source


# ---- Conventions of the data set ----------------------------------------------------------------------


def normalise_path(file_path: str) -> str:
    """Repository path with `/` separators and no leading `./`."""
    path = file_path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def is_skipped_path(file_path: str) -> bool:
    """True for files under a `tests/`, `benches/` or `examples/` directory."""
    directories = normalise_path(file_path).split("/")[:-1]
    return any(part in SKIPPED_DIRECTORIES for part in directories)


def record_id(repo: str, file_path: str, message: str) -> str:
    """The data set's id: the first 16 hex digits of SHA-256 over repo, file path and message."""
    return hashlib.sha256(f"{repo}\n{file_path}\n{message}".encode()).hexdigest()[:16]


def message_pattern(message: str, *, is_format: bool) -> str:
    """`(.+?)` per placeholder for format strings; a plain `.expect` message is escaped whole."""
    return pattern_from_message(message) if is_format else escape_literal(message)


def slug(message: str, *, is_format: bool, fallback: str = "panic") -> str:
    """Lower-case words joined by `-`, placeholders dropped, cut to 80 characters at a word boundary."""
    text = " ".join(split_format_string(message)) if is_format else message
    words = _SLUG_NON_WORD.sub("-", text.lower()).strip("-")
    if len(words) > SLUG_MAX_LENGTH:
        # The data set cuts at 80 and then drops the last (possibly partial) word, even a whole one.
        words = words[:SLUG_MAX_LENGTH].rsplit("-", 1)[0]
    return words or fallback


def github_url(repo: str, sha: str, file_path: str, line: int) -> str:
    return f"https://github.com/{repo}/blob/{sha}/{quote(normalise_path(file_path), safe='/')}#L{line}"


def crate_of(file_path: str, repo: str) -> str:
    """The crate a file belongs to: `crates/<crate>/...`, else the folder above `src/`, else the repo."""
    parts = normalise_path(file_path).split("/")
    directories = parts[:-1]
    repo_name = repo.rsplit("/", 1)[-1]
    if len(directories) >= 2 and directories[0] == "crates":
        return directories[1]
    if "src" in directories:
        index = directories.index("src")
        return directories[index - 1] if index > 0 else repo_name
    return directories[-1] if directories else repo_name


def kind_tag(kind: str) -> str:
    return kind.replace("_", "-")


def site_tags(file_path: str, repo: str, kind: str) -> tuple[str, ...]:
    """`rust`, the repo name, the crate, the crate without the repo prefix, the macro kind."""
    repo_name = repo.rsplit("/", 1)[-1].lower()
    crate = crate_of(file_path, repo).lower()
    short = crate.removeprefix(f"{repo_name}-")
    tags: list[str] = []
    for tag in ("rust", repo_name, crate, short, kind_tag(kind)):
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags)


# ---- Lexing -------------------------------------------------------------------------------------------


def _skip_block_comment(text: str, start: int) -> int:
    """Offset after the block comment opening at `start`; block comments nest in Rust."""
    depth = 0
    position = start
    while True:
        edge = _BLOCK_EDGE.search(text, position)
        if edge is None:
            return len(text)
        depth += 1 if edge.group(0) == "/*" else -1
        position = edge.end()
        if depth == 0:
            return position


def _escape(text: str, start: int) -> tuple[str, int]:
    """The character a backslash escape at `start` stands for, and the offset after it.

    An escape Rust would refuse is kept as written: the harvester reads code that may not compile.
    """
    if start + 1 >= len(text):
        return "\\", len(text)
    code = text[start + 1]
    if code in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[code], start + 2
    if code == "\n":
        end = start + 2
        while end < len(text) and text[end] in _CONTINUATION_SPACE:
            end += 1
        return "", end
    if code == "x":
        digits = text[start + 2 : start + 4]
        if len(digits) == 2 and set(digits) <= _HEX:
            return chr(int(digits, 16)), start + 4
    if code == "u" and text.startswith("{", start + 2):
        close = text.find("}", start + 3, start + 16)
        digits = text[start + 3 : close].replace("_", "") if close > 0 else ""
        if 0 < len(digits) <= 6 and set(digits) <= _HEX:
            value = int(digits, 16)
            # Surrogates are not Rust chars, and a lone one could not be written out as UTF-8 later.
            if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
                return chr(value), close + 1
    return text[start : start + 2], start + 2


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Value of the escaped string whose contents begin at `start`, and the offset after its quote."""
    parts: list[str] = []
    position = start
    while True:
        stop = _STRING_STOP.search(text, position)
        if stop is None:
            parts.append(text[position:])
            return "".join(parts), len(text)
        parts.append(text[position : stop.start()])
        if stop.group(0) == '"':
            return "".join(parts), stop.end()
        value, position = _escape(text, stop.start())
        parts.append(value)


def _read_raw_string(text: str, start: int) -> tuple[str, int] | None:
    """Value of the raw string whose `#`s (if any) begin at `start`, or None when no quote follows them."""
    position = start
    while position < len(text) and text[position] == "#":
        position += 1
    if position >= len(text) or text[position] != '"':
        return None
    closing = '"' + "#" * (position - start)
    end = text.find(closing, position + 1)
    if end < 0:
        return text[position + 1 :], len(text)
    return text[position + 1 : end], end + len(closing)


def _prefixed_literal(text: str, word: str, start: int, after: int) -> tuple[_Token, int] | None:
    """A literal written with a prefix (`r"..."`, `r#"..."#`, `b"..."`, `br"..."`, `c"..."`) or a raw
    identifier (`r#match`); None when `word` is a plain identifier."""
    nxt = text[after] if after < len(text) else ""
    if word in ("r", "br", "cr") and nxt in ('"', "#"):
        raw = _read_raw_string(text, after)
        if raw is not None:
            return _Token("str" if word == "r" else "lit", raw[0], start), raw[1]
        if word == "r" and nxt == "#":
            ident = _TOKEN.match(text, after + 1)
            if ident is not None and ident.lastgroup == "ident":
                return _Token("ident", ident.group(0), start), ident.end()
        return None
    if word in ("b", "c") and nxt == '"':
        value, end = _read_string(text, after + 1)
        return _Token("lit", value, start), end
    if word == "b" and nxt == "'":
        char_end = _char_literal_end(text, after)
        if char_end is not None:
            return _Token("lit", text[after:char_end], start), char_end
    return None


def _char_literal_end(text: str, start: int) -> int | None:
    """Offset after the char literal opening at `start`, or None for a lifetime or label (`'a`)."""
    if text.startswith("\\", start + 1):
        # The escaped character itself may be a quote (`'\''`), so the search starts after it.
        close = text.find("'", start + 3, start + 16)
        return close + 1 if close > 0 else None
    if start + 2 < len(text) and text[start + 2] == "'" and text[start + 1] != "\n":
        return start + 3
    return None


def _lex(text: str) -> list[_Token]:
    """Identifiers, punctuation and literals of Rust source; comments and whitespace are dropped.

    Never raises: an unterminated string or comment runs to the end of the text.
    """
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - `(?P<punct>.)` with DOTALL matches any character
            break
        group = match.lastgroup
        start, end = match.start(), match.end()
        if group in ("space", "comment"):
            position = end
        elif group == "block":
            position = _skip_block_comment(text, start)
        elif group == "ident":
            literal = _prefixed_literal(text, match.group(0), start, end)
            if literal is not None:
                tokens.append(literal[0])
                position = literal[1]
            else:
                tokens.append(_Token("ident", match.group(0), start))
                position = end
        elif group == "quote":
            value, position = _read_string(text, end)
            tokens.append(_Token("str", value, start))
        elif group == "tick":
            char_end = _char_literal_end(text, start)
            if char_end is None:
                tokens.append(_Token("punct", "'", start))
                position = end
            else:
                tokens.append(_Token("lit", text[start:char_end], start))
                position = char_end
        elif group == "number":
            tokens.append(_Token("lit", match.group(0), start))
            position = end
        else:
            tokens.append(_Token("punct", match.group(0), start))
            position = end
    return tokens


# ---- Scanning -----------------------------------------------------------------------------------------

_Span = tuple[int, int]  # token indexes [start, end) of one argument
_MAX_CFG_DEPTH = 16


def _is(token: _Token | None, kind: str, text: str | None = None) -> bool:
    return token is not None and token.kind == kind and (text is None or token.text == text)


def _match_delimiters(tokens: Sequence[_Token]) -> list[int]:
    """For each opening delimiter, the index of its closer (len(tokens) when never closed); -1 elsewhere.

    Computed once so that every later walk jumps over nested groups: the scan stays linear even in code
    that never closes its brackets.
    """
    matches = [-1] * len(tokens)
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.kind != "punct":
            continue
        if token.text in _OPEN:
            stack.append(index)
        elif token.text in _CLOSE and stack:
            matches[stack.pop()] = index
    for index in stack:
        matches[index] = len(tokens)
    return matches


class _Scanner:
    """One pass over the tokens of a file, tracking the enclosing function and skipping test code."""

    def __init__(self, text: str, file_path: str, repo: str, sha: str) -> None:
        self.tokens = _lex(text)
        self.matches = _match_delimiters(self.tokens)
        self.file_path = file_path
        self.repo = repo
        self.sha = sha
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.sites: list[HarvestedSite] = []
        self.test_modules: list[str] = []  # `#[cfg(test)] mod NAME;`: NAME's own file is test code
        self.functions: list[str | None] = []  # one entry per open `{`: the fn whose body it opens, if any
        self.pending_function: str | None = None

    def token(self, index: int) -> _Token | None:
        return self.tokens[index] if 0 <= index < len(self.tokens) else None

    def close_of(self, open_index: int) -> int:
        return self.matches[open_index] if 0 <= open_index < len(self.tokens) else len(self.tokens)

    def arguments(self, open_index: int) -> list[_Span]:
        """The comma-separated arguments of the group opening at `open_index`. Turbofish generics
        (`::<A, B>`) do not split an argument; nested groups are jumped over."""
        close = self.close_of(open_index)
        spans: list[_Span] = []
        start = index = open_index + 1
        angles = 0
        while index < close:
            token = self.tokens[index]
            if token.kind == "punct":
                text = token.text
                if text in _OPEN:
                    index = self.close_of(index)
                elif text == "<" and (
                    angles
                    or (_is(self.token(index - 1), "punct", ":") and _is(self.token(index - 2), "punct", ":"))
                ):
                    angles += 1
                elif text == ">" and angles and not _is(self.token(index - 1), "punct", "-"):
                    angles -= 1
                elif text == "," and angles == 0:
                    spans.append((start, index))
                    start = index + 1
            index += 1
        spans.append((start, min(close, len(self.tokens))))
        return spans

    def lone_string(self, span: _Span) -> str | None:
        """The value of an argument that is one string literal and nothing else (not `concat!`, a name)."""
        start, end = span
        if end - start == 1 and self.tokens[start].kind == "str":
            return self.tokens[start].text
        return None

    def run(self) -> list[HarvestedSite]:
        index = 0
        while index < len(self.tokens):
            token = self.tokens[index]
            if token.kind == "punct":
                index = self.punctuation(index)
                continue
            if token.kind == "ident":
                self.identifier(index)
            index += 1
        return self.sites

    def punctuation(self, index: int) -> int:
        text = self.tokens[index].text
        if text == "#":
            return self.attribute(index)
        if text == "{":
            self.functions.append(self.pending_function)
            self.pending_function = None
        elif text == "}":
            if self.functions:
                self.functions.pop()
        elif text == ";":
            self.pending_function = None  # a trait method without a body
        return index + 1

    # -- test code --

    def attribute(self, index: int) -> int:
        """Index after the attribute at `index`, or after the test code it marks."""
        inner = _is(self.token(index + 1), "punct", "!")
        open_index = index + (2 if inner else 1)
        if not _is(self.token(open_index), "punct", "["):
            return index + 1
        close = self.close_of(open_index)
        if not self.is_test_attribute(open_index + 1, close):
            return close + 1
        if inner:
            # `#![cfg(test)]` makes the rest of the enclosing module (or file) test code.
            return self.end_of_block(close + 1)
        module = self.out_of_line_module(close + 1)
        if module is not None:
            self.test_modules.append(module)
        return self.end_of_item(close + 1)

    def out_of_line_module(self, index: int) -> str | None:
        """NAME of `[pub[(..)]] mod NAME;` at `index` (after any further attributes): a module in its own
        file, which the attribute before it makes test code too."""
        while _is(self.token(index), "punct", "#") and _is(self.token(index + 1), "punct", "["):
            index = self.close_of(index + 1) + 1
        if _is(self.token(index), "ident", "pub"):
            index += 1
            if _is(self.token(index), "punct", "("):
                index = self.close_of(index) + 1
        name = self.token(index + 1)
        if (
            _is(self.token(index), "ident", "mod")
            and name is not None
            and name.kind == "ident"
            and _is(self.token(index + 2), "punct", ";")
        ):
            return name.text.removeprefix("r#")
        return None

    def is_test_attribute(self, start: int, end: int) -> bool:
        """`#[test]`, `#[tokio::test(...)]` and the like, `#[cfg(test)]`, `#[cfg(all(test, ...))]`."""
        if (
            end - start >= 3
            and _is(self.tokens[start], "ident", "cfg")
            and _is(self.token(start + 1), "punct", "(")
        ):
            arguments = self.arguments(start + 1)
            return len(arguments) == 1 and self.cfg_requires_test(arguments[0], 0)
        index = start
        while index < end and (self.tokens[index].kind == "ident" or _is(self.tokens[index], "punct", ":")):
            index += 1
        path_end = index
        plain = path_end == end or _is(self.tokens[path_end], "punct", "(")
        return plain and path_end > start and _is(self.tokens[path_end - 1], "ident", "test")

    def cfg_requires_test(self, span: _Span, depth: int) -> bool:
        """True when a cfg predicate holds only in test builds: `test`, `all(.., test, ..)`,
        `any(test, test)`; never for `not(...)`."""
        start, end = span
        if end - start == 1:
            return _is(self.tokens[start], "ident", "test")
        head = self.tokens[start] if end - start >= 3 else None
        if depth >= _MAX_CFG_DEPTH or head is None or not _is(self.token(start + 1), "punct", "("):
            return False
        arguments = [arg for arg in self.arguments(start + 1) if arg[1] > arg[0]]
        if _is(head, "ident", "all"):
            return any(self.cfg_requires_test(arg, depth + 1) for arg in arguments)
        if _is(head, "ident", "any"):
            return bool(arguments) and all(self.cfg_requires_test(arg, depth + 1) for arg in arguments)
        return False

    def end_of_block(self, index: int) -> int:
        """Index of the `}` closing the block `index` is in (left to the caller), or the end of the tokens."""
        while index < len(self.tokens):
            token = self.tokens[index]
            if token.kind == "punct" and token.text in _OPEN:
                index = self.close_of(index)
            elif token.kind == "punct" and token.text in _CLOSE:
                return index
            index += 1
        return index

    def end_of_item(self, index: int) -> int:
        """Index after the item, statement, match arm or field that begins at `index` (its attributes
        first): an item ends at its `;` or its body's `}`; the others also at a `,`."""
        while _is(self.token(index), "punct", "#") and _is(self.token(index + 1), "punct", "["):
            index = self.close_of(index + 1) + 1
        first = self.token(index)
        is_item = first is not None and first.kind == "ident" and first.text in _ITEM_KEYWORDS
        while index < len(self.tokens):
            token = self.tokens[index]
            if token.kind == "punct":
                if token.text in _OPEN:
                    close = self.close_of(index)
                    if token.text == "{":
                        return close + 1
                    index = close
                elif token.text in _CLOSE:
                    return index  # the enclosing block ends: its `}` is the caller's
                elif token.text == ";" or (token.text == "," and not is_item):
                    return index + 1
            index += 1
        return index

    # -- sites --

    def identifier(self, index: int) -> None:
        name = self.tokens[index].text
        after = self.token(index + 1)
        if name == "fn" and after is not None and after.kind == "ident":
            self.pending_function = after.text
        elif name in MACRO_MESSAGE_ARGUMENT and _is(after, "punct", "!"):
            opener = self.token(index + 2)
            if opener is not None and opener.kind == "punct" and opener.text in _OPEN:
                self.macro_call(index)
        elif name == "TensorError" and self.follows(index + 1, (":", ":", "new", "(")):
            self.tensor_error(index)
        elif name == EXPECT and _is(self.token(index - 1), "punct", ".") and _is(after, "punct", "("):
            arguments = self.arguments(index + 1)
            if len(arguments) == 2 and arguments[1][0] == arguments[1][1]:
                arguments.pop()  # a trailing comma
            if len(arguments) == 1:
                self.add_site(EXPECT, self.lone_string(arguments[0]), self.tokens[index].start)

    def macro_call(self, index: int) -> None:
        name = self.tokens[index].text
        arguments = self.arguments(index + 2)
        wanted = MACRO_MESSAGE_ARGUMENT[name]
        message: str | None = None
        if wanted == 0:
            message = self.lone_string(arguments[0])
        else:
            # The first string-only argument from the message's place on: an argument that split in two
            # at a comma the splitter cannot tell apart (a closure's `|a, b|`) still finds the message.
            for argument in arguments[wanted:]:
                message = self.lone_string(argument)
                if message is not None:
                    break
        self.add_site(name, message, self.tokens[self.path_start(index)].start)

    def follows(self, index: int, texts: Sequence[str]) -> bool:
        """Whether the tokens from `index` on read `texts`."""
        return all(
            (token := self.token(index + offset)) is not None and token.text == text
            for offset, text in enumerate(texts)
        )

    def tensor_error(self, index: int) -> None:
        """`TensorError::new(m)[.details(d)]`: the reason "m d" a failed burn-tensor check prints."""
        opener = index + 4
        message = self.message_argument(opener)
        if message is None:
            return
        after = self.close_of(opener) + 1
        if self.follows(after, (".", "details", "(")):
            details = self.message_argument(after + 2)
            if details is not None:
                message = f"{message} {details}"
        self.add_site(TENSOR_CHECK, message, self.tokens[index].start)

    def message_argument(self, opener: int) -> str | None:
        """The format string of the call opening at `opener` when its one argument is a string literal
        (its braces escaped) or `format!` of one; else None."""
        arguments = self.arguments(opener)
        if len(arguments) == 2 and arguments[1][0] == arguments[1][1]:
            arguments.pop()  # a trailing comma
        if len(arguments) != 1:
            return None
        literal = self.lone_string(arguments[0])
        if literal is not None:
            return literal.replace("{", "{{").replace("}", "}}")
        start, end = arguments[0]
        if self.follows(start, ("format", "!")) and self.close_of(start + 2) + 1 == end:
            inner = self.arguments(start + 2)
            return self.lone_string(inner[0]) if inner else None
        return None

    def path_start(self, index: int) -> int:
        """The first token of a path-qualified macro name (`std::panic!`, `$crate::panic!`)."""
        while (
            _is(self.token(index - 1), "punct", ":")
            and _is(self.token(index - 2), "punct", ":")
            and _is(self.token(index - 3), "ident")
        ):
            index -= 3
        if _is(self.token(index - 1), "punct", "$"):
            index -= 1
        return index

    def add_site(self, kind: str, message: str | None, offset: int) -> None:
        # An empty or blank message says nothing (and the record schema needs a message).
        if message is None or not message.strip():
            return
        line = bisect.bisect_right(self.line_starts, offset)
        column = offset - self.line_starts[line - 1] + 1
        function = next((f for f in reversed(self.functions) if f), None)
        self.sites.append(
            HarvestedSite(self.repo, self.sha, self.file_path, kind, message, line, column, function)
        )


def test_module_paths(file_path: str, modules: Iterable[str]) -> list[str]:
    """Where the files of out-of-line test modules declared in `file_path` live (`NAME.rs` and `NAME/`,
    beside a lib.rs, main.rs or mod.rs, else in the folder named after the file)."""
    path = normalise_path(file_path)
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".rs")
    base = folder if stem in {"lib", "main", "mod"} else f"{folder}/{stem}" if folder else stem
    prefix = f"{base}/" if base else ""
    return [candidate for module in modules for candidate in (f"{prefix}{module}.rs", f"{prefix}{module}/")]


def harvest_file(text: str, file_path: str, *, repo: str, sha: str) -> tuple[list[HarvestedSite], list[str]]:
    """`harvest_source`, and the paths (files, and folders ending in `/`) of the test modules this file
    declares out of line: their sites are test code, though nothing in their own file says so."""
    path = normalise_path(file_path)
    if is_skipped_path(path):
        return [], []
    # rustc drops a byte order mark and reads CRLF as LF; lines and columns follow.
    source = text.removeprefix("\ufeff").replace("\r\n", "\n")
    scanner = _Scanner(source, path, repo, sha)
    sites = scanner.run()
    return sites, test_module_paths(path, scanner.test_modules)


def harvest_source(text: str, file_path: str, *, repo: str, sha: str) -> list[HarvestedSite]:
    """Panic sites with a literal message in one Rust file, in source order.

    Files under `tests/`, `benches/` or `examples/` and code under `#[cfg(test)]` or `#[test]` are skipped.
    Lines and columns are 1-based and point at the macro (or its path) or at `expect`, as Rust reports them.
    """
    return harvest_file(text, file_path, repo=repo, sha=sha)[0]


def sites_to_records(
    sites: Iterable[HarvestedSite], *, repo: str, sha: str, dataset_version: str
) -> list[Record]:
    """One baseline record per distinct message per file, at the first site's line and with its kind."""
    first: dict[tuple[str, str], HarvestedSite] = {}
    for site in sites:
        first.setdefault((normalise_path(site.file_path), site.message), site)
    records = []
    for (path, message), site in first.items():
        records.append(
            Record(
                id=record_id(repo, path, message),
                repo=repo,
                slug=slug(message, is_format=site.is_format, fallback=kind_tag(site.kind)),
                errorMessage=message,
                messagePattern=message_pattern(message, is_format=site.is_format),
                errorType="panic",
                severity="error",
                filePath=path,
                lineNumber=site.line,
                githubUrl=github_url(repo, sha, path, site.line),
                tags=site_tags(path, repo, site.kind),
                backgroundTag=BACKGROUND_TAGS[site.kind],
                analyzedSha=sha,
                analyzedAt=dataset_version,
                contentChangedAt=dataset_version,
            )
        )
    return records
