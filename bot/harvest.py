"""Panic sites with a literal message in Rust source, and the baseline records the data set makes of them.

Text in, sites and records out: the caller reads the files. Rust is parsed with tree-sitter; the
conventions (id, slug, tags, backgroundTag, pattern) are those of `../shared/data/burn-panics.jsonl`, which
this reproduces for the macro kinds it scans. Only facts are kept of third-party source: messages, paths,
lines, function names, one line of condition and the `# Panics` paragraph of a function's doc.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar
from urllib.parse import quote

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

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
    # Crates' own wrappers that forward their arguments to `assert!`/`panic!` (message argument as there):
    # ndarray's `ndassert!` (`assert!` in debug builds, the message dropped in release builds), wgpu-types'
    # `strict_assert!` (`assert!` or `debug_assert!`), cubecl-core's kernel expansion errors (below).
    "ndassert": 1,
    "strict_assert": 1,
    "expand_error": 0,
    "expand_assert": 1,
}
# What a wrapper puts before the message it forwards (`concat!(PREFIX, $msg)`): printed as part of it.
MACRO_MESSAGE_PREFIX: dict[str, str] = {
    "expand_error": "An error occurred during kernel expansion:\n",
    "expand_assert": "An error occurred during kernel expansion:\n",
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
    "ndassert": "assertion-failed",
    "strict_assert": "assertion-failed",
    "expand_assert": "assertion-failed",
    "expand_error": "explicit-panic",
    "todo": "unimplemented-api-stub",
    "unimplemented": "unimplemented-api-stub",
    "unreachable": "unreachable-invariant",
    TENSOR_CHECK: "tensor-check-failed",
}

# Test, bench and example code never runs in a user's program, so its panics are not worth a record.
SKIPPED_DIRECTORIES = frozenset({"tests", "benches", "examples"})
SLUG_MAX_LENGTH = 80
CONDITION_MAX_LENGTH = 200
PANICS_DOC_MAX_LENGTH = 500

_SLUG_NON_WORD = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class HarvestedSite:
    """One panic site: the call (macro or `.expect`), its literal message and where it is (1-based).

    `impl_type` is the type of the enclosing `impl` block without generics (the trait, for a trait's default
    method); `condition` is what fires the site, in one line (see `harvest_tree`); `panics_doc` is the
    `# Panics` section of the enclosing function's doc comment, as one paragraph.
    """

    repo: str
    sha: str
    file_path: str
    kind: str
    message: str
    line: int
    column: int
    function: str | None
    impl_type: str | None = None
    condition: str | None = None
    panics_doc: str | None = None

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
class FunctionSpan:
    """A `fn` with a body: its name, the type of its `impl` (or trait) block, its lines (1-based,
    inclusive)."""

    name: str
    impl_type: str | None
    start_line: int
    end_line: int


class FunctionSpans(tuple[FunctionSpan, ...]):
    """Function spans sorted by start line; `function_at` builds its index once per table."""

    @cached_property
    def line_index(self) -> tuple[list[int], list[FunctionSpan | None]]:
        return _innermost_index([(span.start_line, span.end_line, span) for span in self])


@dataclass(frozen=True)
class FileHarvest:
    """What one Rust file gives: its sites in source order, the paths of the test modules it declares out of
    line (files, and folders ending in `/`), and every function outside test code."""

    sites: tuple[HarvestedSite, ...]
    test_modules: tuple[str, ...]
    functions: FunctionSpans


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


# ---- Spans --------------------------------------------------------------------------------------------

_T = TypeVar("_T")


def _innermost_index(spans: Iterable[tuple[int, int, _T]]) -> tuple[list[int], list[_T | None]]:
    """Breakpoints of the innermost span: from `bounds[i]` on (to the next bound) it is `owners[i]`.

    Spans are inclusive ranges; when two overlap without nesting, the later-starting one wins.
    """
    bounds: list[int] = []
    owners: list[_T | None] = []
    stack: list[tuple[int, int, _T]] = []

    def mark(position: int, owner: _T | None) -> None:
        if bounds and bounds[-1] == position:
            owners[-1] = owner
        else:
            bounds.append(position)
            owners.append(owner)

    def close(position: int) -> None:
        while stack and stack[-1][1] < position:
            ended = stack.pop()
            while stack and stack[-1][1] <= ended[1]:
                stack.pop()  # covered by `ended` up to its end, so over too
            mark(ended[1] + 1, stack[-1][2] if stack else None)

    for span in sorted(spans, key=lambda span: (span[0], -span[1])):
        close(span[0])
        mark(span[0], span[2])
        stack.append(span)
    if stack:
        close(max(end for _, end, _ in stack) + 1)
    return bounds, owners


def _lookup(index: tuple[list[int], list[_T | None]], position: int) -> _T | None:
    bounds, owners = index
    at = bisect.bisect_right(bounds, position) - 1
    return owners[at] if at >= 0 else None


def function_at(functions: Sequence[FunctionSpan], line: int) -> FunctionSpan | None:
    """The innermost function whose lines hold `line`, or None.

    A `FunctionSpans` (what `harvest_tree` gives) keeps its index, so each call is one bisect; any other
    sequence is indexed for the call.
    """
    if isinstance(functions, FunctionSpans):
        return _lookup(functions.line_index, line)
    return _lookup(_innermost_index([(span.start_line, span.end_line, span) for span in functions]), line)


def _one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# Line breaks that code written on one line would not have: before `.method()` and `?` in a chain, after
# an opening bracket, before a closing one (with a trailing comma).
_CODE_BREAKS = (
    re.compile(r"\s*\n\s*(?=[.?])"),
    re.compile(r"(?<=[(\[])\s*\n\s*"),
    re.compile(r",?\s*\n\s*(?=[)\]])"),
)


def _code_line(code: str, limit: int = CONDITION_MAX_LENGTH) -> str:
    """Source code as one line, as it would be written on one: `a\n    .b()` is `a.b()`."""
    for pattern in _CODE_BREAKS:
        code = pattern.sub("", code)
    return _one_line(code, limit)


# ---- Strings ------------------------------------------------------------------------------------------

_STRING_STOP = re.compile(r"[\"\\]")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "0": "\0", "'": "'", '"': '"'}
# What a `\` at the end of a line skips at the start of the next one (the Rust reference's whitespace).
_CONTINUATION_SPACE = " \t\n\r"


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
    """Value of the escaped string whose contents begin at `start`, and the offset after its quote (or the
    end of the text, for a string never closed)."""
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


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a slice through a character: only in a tree built over broken text
        return data.decode("utf-8", "replace")


# ---- Reading the parse tree ---------------------------------------------------------------------------

_RUST = Language(tree_sitter_rust.language())
_SITE_WORDS = sorted((*MACRO_MESSAGE_ARGUMENT, EXPECT, "TensorError"), key=len, reverse=True)
# The words a rule starts from: a site's name, `fn`, and `test` (in test attributes). One scan of the bytes
# finds them; the tree then says which are code.
_WORD = re.compile(rb"\b(?:fn|test|" + "|".join(_SITE_WORDS).encode() + rb")\b")
_BLOCK_EDGE = re.compile(rb"/\*|\*/")

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())
_LITERALS = frozenset(
    {"string_literal", "raw_string_literal", "char_literal", "integer_literal", "float_literal"}
)
_COMMENTS = frozenset({"line_comment", "block_comment"})
_NAMES = frozenset({"identifier", "field_identifier", "type_identifier"})
# Items an attribute can sit on: after `#[cfg(test)]` such an item runs to its `;` or its body's `}`.
_ITEM_KEYWORDS = frozenset(
    {"fn", "mod", "impl", "struct", "enum", "trait", "const", "static", "use", "type", "pub", "unsafe",
     "async", "extern", "macro_rules", "union", "let"}
)  # fmt: skip
# Words that may stand between a function's doc comment and its `fn` in a macro's tokens.
_FN_MODIFIERS = frozenset({"pub", "crate", "async", "unsafe", "const", "extern", "default"})
# Code around these runs at another time than the site: its `if` is not the site's condition.
_CONDITION_BOUNDARIES = frozenset(
    {"function_item", "impl_item", "trait_item", "mod_item", "macro_definition", "source_file"}
)
_MAX_CFG_DEPTH = 16
_PANICS_HEADING = re.compile(r"#+\s*panics\s*", re.IGNORECASE)
_HEADING = re.compile(r"#+(\s|$)")
_FENCE = ("```", "~~~")
_VIEW_OPEN = b"m!{\n"
_VIEW_CLOSE = b"\n}"
# The kinds whose condition is their own arguments or receiver, not the code around them.
_OWN_CONDITION = frozenset({EXPECT, *(kind for kind, index in MACRO_MESSAGE_ARGUMENT.items() if index)})


@dataclass(frozen=True, slots=True)
class _Atom:
    """A token of Rust as rustc lexes it; a group of brackets is one atom, its tokens read on demand."""

    kind: str  # "ident", "punct", "str" (a string a message can be), "lit" (any other literal), "group",
    # and while folding loose brackets of broken code, "open" and "close"
    text: str  # the identifier, the punctuation character, the string's value or the opening bracket
    start: int  # byte offsets in the source
    end: int
    opener: Node | None = None  # a group in the tree: its opening and closing brackets
    closer: Node | None = None
    folded: tuple[_Atom, ...] = ()  # a group of loose brackets: its tokens


_Span = tuple[int, int]  # atom indexes [start, end) of one argument


def _is(atom: _Atom | None, kind: str, text: str | None = None) -> bool:
    return atom is not None and atom.kind == kind and (text is None or atom.text == text)


def _at(atoms: Sequence[_Atom], index: int) -> _Atom | None:
    return atoms[index] if 0 <= index < len(atoms) else None


def _arguments(atoms: Sequence[_Atom]) -> list[_Span]:
    """The comma-separated arguments of a group's atoms. Turbofish generics (`::<A, B>`) do not split an
    argument; nested groups are single atoms."""
    spans: list[_Span] = []
    start = 0
    angles = 0
    for index, atom in enumerate(atoms):
        if atom.kind != "punct":
            continue
        text = atom.text
        if text == "<" and (
            angles or (_is(_at(atoms, index - 1), "punct", ":") and _is(_at(atoms, index - 2), "punct", ":"))
        ):
            angles += 1
        elif text == ">" and angles and not _is(_at(atoms, index - 1), "punct", "-"):
            angles -= 1
        elif text == "," and angles == 0:
            spans.append((start, index))
            start = index + 1
    spans.append((start, len(atoms)))
    return spans


def _drop_trailing_comma(spans: list[_Span]) -> list[_Span]:
    if len(spans) == 2 and spans[1][0] == spans[1][1]:
        spans.pop()
    return spans


def _lone_string(atoms: Sequence[_Atom], span: _Span) -> str | None:
    """The value of an argument that is one string literal and nothing else (not `concat!`, a name)."""
    start, end = span
    return atoms[start].text if end - start == 1 and atoms[start].kind == "str" else None


def _fold(atoms: Iterable[_Atom]) -> list[_Atom]:
    """Loose brackets (of code the parser could not read) paired into groups; one never closed runs to the
    end, as rustc's lexer would have it."""
    levels: list[list[_Atom]] = [[]]
    openers: list[_Atom] = []
    for atom in atoms:
        if atom.kind == "open":
            openers.append(atom)
            levels.append([])
        elif atom.kind == "close" and openers:
            opener, items = openers.pop(), levels.pop()
            levels[-1].append(_Atom("group", opener.text, opener.start, atom.end, folded=tuple(items)))
        elif atom.kind == "close":
            levels[-1].append(_Atom("punct", atom.text, atom.start, atom.end))
        else:
            levels[-1].append(atom)
    while openers:
        opener, items = openers.pop(), levels.pop()
        end = items[-1].end if items else opener.end
        levels[-1].append(_Atom("group", opener.text, opener.start, end, folded=tuple(items)))
    return levels[0]


def _is_word(text: str) -> bool:
    return bool(text) and (text[0].isalpha() or text[0] in "_$")


def _bare(name: str) -> str:
    return name.removeprefix("r#")


_NAME = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")


_CLOSERS = {")": "(", "]": "["}


def _operand(text: str) -> bool:
    """Whether `text` is one operand: a path, field or method chain (`v.is_empty()`, `a::b[i]`), so that
    `!text` negated is `text`. Outside brackets only words, `.` and `::`."""
    depth: list[str] = []
    for char in text:
        if char in "([":
            depth.append(char)
        elif char in _CLOSERS:
            if not depth or depth.pop() != _CLOSERS[char]:
                return False
        elif not depth and not (char.isalnum() or char in "_.:"):
            return False
    return bool(text) and not depth


def _truth(condition: str, holds: bool) -> str:
    """A condition as it fires: as written when it must hold, else negated (`not (...)`, `!x.f()` -> `x.f()`);
    a bare name says nothing by itself: `flag is true` (`false`)."""
    negated = condition.startswith("!") and _operand(condition[1:].strip())
    subject = condition[1:].strip() if negated else condition
    if _NAME.fullmatch(subject):
        return f"{subject} is {'true' if holds != negated else 'false'}"
    if holds:
        return condition
    return subject if negated else f"not ({condition})"


def _catch_all(pattern: Node) -> bool:
    """`_`, a binding (`dtype`, `ref x`, `x @ _`): a pattern every value matches. A capitalised name is a
    constant or a unit variant (`None`)."""
    if pattern.type == "_":
        return True
    if pattern.type == "identifier":
        name = _bare(pattern.text.decode("utf-8", "replace") if pattern.text else "")
        return bool(name) and (name[0].islower() or name[0] == "_")
    if pattern.type in {"ref_pattern", "mut_pattern", "captured_pattern"} and pattern.children:
        return _catch_all(pattern.children[-1])  # `_` is an anonymous node
    if pattern.type == "tuple_pattern":  # `(lhs, rhs)`, `(_, _)`
        inner = [child for child in pattern.children if child.type not in {"(", ")", ","}]
        return bool(inner) and all(_catch_all(child) for child in inner)
    return False


def _alternatives(pattern: Node) -> list[Node]:
    """The patterns of an or-pattern (`A | B | C`), else the pattern itself."""
    if pattern.type != "or_pattern":
        return [pattern]
    return [leaf for child in pattern.named_children for leaf in _alternatives(child)]


def _siblings(first: Node | None, stop: Node | None = None) -> Iterator[Node]:
    node = first
    while node is not None and node != stop:
        yield node
        node = node.next_sibling


def _leaf_type(node: Node) -> bool:
    """Whether the token view stops at `node`: literals are whole tokens; other leaves are tokens."""
    return node.child_count == 0 or node.type in _LITERALS


def _bracket_node(node: Node) -> tuple[Node, Node] | None:
    """The brackets of a node that is a group (`token_tree`, `arguments`, `block`...): it opens with one
    and closes with its match (even one the parser had to insert)."""
    first = node.child(0)
    if first is None or first.is_named or first.type not in _OPEN or node.child_count < 2:
        return None
    last = node.child(node.child_count - 1)
    if last is None or last.type != _OPEN[first.type]:
        return None
    return first, last


def _group_kind(node: Node) -> str | None:
    """The opening bracket of a group node, or None."""
    brackets = _bracket_node(node) if node.child_count else None
    return None if brackets is None else brackets[0].type


def _type_name(node: Node | None, text: Callable[[Node], str]) -> str | None:
    """A type's name without generics or references: `AutodiffTensor` for `&AutodiffTensor<B>`."""
    while node is not None:
        kind = node.type
        if kind in ("type_identifier", "primitive_type", "identifier"):
            return _bare(text(node))
        if kind == "scoped_type_identifier":
            node = node.child_by_field_name("name")
        elif kind in ("generic_type", "reference_type", "pointer_type"):
            node = node.child_by_field_name("type")
        else:
            return _one_line(text(node), CONDITION_MAX_LENGTH)
    return None


def _panics_section(lines: Sequence[str]) -> str | None:
    """The `# Panics` section of a doc comment's lines (code blocks left out), as one paragraph."""
    section: list[str] = []
    inside = in_fence = False
    for raw in lines:
        line = raw.strip()
        if line.startswith(_FENCE):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if _HEADING.match(line):
            if inside:
                break
            inside = _PANICS_HEADING.fullmatch(line) is not None
            continue
        if inside:
            section.append(line)
    paragraph = " ".join(" ".join(section).split())
    return _one_line(paragraph, PANICS_DOC_MAX_LENGTH) if paragraph else None


@dataclass(frozen=True, slots=True)
class _Function:
    span: FunctionSpan
    body_start: int  # byte offsets of its body
    body_end: int
    anchor: Node  # the `fn` item, or its `fn` token in a macro's tokens: its doc comments precede it
    scan: _FileScan  # the tree `anchor` is in


@dataclass(frozen=True, slots=True)
class _Attribute:
    start: int
    content: list[_Atom]  # what is between `#[` and `]`
    inner: bool  # `#![...]`: applies to the rest of the enclosing module or block
    node: Node  # the attribute item, or the `[...]` group of an attribute among a macro's tokens
    parsed: bool


class _FileScan:
    """One parsed file and the token-level views of its tree that the rules need."""

    def __init__(self, data: bytes, *, ascii: bool, token_view: bool = False) -> None:
        # The token view reads the file as the tokens of one macro call: the parser's lexing then follows
        # rustc's, which its error recovery on code the grammar cannot read does not always do.
        self.shift = len(_VIEW_OPEN) if token_view else 0
        self.rows = _VIEW_OPEN.count(b"\n") if token_view else 0
        self.data = _VIEW_OPEN + data + _VIEW_CLOSE if token_view else data
        self.end = self.shift + len(data)  # where the file's text ends in `self.data`
        self.last_row = self.rows + data.count(b"\n")
        self.ascii = ascii
        self.root = Parser(_RUST).parse(self.data).root_node
        self.words: dict[bytes, list[tuple[int, int]]] = {b"fn": [], b"test": [], b"": []}
        for match in _WORD.finditer(self.data):
            word = match.group(0)
            self.words[word if word in (b"fn", b"test") else b""].append(match.span())
        self.test_modules: list[str] = []
        self._test_starts: list[int] = []  # sorted starts of the byte ranges of test code
        self._test_reach: list[int] = []  # the furthest end of those ranges so far
        self._find_test_code()

    # -- tokens --

    def text(self, node: Node) -> str:
        return _decode(self.data[node.start_byte : node.end_byte])

    def position(self, node: Node) -> tuple[int, int]:
        """1-based line and column (in characters) where `node` starts."""
        row, column = node.start_point
        if not self.ascii:
            column = len(_decode(self.data[node.start_byte - column : node.start_byte]))
        return row + 1 - self.rows, column + 1

    def leaf_at(self, start: int, end: int) -> Node | None:
        node = self.root.descendant_for_byte_range(start, end)
        if node is None or node.end_byte != end:
            return None
        if node.start_byte == start or (
            node.start_byte == start - 2 and self.data[start - 2 : start] == b"r#"
        ):
            return node
        return None

    def twin(self, start: int, end: int) -> Node | None:
        """The word at file offsets [start, end) in this tree, if it reads it as a word of code."""
        leaf = self.leaf_at(start + self.shift, end + self.shift)
        if leaf is None or leaf.type not in _NAMES or self.in_literal_or_attribute(leaf):
            return None
        return leaf

    def next_leaf(self, node: Node | None) -> Node | None:
        """The token after `node` in source order; comments and nodes the parser inserted are skipped."""
        current: Node | None = node
        while current is not None:
            sibling = current.next_sibling
            while sibling is None:
                current = current.parent
                if current is None:
                    return None
                sibling = current.next_sibling
            current = sibling
            while not _leaf_type(current):
                child = current.child(0)
                if child is None:
                    break
                current = child
            if current.type not in _COMMENTS and not current.is_missing and _leaf_type(current):
                return current
        return None

    def prev_leaf(self, node: Node | None) -> Node | None:
        current: Node | None = node
        while current is not None:
            sibling = current.prev_sibling
            while sibling is None:
                current = current.parent
                if current is None:
                    return None
                sibling = current.prev_sibling
            current = sibling
            while not _leaf_type(current):
                child = current.child(current.child_count - 1)
                if child is None:
                    break
                current = child
            if current.type not in _COMMENTS and not current.is_missing and _leaf_type(current):
                return current
        return None

    def atoms(self, nodes: Iterable[Node], *, loose: bool = False) -> list[_Atom]:
        """The tokens of `nodes` (siblings), groups of brackets as single atoms. Loose brackets are paired
        among these tokens, unless `loose` (the caller pairs them)."""
        out: list[_Atom] = []
        skip_until = -1
        stack: list[Iterator[Node]] = [iter(nodes)]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            kind = node.type
            if node.start_byte < skip_until or node.is_missing or kind in _COMMENTS:
                continue
            if kind in _LITERALS:
                out.append(self.literal(node))
                continue
            if node.child_count:
                brackets = _bracket_node(node)
                if brackets is None:
                    stack.append(iter(node.children))
                else:
                    out.append(_Atom("group", brackets[0].type, node.start_byte, node.end_byte, *brackets))
                continue
            text = self.text(node)
            if not node.is_named and text in _OPEN:
                out.append(_Atom("open", text, node.start_byte, node.end_byte))
            elif not node.is_named and text in _CLOSE:
                out.append(_Atom("close", text, node.start_byte, node.end_byte))
            elif text == '"':
                # A quote the parser found no end for: like rustc, the string runs to the end of the text.
                value, end = self.unterminated_string(node.end_byte)
                out.append(_Atom("str", value, node.start_byte, end))
                skip_until = end
            elif text.startswith("/*"):
                skip_until = self.block_comment_end(node.start_byte)
            elif _is_word(text):
                out.append(_Atom("ident", _bare(text), node.start_byte, node.end_byte))
            else:
                offset = node.start_byte
                for char in text:
                    size = len(char.encode("utf-8", "surrogatepass"))
                    out.append(_Atom("punct", char, offset, offset + size))
                    offset += size
        return out if loose else _fold(out)

    def literal(self, node: Node) -> _Atom:
        text = self.text(node)
        if node.type == "string_literal":
            opener = node.child(0)
            body = text[len(self.text(opener)) if opener is not None else 1 :]
            closer = node.child(node.child_count - 1)
            if closer is not None and closer != opener and closer.type == '"' and not closer.is_missing:
                body = body[:-1]
            value = _read_string(body + '"', 0)[0]
            kind = "str" if text.startswith('"') else "lit"  # b"..." and c"..." are no messages
        elif node.type == "raw_string_literal":
            prefix = len(text) - len(text.lstrip("bcr"))
            hashes = len(text) - prefix - len(text[prefix:].lstrip("#"))
            body = text[prefix + hashes + 1 :]
            closing = '"' + "#" * hashes
            value = body[: -len(closing)] if body.endswith(closing) else body
            kind = "str" if text.startswith("r") else "lit"
        else:
            value, kind = text, "lit"
        return _Atom(kind, value, node.start_byte, node.end_byte)

    def unterminated_string(self, start: int) -> tuple[str, int]:
        rest = _decode(self.data[start : self.end])
        value, end = _read_string(rest, 0)
        return value, start + len(rest[:end].encode("utf-8", "surrogatepass"))

    def block_comment_end(self, start: int) -> int:
        depth = 0
        for edge in _BLOCK_EDGE.finditer(self.data, start, self.end):
            depth += 1 if edge.group(0) == b"/*" else -1
            if depth == 0:
                return edge.end()
        return self.end

    def items(self, group: _Atom) -> list[_Atom]:
        if group.opener is None:
            return list(group.folded)
        return self.atoms(_siblings(group.opener.next_sibling, group.closer))

    def group_at(self, opener: Node | None) -> _Atom | None:
        """The group a bracket token opens: from the tree, or (broken code) from the tokens that follow."""
        if opener is None or opener.is_named or opener.type not in _OPEN:
            return None
        parent = opener.parent
        if parent is not None and parent.child(0) == opener:
            brackets = _bracket_node(parent)
            if brackets is not None:
                return _Atom("group", opener.type, parent.start_byte, parent.end_byte, *brackets)
        following: list[_Atom] = [_Atom("open", opener.type, opener.start_byte, opener.end_byte)]
        node: Node | None = opener
        while node is not None:
            following.extend(self.atoms(_siblings(node.next_sibling), loose=True))
            node = node.parent
        folded = _fold(following)
        return folded[0] if folded and folded[0].kind == "group" else None

    def leaf_text(self, node: Node | None) -> str:
        return "" if node is None else self.text(node)

    # -- test code --

    def _find_test_code(self) -> None:
        attributes: dict[int, _Attribute] = {}
        for start, end in self.words[b"test"]:
            leaf = self.leaf_at(start, end)
            attribute = self.attribute_of(leaf) if leaf is not None else None
            if attribute is not None:
                attributes.setdefault(attribute.start, attribute)
        reach = -1
        for start in sorted(attributes):
            attribute = attributes[start]
            if start < reach or not self.is_test_attribute(attribute.content):
                continue  # an attribute inside test code changes nothing
            reach = max(reach, self.attribute_reach(attribute))
            self._test_starts.append(start)
            self._test_reach.append(reach)

    def in_test_code(self, offset: int) -> bool:
        at = bisect.bisect_right(self._test_starts, offset) - 1
        return at >= 0 and self._test_reach[at] > offset

    def attribute_of(self, leaf: Node) -> _Attribute | None:
        """The attribute `leaf` is a word of, parsed (`attribute_item`) or among a macro's tokens."""
        node = leaf
        while True:
            parent = node.parent
            if parent is None:
                return None
            kind = parent.type
            if kind in ("attribute_item", "inner_attribute_item"):
                content = next((c for c in parent.named_children if c.type == "attribute"), None)
                atoms = self.atoms(content.children) if content is not None else []
                return _Attribute(parent.start_byte, atoms, kind == "inner_attribute_item", parent, True)
            if kind == "token_tree" and self.leaf_text(parent.child(0)) == "[":
                attribute = self.token_attribute(parent)
                if attribute is not None:
                    return attribute
            if kind not in ("token_tree", "attribute", "scoped_identifier"):
                return None
            node = parent

    def token_attribute(self, group: Node) -> _Attribute | None:
        """`#[...]` or `#![...]` among a macro's tokens, whose `[...]` is `group`."""
        brackets = _bracket_node(group)
        before = self.prev_leaf(group)
        text = self.leaf_text(before)
        if brackets is None or before is None:
            return None
        if text.endswith("#!"):
            inner, start = True, before.end_byte - 2
        elif text.endswith("#"):
            inner, start = False, before.end_byte - 1
        elif text == "!" and self.leaf_text(hash_leaf := self.prev_leaf(before)).endswith("#"):
            inner, start = True, before.start_byte - 1 if hash_leaf is None else hash_leaf.end_byte - 1
        else:
            return None
        content = self.atoms(_siblings(brackets[0].next_sibling, brackets[1]))
        return _Attribute(start, content, inner, group, False)

    def is_test_attribute(self, atoms: Sequence[_Atom]) -> bool:
        """`#[test]`, `#[tokio::test(...)]` and the like, `#[cfg(test)]`, `#[cfg(all(test, ...))]`."""
        if len(atoms) >= 2 and _is(atoms[0], "ident", "cfg") and _is(atoms[1], "group", "("):
            inner = self.items(atoms[1])
            arguments = _arguments(inner)
            return len(arguments) == 1 and self.cfg_requires_test(inner, arguments[0], 0)
        index = 0
        while index < len(atoms) and (atoms[index].kind == "ident" or _is(atoms[index], "punct", ":")):
            index += 1
        plain = index == len(atoms) or _is(atoms[index], "group", "(")
        return plain and index > 0 and _is(atoms[index - 1], "ident", "test")

    def cfg_requires_test(self, atoms: Sequence[_Atom], span: _Span, depth: int) -> bool:
        """True when a cfg predicate holds only in test builds: `test`, `all(.., test, ..)`,
        `any(test, test)`; never for `not(...)`."""
        start, end = span
        if end - start == 1:
            return _is(atoms[start], "ident", "test")
        if depth >= _MAX_CFG_DEPTH or end - start != 2 or not _is(atoms[start + 1], "group", "("):
            return False
        inner = self.items(atoms[start + 1])
        arguments = [argument for argument in _arguments(inner) if argument[1] > argument[0]]
        if _is(atoms[start], "ident", "all"):
            return any(self.cfg_requires_test(inner, argument, depth + 1) for argument in arguments)
        if _is(atoms[start], "ident", "any"):
            return bool(arguments) and all(
                self.cfg_requires_test(inner, argument, depth + 1) for argument in arguments
            )
        return False

    def attribute_reach(self, attribute: _Attribute) -> int:
        """Where the code a test attribute marks ends (a byte offset)."""
        node = attribute.node
        parent = node.parent
        container_end = parent.end_byte if parent is not None else len(self.data)
        if parent is None or parent.type == "source_file":
            container_end = len(self.data)
        if attribute.inner:
            return container_end  # `#![cfg(test)]`: the rest of the module (or file) is test code
        if (
            attribute.parsed
            and parent is not None
            and parent.type not in ("source_file", "ERROR")
            and (first := parent.child(0)) is not None
            and first.type == "attribute_item"
        ):
            return parent.end_byte  # a match arm or field initializer: its attributes are its first children
        # The item after the attribute (and any further attributes).
        item = node.next_sibling
        while item is not None and (item.type in _COMMENTS or item.type == "attribute_item"):
            item = item.next_sibling
        if attribute.parsed and item is not None and item.is_named and not _leaf_type(item):
            if item.type == "mod_item" and item.child_by_field_name("body") is None:
                name = item.child_by_field_name("name")
                if name is not None:
                    self.test_modules.append(_bare(self.text(name)))
            return item.end_byte
        return self.token_item_end(item, container_end)

    def token_item_end(self, first: Node | None, container_end: int) -> int:
        """End of the item, statement, match arm or field whose tokens begin at `first` (after any further
        attributes): an item ends at its `;` or its body's `}`; the others also at a `,`."""
        atoms = self.atoms(_siblings(first), loose=True)
        index = 0
        while _is(_at(atoms, index), "punct", "#") and _at(atoms, index + 1) is not None:
            nxt = atoms[index + 1]
            if nxt.kind == "open" and nxt.text == "[":
                depth, index = 0, index + 1
                while index < len(atoms):
                    depth += {"open": 1, "close": -1}.get(atoms[index].kind, 0)
                    index += 1
                    if depth == 0:
                        break
            elif _is(nxt, "group", "["):
                index += 2
            else:
                break
        module = self.out_of_line_module(atoms, index)
        if module is not None:
            self.test_modules.append(module)
        head = _at(atoms, index)
        is_item = head is not None and head.kind == "ident" and head.text in _ITEM_KEYWORDS
        depth = 0
        brace_open = False
        for atom in atoms[index:]:
            if atom.kind == "group":
                if depth == 0 and atom.text == "{":
                    return atom.end
            elif atom.kind == "open":
                if depth == 0:
                    brace_open = atom.text == "{"
                depth += 1
            elif atom.kind == "close":
                if depth == 0:
                    return atom.start  # the enclosing block ends
                depth -= 1
                if depth == 0 and brace_open:
                    return atom.end
            elif (
                depth == 0
                and atom.kind == "punct"
                and (atom.text == ";" or (atom.text == "," and not is_item))
            ):
                return atom.end
        return container_end

    def out_of_line_module(self, atoms: Sequence[_Atom], index: int) -> str | None:
        """NAME of `[pub[(..)]] mod NAME;` at `index`: a module in its own file, test code too."""
        if _is(_at(atoms, index), "ident", "pub"):
            index += 1
            if _is(_at(atoms, index), "group", "("):
                index += 1
        name = _at(atoms, index + 1)
        if (
            _is(_at(atoms, index), "ident", "mod")
            and _is(name, "ident")
            and _is(_at(atoms, index + 2), "punct", ";")
        ):
            return name.text if name is not None else None
        return None

    # -- functions --

    def functions(self) -> list[_Function]:
        """Every function with a body outside test code: `fn` items, and `fn`s among a macro's tokens."""
        found: dict[int, _Function] = {}
        for start, end in self.words[b"fn"]:
            if self.in_test_code(start):
                continue
            leaf = self.leaf_at(start, end)
            function = self.function_of(leaf) if leaf is not None and leaf.type == "fn" else None
            if function is not None:
                found.setdefault(function.body_start, function)
        return sorted(found.values(), key=lambda f: (f.span.start_line, -f.span.end_line, f.body_start))

    def function_of(self, keyword: Node) -> _Function | None:
        parent = keyword.parent
        if parent is not None and parent.type == "function_item":
            name = parent.child_by_field_name("name")
            body = parent.child_by_field_name("body")
            if name is None or body is None:
                return None
            span = FunctionSpan(
                _bare(self.text(name)),
                self.impl_type(parent),
                parent.start_point.row + 1 - self.rows,
                min(body.end_point.row, self.last_row) + 1 - self.rows,
            )
            body_end = min(body.end_byte, self.end) - self.shift
            return _Function(span, body.start_byte - self.shift, body_end, parent, self)
        if parent is None or parent.type not in ("token_tree", "ERROR"):
            return None
        # Among a macro's tokens (or code the parser could not read): `fn NAME ... {body}`, no `;` between.
        name = self.next_leaf(keyword)
        # A metavariable (`fn $name`) is no name: the function is named where the macro is called.
        if name is None or name.parent != parent or name.type != "identifier":
            return None
        body_start = body_end = -1
        end_row = 0
        nodes = _siblings(name.next_sibling)
        for node in nodes:
            if node.type in _COMMENTS:
                continue
            brackets = _bracket_node(node) if node.child_count else None
            if brackets is not None and brackets[0].type == "{":
                body_start, body_end, end_row = node.start_byte, node.end_byte, node.end_point.row
                break
            if not node.is_named and node.type == "{":
                # A body the parser left loose: up to its matching `}`, or the end of what holds it.
                body_start, body_end, end_row = node.start_byte, parent.end_byte, parent.end_point.row
                depth = 0
                for later in nodes:
                    if not later.is_named and later.type in ("{", "}"):
                        depth += 1 if later.type == "{" else -1
                        if depth < 0:
                            body_end, end_row = later.end_byte, later.end_point.row
                            break
                break
            if _leaf_type(node) and not node.is_named and ";" in node.type:
                return None
        if body_start < 0:
            return None
        first = keyword
        while (before := first.prev_sibling) is not None and (
            (_leaf_type(before) and self.text(before) in _FN_MODIFIERS) or _group_kind(before) == "("
        ):
            first = before  # `pub`, `pub(crate)`, `async`, `unsafe`...
        # The token view's closing bracket is not the file's: a body it closes ends with the file.
        start_row, end_row = first.start_point.row - self.rows, min(end_row, self.last_row) - self.rows
        span = FunctionSpan(_bare(self.text(name)), self.impl_type(keyword), start_row + 1, end_row + 1)
        return _Function(span, body_start - self.shift, min(body_end, self.end) - self.shift, keyword, self)

    def impl_type(self, node: Node) -> str | None:
        """The self type of the nearest enclosing `impl` block, or the trait of a trait's default method."""
        current = node.parent
        while current is not None:
            if current.type == "impl_item":
                return _type_name(current.child_by_field_name("type"), self.text)
            if current.type == "trait_item":
                name = current.child_by_field_name("name")
                return None if name is None else _bare(self.text(name))
            current = current.parent
        return None

    def panics_doc(self, anchor: Node) -> str | None:
        """The `# Panics` section of the `///` (or `/** */`) doc comment above a function."""
        lines: list[str] = []
        node = anchor.prev_sibling
        while node is not None:
            kind = node.type
            text = self.text(node) if kind in _COMMENTS or _leaf_type(node) else ""
            if kind == "line_comment":
                if text.startswith("///") and not text.startswith("////"):
                    lines.append(text[3:].rstrip("\n"))
            elif kind == "block_comment":
                if text.startswith("/**") and not text.startswith(("/***", "/**/")):
                    body = text[3:].removesuffix("*/").split("\n")
                    lines.extend(reversed([line.strip().removeprefix("*") for line in body]))
            elif not (
                kind == "attribute_item"
                or text in _FN_MODIFIERS
                or text in ("#", "!", "#!")
                or kind in ("string_literal", "token_tree")  # `extern "C"`, `pub(crate)`, `#[...]`
            ):
                break
            node = node.prev_sibling
        lines.reverse()
        return _panics_section(lines)

    # -- sites --

    def find_sites(self) -> list[_Found]:
        """The sites outside test code, in source order."""
        sites: list[_Found] = []
        for start, end in self.words[b""]:
            if self.in_test_code(start):
                continue
            leaf = self.leaf_at(start, end)
            if leaf is None or leaf.type not in _NAMES or self.in_literal_or_attribute(leaf):
                continue
            found = self.site_at(leaf, self.data[start:end].decode())
            if found is not None:
                sites.append(found)
        return sites

    def in_literal_or_attribute(self, leaf: Node) -> bool:
        node = leaf.parent
        while node is not None:
            kind = node.type
            if kind in _LITERALS or kind in ("attribute_item", "inner_attribute_item"):
                return True
            if kind == "token_tree" and self.leaf_text(node.child(0)) == "[" and self.token_attribute(node):
                return True
            node = node.parent
        return False

    def site_at(self, leaf: Node, word: str) -> _Found | None:
        if word in MACRO_MESSAGE_ARGUMENT:
            bang = self.next_leaf(leaf)
            group = self.group_at(self.next_leaf(bang)) if self.leaf_text(bang) == "!" else None
            if group is None:
                return None
            atoms = self.items(group)
            arguments = _arguments(atoms)
            wanted = MACRO_MESSAGE_ARGUMENT[word]
            # The first string-only argument from the message's place on: an argument that split in two at
            # a comma the splitter cannot tell apart (a closure's `|a, b|`) still finds the message.
            for index in range(wanted, len(arguments) if wanted else 1):
                message = _lone_string(atoms, arguments[index])
                if message is not None:
                    condition = self.assert_condition(word, atoms, arguments[:index]) if wanted else None
                    message = MACRO_MESSAGE_PREFIX.get(word, "") + message
                    return _Found(word, message, self.path_start(leaf), leaf, condition)
            return None
        if word == EXPECT:
            dot = self.prev_leaf(leaf)
            opener = self.next_leaf(leaf)
            if (
                dot is None
                or dot.is_named
                or not self.text(dot).endswith(".")
                or self.leaf_text(opener) != "("
            ):
                return None
            group = self.group_at(opener)
            atoms = self.items(group) if group is not None else []
            arguments = _drop_trailing_comma(_arguments(atoms))
            message = _lone_string(atoms, arguments[0]) if len(arguments) == 1 else None
            if group is None or message is None:
                return None
            return _Found(EXPECT, message, leaf, leaf, self.expect_condition(leaf, dot))
        return self.tensor_error(leaf)

    def tensor_error(self, leaf: Node) -> _Found | None:
        """`TensorError::new(m)[.details(d)]`: the reason "m d" a failed burn-tensor check prints."""
        separator = self.next_leaf(leaf)
        new = self.next_leaf(separator) if self.leaf_text(separator) == "::" else None
        opener = self.next_leaf(new) if self.leaf_text(new) == "new" else None
        group = self.group_at(opener) if self.leaf_text(opener) == "(" else None
        message = self.message_argument(group) if group is not None else None
        if group is None or message is None:
            return None
        dot = self.next_leaf(group.closer) if group.closer is not None else None
        details = self.next_leaf(dot) if self.leaf_text(dot) == "." else None
        opener = self.next_leaf(details) if self.leaf_text(details) == "details" else None
        if self.leaf_text(opener) == "(":
            more = self.group_at(opener)
            extra = self.message_argument(more) if more is not None else None
            if extra is not None:
                message = f"{message} {extra}"
        return _Found(TENSOR_CHECK, message, leaf, leaf, None)

    def message_argument(self, group: _Atom) -> str | None:
        """The format string of a call whose one argument is a string literal (its braces escaped) or
        `format!` of one; else None."""
        atoms = self.items(group)
        arguments = _drop_trailing_comma(_arguments(atoms))
        if len(arguments) != 1:
            return None
        literal = _lone_string(atoms, arguments[0])
        if literal is not None:
            return literal.replace("{", "{{").replace("}", "}}")
        start, end = arguments[0]
        if (
            end - start == 3
            and _is(atoms[start], "ident", "format")
            and _is(atoms[start + 1], "punct", "!")
            and atoms[start + 2].kind == "group"
        ):
            inner = self.items(atoms[start + 2])
            return _lone_string(inner, _arguments(inner)[0])
        return None

    def path_start(self, leaf: Node) -> Node:
        """The first token of a path-qualified macro name (`std::panic!`, `$crate::panic!`)."""
        start = leaf
        while True:
            separator = self.prev_leaf(start)
            if separator is None or separator.is_named or self.text(separator) != "::":
                break
            head = self.prev_leaf(separator)
            if head is None or not _is_word(self.text(head)):
                break
            start = head
        dollar = self.prev_leaf(start)
        return dollar if dollar is not None and self.text(dollar) == "$" else start

    # -- conditions --

    def source_of(self, atoms: Sequence[_Atom], start: int, end: int) -> str:
        return _decode(self.data[atoms[start].start : atoms[end - 1].end]) if end > start else ""

    def assert_condition(self, word: str, atoms: Sequence[_Atom], before: Sequence[_Span]) -> str | None:
        """What fires an assertion: its expression false (`not (<expression>)`); `left != right` (`==`)
        for the `_eq` (`_ne`) forms."""
        if not before:
            return None
        if word.endswith(("_eq", "_ne")):
            if len(before) < 2:
                return None
            left = _code_line(self.source_of(atoms, *before[0]), len(self.data))
            right = _code_line(self.source_of(atoms, before[1][0], before[-1][1]), len(self.data))
            text = f"{left} {'!=' if word.endswith('_eq') else '=='} {right}"
        else:
            asserted = _code_line(self.source_of(atoms, before[0][0], before[-1][1]), len(self.data))
            text = _truth(asserted, False) if asserted else ""
        return _code_line(text) if text.strip() else None

    def enclosing_condition(self, leaf: Node) -> str | None:
        """The condition of the nearest `if` (negated in its `else`) or the pattern of the `match` arm the
        site is in, within its function."""
        child = leaf
        node = leaf.parent
        while node is not None and node.type not in _CONDITION_BOUNDARIES:
            if node.type == "if_expression":
                condition = node.child_by_field_name("condition")
                if condition is not None and child == node.child_by_field_name("consequence"):
                    return _code_line(_truth(_code_line(self.text(condition), len(self.data)), True))
                if condition is not None and child == node.child_by_field_name("alternative"):
                    return _code_line(_truth(_code_line(self.text(condition), len(self.data)), False))
            elif node.type == "match_arm" and child == node.child_by_field_name("value"):
                arm = self.arm_condition(node)
                if arm is not None:
                    return arm
            child, node = node, node.parent
        return None

    def arm_condition(self, arm: Node) -> str | None:
        """`<scrutinee> is <pattern>` (`x.dtype() is DType::F32`, `kind is one of A, B`, with its guard); for
        a catch-all arm (`_`, `dtype =>`), `<scrutinee> is not one of <the patterns of the arms before>`.
        None for a catch-all with no arm before it: it says nothing."""
        found = arm.child_by_field_name("pattern")
        block = arm.parent
        expression = block.parent if block is not None else None
        value = (
            expression.child_by_field_name("value")
            if expression is not None and expression.type == "match_expression"
            else None
        )
        if found is None or value is None or block is None:
            return None
        scrutinee = _code_line(self.text(value), len(self.data))
        guarded = found.child_by_field_name("condition") is not None
        inner = found.children[0] if found.children else None
        if inner is None or found.has_error:
            return None
        if guarded or not _catch_all(inner):
            shown = self.arm_patterns(found)
            one_of = len(shown) > 1
            return _code_line(f"{scrutinee} is {'one of ' if one_of else ''}{', '.join(shown)}")
        before: list[str] = []
        for other in block.named_children:
            if other == arm:
                break
            pattern = other.child_by_field_name("pattern") if other.type == "match_arm" else None
            if pattern is not None:
                before += self.arm_patterns(pattern)
        # The arms before, read from a tree the grammar could not read whole, may be other code's tokens.
        if not before or block.has_error:
            return None
        return _code_line(f"{scrutinee} is not one of {', '.join(before)}")

    def arm_patterns(self, found: Node) -> list[str]:
        """An arm's patterns as written, one line each: an or-pattern's alternatives, or the whole pattern
        with its guard (`Some(v) if v > 3`)."""
        inner = found.children[0] if found.children else None
        if inner is None or found.child_by_field_name("condition") is not None:
            return [_code_line(self.text(found), len(self.data))]
        return [_code_line(self.text(node), len(self.data)) for node in _alternatives(inner)]

    def expect_condition(self, leaf: Node, dot: Node) -> str | None:
        """`<receiver> is Err/None`: the value `.expect` unwraps, as written."""
        parent = leaf.parent
        value = (
            parent.child_by_field_name("value")
            if parent is not None and parent.type == "field_expression"
            else None
        )
        start = value.start_byte if value is not None else self.chain_start(dot)
        receiver = _decode(self.data[start : dot.start_byte]) if start is not None else ""
        if not receiver.strip():
            return None
        return _code_line(receiver, CONDITION_MAX_LENGTH - len(_EXPECT_FAILS)) + _EXPECT_FAILS

    def chain_start(self, dot: Node) -> int | None:
        """Among a macro's tokens, where the method chain ending at `dot` begins (`self.x.get(i)` in
        `self.x.get(i).expect(..)`): words joined by `.` and `::`, calls, `?`, macro calls, turbofish."""
        start: int | None = None
        right = "."  # the kind of the leftmost token taken so far
        node = dot
        while (left := self.prev_leaf(node)) is not None:
            text = self.text(left)
            parent = left.parent
            brackets = _bracket_node(parent) if parent is not None and not left.is_named else None
            if brackets is not None and brackets[1] == left:
                kind, left = "group", brackets[0]
            elif left.type in _LITERALS:
                kind = "literal"
            elif left.is_named and _is_word(text):
                kind = "word"
            elif right == "group" and text.endswith(">") and not text.endswith("->"):
                turbofish = self.turbofish_start(left)
                if turbofish is None:
                    break
                kind, left = "::", turbofish
            else:
                kind = text
            if kind not in _CHAIN_BEFORE.get(right, ()):
                break
            node, right, start = left, kind, left.start_byte
            if kind == "literal":
                break
        return start if right in ("word", "literal", "group") else None

    def turbofish_start(self, close: Node) -> Node | None:
        """The `::` before the `<` that the `>` ending `close` matches, if it is a turbofish."""
        depth = 0
        node: Node | None = close
        for _ in range(64):
            if node is None:
                return None
            text = self.text(node)
            for index in range(len(text) - 1, -1, -1):
                depth += {">": 1, "<": -1}.get(text[index], 0)
                if depth == 0:
                    if text[:index].endswith("::"):
                        return node
                    before = self.prev_leaf(node) if index == 0 else None
                    return before if before is not None and self.text(before) == "::" else None
            node = self.prev_leaf(node)
        return None


# What may stand left of each kind of token in a method chain, read from right to left.
_CHAIN_BEFORE: dict[str, frozenset[str]] = {
    ".": frozenset({"word", "group", "?", "literal"}),
    "?": frozenset({"word", "group", "?", "literal"}),
    "group": frozenset({"word", "group", "!", "::"}),  # `::` stands for a turbofish `::<T>`
    "word": frozenset({".", "::"}),
    "::": frozenset({"word"}),
    "!": frozenset({"word"}),
}


_EXPECT_FAILS = " is Err/None"


@dataclass(frozen=True, slots=True)
class _Found:
    kind: str
    message: str
    at: Node  # where Rust reports it: the macro (or its path) or `expect`
    name: Node  # the word that names it
    condition: str | None  # for the kinds in `_OWN_CONDITION`


# ---- Harvesting ---------------------------------------------------------------------------------------


def test_module_paths(file_path: str, modules: Iterable[str]) -> list[str]:
    """Where the files of out-of-line test modules declared in `file_path` live (`NAME.rs` and `NAME/`,
    beside a lib.rs, main.rs or mod.rs, else in the folder named after the file)."""
    path = normalise_path(file_path)
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".rs")
    base = folder if stem in {"lib", "main", "mod"} else f"{folder}/{stem}" if folder else stem
    prefix = f"{base}/" if base else ""
    return [candidate for module in modules for candidate in (f"{prefix}{module}.rs", f"{prefix}{module}/")]


def harvest_tree(text: str, file_path: str, *, repo: str, sha: str) -> FileHarvest:
    """The sites, out-of-line test modules and functions of one Rust file, from one parse.

    Sites are those with a literal message, in source order; files under `tests/`, `benches/` or
    `examples/` and code under `#[cfg(test)]`, `#[test]` and the like are skipped. Lines and columns are
    1-based and point at the macro (or its path) or at `expect`, as Rust reports them. A site's `function`
    is the innermost `fn` whose body holds it (a `fn` written among a macro's tokens counts).

    A site's `condition`, what fires it, one line of at most 200 characters:
    - `assert!`/`debug_assert!`: the asserted expression false (`not (<expression>)`); their `_eq`/`_ne`
      forms: `left != right` (`left == right`);
    - `.expect`: `<receiver> is Err/None`, the receiver being the expression `.expect` is called on;
    - the other kinds: the condition of the nearest enclosing `if` (`not (<condition>)` in its `else`;
      `let P = e` for `if let`), or, from the nearest enclosing `match` arm, `<scrutinee> is <pattern>`
      (`is one of A, B` for `A | B`, with its guard) and for a catch-all arm (`_`, a binding such as
      `dtype`) `<scrutinee> is not one of <the patterns of the arms before>`; whichever is closer, looked
      for up to the enclosing function (past an arm that says nothing: a catch-all with no arm before it);
    - never a bare name: `flag` reads `flag is true` (`false`), `!x.f()` negated reads `x.f()`;
    - None when there is none of these.
    """
    path = normalise_path(file_path)
    if is_skipped_path(path):
        return FileHarvest((), (), FunctionSpans())
    # rustc drops a byte order mark and reads CRLF as LF; lines and columns follow.
    source = text.removeprefix("\ufeff").replace("\r\n", "\n")
    data = source.encode("utf-8", "surrogatepass")
    tree = _FileScan(data, ascii=len(data) == len(source))
    # Where the grammar fails (attributes it does not expect, say), error recovery may lex code as a string:
    # the tokens then come from the token view, and the tree gives what it can around them.
    view = _FileScan(data, ascii=tree.ascii, token_view=True) if tree.root.has_error else tree
    functions = _functions(tree, view)
    bodies = _innermost_index(
        (function.body_start, function.body_end - 1, function) for function in functions
    )
    docs: dict[int, str | None] = {}
    sites: list[HarvestedSite] = []
    for found in view.find_sites():
        # An empty or blank message says nothing (and the record schema needs a message).
        if not found.message.strip():
            continue
        offset = found.name.start_byte - view.shift
        twin = found.name if view is tree else tree.twin(offset, found.name.end_byte - view.shift)
        condition = found.condition
        if found.kind not in _OWN_CONDITION:
            condition = tree.enclosing_condition(twin) if twin is not None else None
        function = _lookup(bodies, offset)
        if function is not None and function.body_start not in docs:
            docs[function.body_start] = function.scan.panics_doc(function.anchor)
        line, column = view.position(found.at)
        sites.append(
            HarvestedSite(
                repo,
                sha,
                path,
                found.kind,
                found.message,
                line,
                column,
                function.span.name if function is not None else None,
                impl_type=tree.impl_type(twin) if twin is not None else None,
                condition=condition,
                panics_doc=docs[function.body_start] if function is not None else None,
            )
        )
    return FileHarvest(
        tuple(sites),
        tuple(test_module_paths(path, view.test_modules)),
        FunctionSpans(function.span for function in functions),
    )


def _functions(tree: _FileScan, view: _FileScan) -> list[_Function]:
    """The functions outside test code, sorted by start line. With a token view, its `fn`s are the list,
    each replaced by the tree's own when the tree has it (with its impl type and first line)."""
    if view is tree:
        return tree.functions()
    parsed = {function.body_start: function for function in tree.functions()}
    functions: list[_Function] = []
    for function in view.functions():
        twin = parsed.get(function.body_start)
        if twin is None:
            keyword = tree.twin(
                function.anchor.start_byte - view.shift, function.anchor.end_byte - view.shift
            )
            impl_type = tree.impl_type(keyword) if keyword is not None else None
            twin = replace(function, span=replace(function.span, impl_type=impl_type))
        functions.append(twin)
    return sorted(functions, key=lambda f: (f.span.start_line, -f.span.end_line, f.body_start))


def harvest_file(text: str, file_path: str, *, repo: str, sha: str) -> tuple[list[HarvestedSite], list[str]]:
    """`harvest_source`, and the paths (files, and folders ending in `/`) of the test modules this file
    declares out of line: their sites are test code, though nothing in their own file says so."""
    harvest = harvest_tree(text, file_path, repo=repo, sha=sha)
    return list(harvest.sites), list(harvest.test_modules)


def harvest_source(text: str, file_path: str, *, repo: str, sha: str) -> list[HarvestedSite]:
    """Panic sites with a literal message in one Rust file, in source order (see `harvest_tree`)."""
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
