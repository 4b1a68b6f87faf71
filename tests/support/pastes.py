"""Seeded generator of realistic chat pastes built from the Burn panic catalog (tests/fixtures).

Used by the accuracy tests and the held-out evaluation: every case says which record it came from, which
record ids count as a correct top-1 answer, and whether the bot should stay silent (negatives).
Run ``python -m tests.support.pastes --out cases.jsonl`` to dump the cases as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

RECORDS_FILE = "burn-panics.jsonl"
SITES_FILE = "burn-panics.sites.jsonl"

NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"

# Positive format families, in generation order; "typo" cases come from typo_cases().
FORMATS = (
    "hdr-new",
    "hdr-threadid",
    "hdr-old",
    "logger",
    "unwrap",
    "backtrace",
    "cargo-test",
    "build-script",
    "ansi",
    "slack",
    "multi",
    "no-header",
)
NO_LOCATION_FORMATS = frozenset({"no-header", "typo"})

PATH_STYLES = (
    "repo",
    "absolute",
    "registry",
    "registry-mirror",
    "registry-tilde",
    "git",
    "windows-registry",
    "windows-tilde",
    "windows-mixed",
)


@dataclass(frozen=True)
class Case:
    """One chat message and the answers that count as right for it."""

    id: str
    text: str
    fmt: str
    record_id: str
    accepted_ids: frozenset[str]
    has_location: bool
    expect_auto_reply: bool | None  # False: the bot must stay silent; None: no assertion

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "text": self.text,
            "fmt": self.fmt,
            "record_id": self.record_id,
            "accepted_ids": sorted(self.accepted_ids),
            "has_location": self.has_location,
            "expect_auto_reply": self.expect_auto_reply,
        }


# ---- Locating and loading the data --------------------------------------------------------------------


# The 1,199-record Burn catalog and its sites table, committed beside the tests: nothing is read from outside
# the repository, so a fresh clone runs every test.
FIXTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures"


def shared_data_dir() -> Path:
    """The directory holding ``burn-panics.jsonl`` and ``burn-panics.sites.jsonl``: ``tests/fixtures``."""
    return FIXTURES_DIR


def load_records(data_dir: Path) -> tuple[list[dict], list[dict]]:
    """Records (the ``record`` objects) and panic sites, in file order."""
    with (data_dir / RECORDS_FILE).open(encoding="utf-8") as f:
        records = [json.loads(line)["record"] for line in f if line.strip()]
    with (data_dir / SITES_FILE).open(encoding="utf-8") as f:
        sites = [json.loads(line) for line in f if line.strip()]
    return records, sites


class _Catalog:
    """Indexes over the records that the case builders need."""

    def __init__(self, records: list[dict], sites: list[dict]) -> None:
        self.records = records
        self.sites = sites
        self.by_id = {r["id"]: r for r in records}
        self._by_message: dict[str, set[str]] = defaultdict(set)
        self._by_pattern: dict[str, set[str]] = defaultdict(set)
        for r in records:
            self._by_message[r["errorMessage"]].add(r["id"])
            self._by_pattern[r["messagePattern"]].add(r["id"])
        # Sites of other records with the same pattern in the same file: only the line tells them apart.
        self._twins: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
        for s in sites:
            key = (s["filePath"], self.by_id[s["id"]]["messagePattern"])
            self._twins[key].append((s["lineNumber"], s["id"]))

    def same_message_ids(self, record: dict) -> frozenset[str]:
        # Equal patterns are included too: records differing only in placeholder names print the same text,
        # so without a location no answer could tell them apart.
        ids = self._by_message[record["errorMessage"]] | self._by_pattern[record["messagePattern"]]
        return frozenset(ids)

    def twin_lines(self, site: dict) -> list[int]:
        pattern = self.by_id[site["id"]]["messagePattern"]
        return [n for n, rid in self._twins[(site["filePath"], pattern)] if rid != site["id"]]

    def accepted(self, record: dict, has_location: bool) -> frozenset[str]:
        return frozenset({record["id"]}) if has_location else self.same_message_ids(record)


# ---- Rust Debug values --------------------------------------------------------------------------------


class _Ident(str):
    """A bare Rust identifier or unit variant: printed without quotes by Debug."""


@dataclass(frozen=True)
class _S:
    """A Rust struct (named fields), tuple struct (``tuple_like``) or ``Name { .. }`` (fields None)."""

    name: str
    fields: tuple | None = ()
    tuple_like: bool = False


def _debug(v: object, pretty: bool = False, level: int = 0) -> str:
    """Render like ``{:?}`` or, with pretty, ``{:#?}`` (four-space indents, trailing commas)."""
    pad, end = "    " * (level + 1), "    " * level
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _Ident):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v) if ("." in repr(v) or "e" in repr(v)) else f"{v}.0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return _debug_seq("[", "]", v, pretty, pad, end, level)
    if isinstance(v, _S):
        if v.fields is None:
            return f"{v.name} {{ .. }}"
        if not v.fields:
            return v.name
        if v.tuple_like:
            return v.name + _debug_seq("(", ")", list(v.fields), pretty, pad, end, level)
        if pretty:
            body = "".join(f"{pad}{k}: {_debug(x, True, level + 1)},\n" for k, x in v.fields)
            return f"{v.name} {{\n{body}{end}}}"
        return v.name + " { " + ", ".join(f"{k}: {_debug(x)}" for k, x in v.fields) + " }"
    raise TypeError(f"no Debug rendering for {v!r}")


def _debug_seq(open_: str, close: str, items: list, pretty: bool, pad: str, end: str, level: int) -> str:
    if not items:
        return open_ + close
    if pretty:
        return open_ + "\n" + "".join(f"{pad}{_debug(x, True, level + 1)},\n" for x in items) + end + close
    return open_ + ", ".join(_debug(x) for x in items) + close


def _display(v: object) -> str:
    if isinstance(v, str):
        return str(v)
    if isinstance(v, float):
        return f"{v:g}"
    return _debug(v)


# ---- Placeholder values -------------------------------------------------------------------------------

_QUANT = _S("QuantScheme", tuple((k, _Ident(v)) for k, v in (
    ("value", "Q8S"), ("param", "F32"), ("store", "Native"), ("level", "Tensor"), ("mode", "Symmetric"),
)))  # fmt: skip
_DTYPES = [_Ident(d) for d in ("F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "U32", "Bool")]
_DEVICES = [
    _S("Cuda", (0,), True), _S("Cuda", (1,), True), _Ident("Cpu"), _Ident("DefaultDevice"),
    _S("DiscreteGpu", (0,), True), _S("IntegratedGpu", (0,), True), _S("Metal", (0,), True),
    _S("CudaDevice", (("index", 0),)),
]  # fmt: skip
_BACKENDS = ["Wgpu", "NdArray", "Cuda", "LibTorch", "Candle", "Flex", "Autodiff<Wgpu>", "Fusion<CubeBackend>"]
_IDENTS = ["conv2d", "avg_pool2d", "max_pool2d", "matmul", "Linear", "embedding", "layer_norm", "gather"]
_VARIANTS = ["Prod", "Median", "ArgMax", "Nearest", "Bicubic", "Reflect", "Border", "Float", "Int", "Sparse"]
_MESSAGES = [
    "missing field `dims`", "unexpected end of file", "connection reset by peer", "invalid magic number",
    "the adapter does not support f16", "out of memory", "channel closed",
]  # fmt: skip
_PATHS = [
    "/home/ana/models/mnist.mpk", "artifacts/checkpoint/model-12.mpk", "/tmp/burn/model.safetensors",
    "C:\\Users\\Alice\\models\\resnet18.pt", "./weights/encoder.bin", "data/train.sqlite",
]  # fmt: skip


def _small_int(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 128, 256, 512, 784, 1024, 3072])


def _shape_dims(rng: random.Random) -> list[int]:
    return [rng.choice([1, 2, 3, 4, 8, 16, 28, 32, 64, 128, 224]) for _ in range(rng.randint(1, 4))]


def _shape(rng: random.Random) -> object:
    dims = _shape_dims(rng)
    return _S("Shape", (("dims", dims),)) if rng.random() < 0.5 else dims


def _error_value(rng: random.Random) -> object:
    return rng.choice(_ERR_VALUES)


def _dtype(rng: random.Random) -> object:
    return _S("QFloat", (_QUANT,), True) if rng.random() < 0.15 else rng.choice(_DTYPES)


_ERR_VALUES: list[object] = [
    _S("Os", (("code", 2), ("kind", _Ident("NotFound")), ("message", "No such file or directory"))),
    _S("Os", (("code", 13), ("kind", _Ident("PermissionDenied")), ("message", "Permission denied"))),
    _S("SendError", None),
    _S("PoisonError", None),
    _Ident("RecvError"),
    _S("Custom", (("kind", _Ident("InvalidData")), ("error", "unexpected end of file"))),
    _S("Error", ("missing field `dims`", _Ident("line: 1"), _Ident("column: 52")), True),
    _S("Io", (_S("Os", (("code", 28), ("kind", _Ident("StorageFull")), ("message", "No space"))),), True),
    _S("ParseIntError", (("kind", _Ident("InvalidDigit")),)),
    _S("Utf8Error", (("valid_up_to", 3), ("error_len", _S("Some", (1,), True)))),
    _S("TryFromIntError", (_S("()", ()),), True),
    _S("Elapsed", (_S("()", ()),), True),
]

# Value makers keyed by kind; each returns a Rust value rendered later by _debug/_display.
_MAKERS: dict[str, Callable[[random.Random], object]] = {
    "int": _small_int,
    "rank": lambda rng: rng.randint(1, 6),
    "axis": lambda rng: rng.randint(0, 4),
    "float": lambda rng: rng.choice([0.0, 0.5, -1.0, 0.0001, 2.5, 30.0, -0.25]),
    "dtype": _dtype,
    "scheme": lambda rng: _QUANT,
    "shape": _shape,
    "dims": _shape_dims,
    "device": lambda rng: rng.choice(_DEVICES),
    "backend": lambda rng: _Ident(rng.choice(_BACKENDS)),
    "error": _error_value,
    "message": lambda rng: rng.choice(_MESSAGES),
    "path": lambda rng: rng.choice(_PATHS),
    "ident": lambda rng: _Ident(rng.choice(_IDENTS)),
    "variant": lambda rng: _Ident(rng.choice(_VARIANTS)),
    "node": lambda rng: _S("NodeId", (("value", rng.randint(1, 900)),)),
    "address": lambda rng: rng.choice(["127.0.0.1:3000", "ws://localhost:3000", "10.0.0.4:8080"]),
    "config": lambda rng: _S("ReduceConfig", (("dim", rng.randint(0, 3)), ("keepdim", rng.random() < 0.5))),
    "block": lambda rng: _S("Block", (("id", rng.randint(0, 9)), ("ops", [rng.choice(_IDENTS)]))),
}

_ERR_TEXTS = [
    "No such file or directory (os error 2)",
    "Permission denied (os error 13)",
    "missing field `dims` at line 1 column 52",
    "sending on a closed channel",
    "invalid digit found in string",
]
_MAKERS["error-text"] = lambda rng: rng.choice(_ERR_TEXTS)

# Kinds whose Display form differs from (or does not exist beside) their Debug form.
_DISPLAY_KIND = {"error": "error-text", "shape": "dims", "config": "ident", "block": "int", "node": "int"}

# Rules on the placeholder's own name, in order; all case-insensitive.
_NAME_RULES = [
    (r"^(n_|num_)|_len$", "int"),
    (r"node|^id$", "node"),
    (r"dtype", "dtype"),
    (r"scheme", "scheme"),
    (r"shape", "shape"),
    (r"dims|axes|shifts|strides|sizes", "dims"),
    (r"^(i|j|k|dim|axis|d)$|_dim$", "axis"),
    (r"_id$|count|size|^(n|index|idx)$", "int"),
    (r"^(d\d?|dv|dm|di|do|r|l)$", "rank"),
    (r"device", "device"),
    (r"backend", "backend"),
    (r"^(err|e|error)$", "error"),
    (r"^(msg|message|reason)$", "message"),
    (r"path|file", "path"),
    (r"^(name|op|self_type|key|kind|ident)$", "ident"),
    (r"alpha|softcap|eps|lr|beta|gamma|threshold|ratio|^v$|value", "float"),
    (r"address|addr", "address"),
    (r"config", "config"),
    (r"block", "block"),
]
# Rules on the text just before the placeholder, e.g. "Unsupported dtype {:?}" or "dtype, got {value:?}".
_CONNECT = r"[^a-z]*(?:(?:got|found|expected|is|of|but|for|differ)[^a-z]*)*$"
_CONTEXT_RULES = [
    (rf"(dtype|data types?|element type){_CONNECT}", "dtype"),
    (rf"(shapes?|dimensions){_CONNECT}", "shape"),
    (rf"devices?{_CONNECT}", "device"),
    (rf"backends?{_CONNECT}", "backend"),
    (rf"node{_CONNECT}", "node"),
    (rf"(blocks?|got \{{\}}: ){_CONNECT}", "block"),
    (rf"(path|file){_CONNECT}", "path"),
]
# Names too generic to say anything: the surrounding text decides first.
_WEAK_NAMES = frozenset({"", "other", "value", "v", "lhs", "rhs", "t", "g", "0", "1", "2", "3"})


def _value_kind(name: str, before: str, debug: bool) -> str:
    tail = before[-40:].lower()
    by_name = next((k for rule, k in _NAME_RULES if re.search(rule, name, re.IGNORECASE)), None)
    by_context = next((k for rule, k in _CONTEXT_RULES if re.search(rule, tail)), None)
    if not debug and by_context in ("shape", "block", "node"):
        by_context = "int"  # "got {} dims", "got {}: ..." print counts, not the values themselves
    kind = (by_context or by_name) if name in _WEAK_NAMES else (by_name or by_context)
    if kind is None:
        # Unnamed `{:?}` is usually an enum or a shape in Burn's messages; `{}` usually a number.
        kind = ("variant" if name == "other" or "support" in tail else "dims") if debug else "int"
    return kind if debug else _DISPLAY_KIND.get(kind, kind)


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def fill_placeholders(message: str, rng: random.Random) -> str:
    """Replace Rust format placeholders with realistic values; ``{:#?}`` expands to a multi-line value."""
    same_name: dict[str, str] = {}  # `{dim}` twice in one message prints the same value twice

    def replace(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name, _, spec = m.group(1).partition(":")
        key = f"{name}:{spec}"
        if name and key in same_name:
            return same_name[key]
        kind = _value_kind(name, message[: m.start()], "?" in spec)
        value = _MAKERS[kind](rng)
        pretty = "#" in spec
        if pretty and not isinstance(value, (list, _S)):
            value = [value, _MAKERS[kind](rng)]  # so the pretty form really spans several lines
        text = _debug(value, pretty) if "?" in spec else _display(value)
        if name:
            same_name[key] = text
        return text

    return _PLACEHOLDER.sub(replace, message)


# ---- Runtime messages ---------------------------------------------------------------------------------


def _assert_eq_operands(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["int", "dtype", "dims"])
    left = _debug(_MAKERS[kind](rng))
    right = left
    while right == left:
        right = _debug(_MAKERS[kind](rng))
    return left, right


def _operation_name(function: str | None, rng: random.Random) -> str:
    """The 'Operation' a TensorCheck reports: the caller passes a readable op name."""
    if not function:
        return rng.choice(["Reshape", "From Data", "Narrow"])
    if function.startswith("binary_ops"):
        return rng.choice(["Add", "Sub", "Mul", "Div", "Equal"])
    if function == "creation_ops":
        return rng.choice(["From Data", "Zeros", "Ones", "Full"])
    skip = {"args", "vec", "length", "input", "len", "check", "shape", "generic", "param", "tensor"}
    words = [w for w in function.split("_") if w not in skip] or [function]
    return " ".join(w.capitalize() for w in words)


def _tensor_check_block(message: str, function: str | None, rng: random.Random) -> str:
    # Each reason is "\n    {n}. {description} {details}": the space stays even when details are empty.
    trailing = " " if rng.random() < 0.5 else ""
    op = _operation_name(function, rng)
    return f"=== Tensor Operation Error ===\n  Operation: '{op}'\n  Reason:\n    1. {message}{trailing}\n"


def _err_suffix(rng: random.Random) -> str:
    return _debug(_error_value(rng))


def runtime_message(
    record: dict, site: dict, rng: random.Random, *, result_expect: bool | None = None
) -> str:
    """The text Rust prints for this site: filled message plus the prefix/suffix of its macro kind.

    ``result_expect`` forces (True) or forbids (False) the ``: <Debug of Err>`` suffix of ``.expect()``;
    by default most expect sites are on a Result and a few on an Option (which prints the message alone).
    """
    raw = record["errorMessage"]
    # expect() takes a plain &str: braces in it are printed literally.
    msg = fill_placeholders(raw, rng) if site.get("isFormat", True) else raw
    kind = site["kind"]
    if kind == "expect":
        on_result = result_expect if result_expect is not None else rng.random() < 0.8
        return f"{msg}: {_err_suffix(rng)}" if on_result else msg
    if kind == "unimplemented":
        return f"not implemented: {msg}"
    if kind == "todo":
        return f"not yet implemented: {msg}"
    if kind == "unreachable":
        return f"internal error: entered unreachable code: {msg}"
    if kind in ("assert_eq", "debug_assert_eq"):
        left, right = _assert_eq_operands(rng)
        return f"assertion `left == right` failed: {msg}\n  left: {left}\n right: {right}"
    if kind == "tensor_check":
        return _tensor_check_block(msg, site.get("function"), rng)
    return msg


# ---- Paths and locations ------------------------------------------------------------------------------

_USERS = ["ana", "dev", "jsmith", "runner", "ubuntu", "mlee", "kai", "wei"]
_WIN_USERS = ["Alice", "dev", "JohnDoe", "me", "Wei"]
_VERSIONS = ["0.19.0", "0.19.1", "0.18.0", "0.20.0", "0.20.0-pre.3"]
_CRATES_IO = ["index.crates.io-1949cf8c6b5b557f", "index.crates.io-6f17d22bba15001f"]
_MIRRORS = ["mirrors.tuna.tsinghua.edu.cn-df7c3c540f42cdbd", "rsproxy.cn-0dccff568467c15b"]
_GIT_CHECKOUT = "burn-178c6829e5d8c7a0/2c06be3"


def _split_crate(file_path: str) -> tuple[str, str]:
    """``crates/burn-x/src/a.rs`` -> (``burn-x``, ``src/a.rs``)."""
    _, crate, rest = file_path.split("/", 2)
    return crate, rest


def render_path(file_path: str, rng: random.Random, style: str | None = None) -> str:
    """The site's repo-relative path as it shows up on a user's machine; style is one of PATH_STYLES."""
    style = style or rng.choice(PATH_STYLES)
    crate, rest = _split_crate(file_path)
    user, version = rng.choice(_USERS), rng.choice(_VERSIONS)
    home = rng.choice([f"/home/{user}", f"/Users/{user}"])
    if style == "repo":
        return file_path
    if style == "absolute":
        return f"{home}/{rng.choice(['src', 'code', 'dev'])}/burn/{file_path}"
    if style == "registry":
        return f"{home}/.cargo/registry/src/{rng.choice(_CRATES_IO)}/{crate}-{version}/{rest}"
    if style == "registry-mirror":
        return f"{home}/.cargo/registry/src/{rng.choice(_MIRRORS)}/{crate}-{version}/{rest}"
    if style == "registry-tilde":
        return f"~/.cargo/registry/src/{rng.choice(_CRATES_IO)}/{crate}-{version}/{rest}"
    if style == "git":
        return f"{home}/.cargo/git/checkouts/{_GIT_CHECKOUT}/{file_path}"
    win_user = rng.choice(_WIN_USERS)
    if style == "windows-registry":
        index = rng.choice(_CRATES_IO)
        return f"C:\\Users\\{win_user}\\.cargo\\registry\\src\\{index}\\{crate}-{version}\\" + rest.replace(
            "/", "\\"
        )
    if style == "windows-tilde":
        return "~\\" + file_path.replace("/", "\\")
    if style == "windows-mixed":
        # What a Windows build prints when a forward-slash manifest path meets backslash module paths.
        head, _, tail = rest.partition("/")
        return f"C:\\Users\\{win_user}\\burn/crates/{crate}/{head}\\" + tail.replace("/", "\\")
    raise ValueError(f"unknown path style {style!r}")


def _drifted_line(site: dict, cat: _Catalog, rng: random.Random) -> int:
    """The site's line, or a nearby one as in another Burn version, never closer to a same-pattern twin."""
    own = site["lineNumber"]
    if rng.random() < 0.35:
        return own
    twins = cat.twin_lines(site)
    for _ in range(20):
        line = max(1, own + rng.randint(-25, 25))
        if all(abs(line - own) < abs(line - t) for t in twins):
            return line
    return own


def _location(site: dict, cat: _Catalog, rng: random.Random, style: str | None = None) -> str:
    column = site["column"] if rng.random() < 0.7 else rng.randint(5, 60)
    return f"{render_path(site['filePath'], rng, style)}:{_drifted_line(site, cat, rng)}:{column}"


# ---- Shared pieces of pastes --------------------------------------------------------------------------


def _timestamp(rng: random.Random) -> datetime:
    return datetime(2025, 1, 1) + timedelta(seconds=rng.randint(0, 300 * 86400))


def _panic_block(location: str, message: str, thread: str = "main", tid: int | None = None,
                 note: bool = True, quotes: tuple[str, str] = ("'", "'")) -> str:  # fmt: skip
    tid_part = f" ({tid})" if tid is not None else ""
    head = f"thread {quotes[0]}{thread}{quotes[1]}{tid_part} panicked at {location}:\n{message}"
    return f"{head}\n{NOTE}" if note else head


def _module_path(file_path: str) -> str:
    """Rust module path of a source file: ``crates/burn-x/src/ops/mod.rs`` -> ``burn_x::ops``."""
    crate, rest = _split_crate(file_path)
    if not rest.startswith("src/"):
        return "build_script_build"
    parts = rest[len("src/") : -len(".rs")].split("/")
    if parts[-1] in ("lib", "mod", "main"):
        parts = parts[:-1]
    return "::".join([crate.replace("-", "_"), *parts])


def _test_name(site: dict, rng: random.Random) -> str:
    module = _module_path(site["filePath"]).split("::", 1)[1:] or ["lib"]
    function = site.get("function") or rng.choice(["forward", "backward", "init"])
    test = rng.choice(["should_", "test_", "should_panic_", ""]) + function.lstrip("_")
    return f"{module[0]}::tests::{test}"


_PROSE_BEFORE = [
    "",
    "hey all, getting this when I start training:",
    "anyone seen this before?",
    "After bumping burn I get a panic:",
    "my model crashes on the first batch, here's the output",
    "Running the example gives me this",
    "so this happens only on the wgpu backend:",
]
_PROSE_AFTER = ["", "any idea?", "any help appreciated", "what am I doing wrong?", "thanks in advance!"]


def _with_prose(body: str, rng: random.Random, p: float = 0.4) -> str:
    if rng.random() >= p:
        return body
    before, after = rng.choice(_PROSE_BEFORE), rng.choice(_PROSE_AFTER)
    return "\n".join(x for x in (before, body, after) if x)


# ---- Positive format builders: each returns (text, has_location) for one site. ------------------------


@dataclass
class _Pick:
    record: dict
    site: dict
    cat: _Catalog
    rng: random.Random
    message: str

    def loc(self, style: str | None = None) -> str:
        return _location(self.site, self.cat, self.rng, style)


def _hdr_new(p: _Pick) -> tuple[str, bool]:
    preface = ""
    if p.rng.random() < 0.3:
        app = p.rng.choice(["mnist", "my-app", "trainer", "onnx-infer"])
        preface = (
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.21s\n"
            f"     Running `target/debug/{app}`\n"
        )
    return _with_prose(preface + _panic_block(p.loc(), p.message), p.rng), True


_THREAD_NAMES = [
    "<unnamed>",
    "<unnamed>",
    "DSU-4-0",
    "Device-4-0",
    "tokio-runtime-worker",
    "nn::embedding::tests::initializer_zeros",
    "tensor::ops::tests::should_support_reshape",
]


def _hdr_threadid(p: _Pick) -> tuple[str, bool]:
    thread = p.rng.choice(_THREAD_NAMES)
    return _panic_block(p.loc(), p.message, thread, tid=p.rng.randint(1000, 4_000_000)), True


def _hdr_old(p: _Pick) -> tuple[str, bool]:
    # Before Rust 1.73 the message came first, quoted, then the location.
    thread = p.rng.choice(["main", "main", "<unnamed>"])
    return _with_prose(f"thread '{thread}' panicked at '{p.message}', {p.loc()}\n{NOTE}", p.rng), True


def _logger(p: _Pick) -> tuple[str, bool]:
    t = [_timestamp(p.rng) + timedelta(seconds=i) for i in range(3)]
    iso = [x.strftime("%Y-%m-%dT%H:%M:%SZ") for x in t]
    lines = [
        f"{iso[0]} INFO  burn_train::learner::train_val: Fitting the model",
        f"{iso[1]} INFO  burn_train::learner::epoch: Executing training step",
        # burn-train's panic hook logs the PanicHookInfo, whose Display is "panicked at LOC:\nMSG".
        f"{iso[2]} ERROR burn_train::learner::application_logger: "
        f"PANIC => panicked at {p.loc()}:\n{p.message}",
    ]
    return "\n".join(lines[p.rng.randint(0, 2) :]), True


def _unwrap(p: _Pick) -> tuple[str, bool]:
    return _with_prose(_panic_block(p.loc(), p.message, p.rng.choice(["main", "<unnamed>"])), p.rng), True


def _frame(n: int, name: str, at: str) -> str:
    return f"{n:>4}: {name}\n             at {at}"


def _std_frames(kind: str, lib: str, rng: random.Random) -> list[tuple[str, str]]:
    begin_unwind = rng.choice(["rust_begin_unwind", "__rustc::rust_begin_unwind"])
    frames = [
        (begin_unwind, f"{lib}/std/src/panicking.rs:697:5"),
        ("core::panicking::panic_fmt", f"{lib}/core/src/panicking.rs:76:14"),
    ]
    if kind == "expect":
        frames.append(("core::result::unwrap_failed", f"{lib}/core/src/result.rs:1704:5"))
        frames.append(("core::result::Result<T,E>::expect", f"{lib}/core/src/result.rs:1061:23"))
    if kind in ("assert_eq", "debug_assert_eq"):
        frames.append(("core::panicking::assert_failed_inner", f"{lib}/core/src/panicking.rs:410:17"))
    return frames


def _backtrace(p: _Pick) -> tuple[str, bool]:
    style = p.rng.choice(PATH_STYLES)
    loc = p.loc(style)
    function = p.site.get("function") or "{{closure}}"
    module = _module_path(p.site["filePath"])
    impl = f"<impl {p.rng.choice(_BACKENDS)}>::"
    burn_name = f"{module}::{impl if p.rng.random() < 0.4 else ''}{function}"
    app = p.rng.choice(["mnist", "my_app", "trainer"])
    lib = f"/rustc/{p.rng.getrandbits(160):040x}/library"
    frames = [
        *_std_frames(p.site["kind"], lib, p.rng),
        (burn_name, loc),
        (f"{app}::model::Model<B>::forward", f"./src/model.rs:{p.rng.randint(20, 200)}:9"),
        (f"{app}::main", f"./src/main.rs:{p.rng.randint(5, 80)}:5"),
        ("core::ops::function::FnOnce::call_once", f"{lib}/core/src/ops/function.rs:250:5"),
    ]
    trace = "\n".join(_frame(i, name, at) for i, (name, at) in enumerate(frames))
    header = _panic_block(loc, p.message, note=False)
    tail = "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace."
    return f"{header}\nstack backtrace:\n{trace}\n{tail}", True


_TEST_WORDS = ["forward", "backward", "init", "shape", "default_config", "zeros", "display", "serialize"]


def _cargo_test(p: _Pick) -> tuple[str, bool]:
    rng = p.rng
    name = _test_name(p.site, rng)
    prefix = name.rsplit("::", 1)[0]
    picked = rng.sample(_TEST_WORDS, rng.randint(1, 4))
    others = [f"{prefix}::{rng.choice(['should_', 'test_'])}{w}" for w in picked]
    lines = sorted([*others, name])
    listing = "\n".join(f"test {t} ... {'FAILED' if t == name else 'ok'}" for t in lines)
    crate = _split_crate(p.site["filePath"])[0]
    return (
        f"running {len(lines)} tests\n{listing}\n\nfailures:\n\n---- {name} stdout ----\n\n"
        f"{_panic_block(p.loc(), p.message, name)}\n\n\nfailures:\n    {name}\n\n"
        f"test result: FAILED. {len(lines) - 1} passed; 1 failed; 0 ignored; 0 measured; "
        f"{rng.randint(0, 900)} filtered out; finished in {rng.uniform(0.01, 9):.2f}s\n\n"
        f"error: test failed, to rerun pass `-p {crate} --lib`"
    ), True


def _build_script(p: _Pick) -> tuple[str, bool]:
    rng = p.rng
    user = rng.choice(_USERS)
    crate, rest = _split_crate(p.site["filePath"])
    if rest == "build.rs":  # the panic is in Burn's own build script
        package, version = crate, rng.choice(_VERSIONS)
        root = f"/home/{user}/.cargo/registry/src/{_CRATES_IO[0]}/{crate}-{version}"
    else:  # a user's build script calling into Burn (e.g. burn-import generating code)
        package, version = rng.choice(["my-model", "onnx-infer", "import-weights"]), "0.1.0"
        root = f"/home/{user}/src/{package}"
    target = f"{root}/target/debug/build/{package}-{rng.getrandbits(64):016x}/build-script-build"
    stderr = _panic_block(p.loc(), p.message)
    body = f"process didn't exit successfully: `{target}` (exit status: 101)\n--- stdout\n"
    body += f"cargo:rerun-if-changed=build.rs\n--- stderr\n{stderr}"
    indented = "\n".join(("  " + line) if line else line for line in body.split("\n"))
    return (
        f"   Compiling {package} v{version} ({root})\n"
        f"error: failed to run custom build command for `{package} v{version} ({root})`\n\n"
        f"Caused by:\n{indented}\nwarning: build failed, waiting for other jobs to finish..."
    ), True


_RED, _BOLD, _DIM, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


def _ansi(p: _Pick) -> tuple[str, bool]:
    loc = p.loc()
    if p.rng.random() < 0.5:
        text = (
            f"{_BOLD}thread 'main' panicked at {loc}{_RESET}:\n{_RED}{p.message}{_RESET}\n"
            f"{_DIM}{NOTE}{_RESET}"
        )
    else:  # a tracing subscriber's coloured line
        t = _timestamp(p.rng).strftime("%Y-%m-%dT%H:%M:%S") + f".{p.rng.randint(0, 999_999):06d}Z"
        text = (
            f"{_DIM}{t}{_RESET} {_RED}{_BOLD}ERROR{_RESET} "
            f"{_DIM}burn_train::learner::application_logger:{_RESET} "
            f"PANIC => panicked at {_BOLD}{loc}{_RESET}:\n{_RED}{p.message}{_RESET}"
        )
    if p.rng.random() < 0.6:
        text = _timestamp_lines(text, p.rng)
    return text, True


def _timestamp_lines(text: str, rng: random.Random) -> str:
    t = _timestamp(rng)
    out = []
    for line in text.split("\n"):
        t += timedelta(milliseconds=rng.randint(0, 40))
        out.append(f"[{t.strftime('%Y-%m-%dT%H:%M:%S')}.{rng.randint(0, 999):03d}Z] {line}")
    return "\n".join(out)


_SMART = str.maketrans({"'": "\u2019", '"': "\u201d"})
_SLACK_PROSE = [
    'Hey team, I\'m getting this panic after upgrading, see "{link}":',
    "can't get past this one, it's from the \"mnist\" example ({link})",
    "Hi! Following {link} and it's crashing:",
    "Anyone know what's going on here?",
    "I'm stuck on this, it's the \"train\" step:",
]
_SLACK_LINKS = [
    "<https://github.com/tracel-ai/burn/issues/{n}|this issue>",
    "<https://github.com/tracel-ai/burn/blob/main/examples/mnist/README.md|link>",
    "<https://burn.dev/books/burn/|the book>",
]


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _smart_quotes(text: str) -> str:
    # Phones curl opening quotes after a space or line start, closing ones elsewhere.
    text = re.sub(r"(^|[\s(])'", "\\1\u2018", text, flags=re.M)
    text = re.sub(r'(^|[\s(])"', "\\1\u201c", text, flags=re.M)
    return text.translate(_SMART)


def _slack(p: _Pick) -> tuple[str, bool]:
    rng = p.rng
    quotes = ("\u2018", "\u2019") if rng.random() < 0.5 else ("'", "'")
    paste = _slack_escape(_panic_block(p.loc(), p.message, quotes=quotes))
    link = rng.choice(_SLACK_LINKS).replace("{n}", str(rng.randint(1000, 3500)))
    # Escape first, then add the link: Slack's own <url|text> markup keeps its real angle brackets.
    prose = _smart_quotes(_slack_escape(rng.choice(_SLACK_PROSE))).replace("{link}", link)
    if rng.random() < 0.7:
        body = f"```{rng.choice(['', 'rust'])}\n{paste}\n```"
    else:
        body = "\n".join(f"> {line}" for line in paste.split("\n"))
    parts = [prose, body]
    if rng.random() < 0.4:
        parts.append(_smart_quotes(_slack_escape("I've tried \"cargo clean\" already & it didn't help")))
    text = "\n".join(parts)
    return (text.replace("\n", "\r\n") if rng.random() < 0.7 else text), True


def _cascade(p: _Pick, last: bool) -> str:
    """A later panic that follows the first one: poisoned locks, another catalog panic, or an abort."""
    rng = p.rng
    choice = rng.random() if last else rng.random() * 0.8  # nothing is printed after an abort
    if choice < 0.4:
        other = rng.choice([s for s in p.cat.sites if s["filePath"] != p.site["filePath"]])
        loc = _location(other, p.cat, rng)
        msg = "called `Result::unwrap()` on an `Err` value: PoisonError { .. }"
        return _panic_block(loc, msg, "<unnamed>", note=False)
    if choice < 0.8:
        first = p.cat.same_message_ids(p.record)
        other = rng.choice(p.cat.sites)
        while other["id"] in first:  # a different message, or the answer would be ambiguous
            other = rng.choice(p.cat.sites)
        rec = p.cat.by_id[other["id"]]
        thread = rng.choice(["<unnamed>", "DSU-4-0", "Device-4-0"])
        message = runtime_message(rec, other, rng)
        return _panic_block(_location(other, p.cat, rng), message, thread, note=False)
    return rng.choice([
        "thread 'main' panicked at library/core/src/panicking.rs:221:5:\n"
        "panic in a function that cannot unwind",
        "thread caused non-unwinding panic. aborting.",
        "panicked while processing panic. aborting.",
    ])  # fmt: skip


def _multi(p: _Pick) -> tuple[str, bool]:
    first = _panic_block(p.loc(), p.message, p.rng.choice(["main", "<unnamed>", "DSU-4-0"]))
    n = p.rng.randint(1, 2)
    later = [_cascade(p, last=i == n - 1) for i in range(n)]
    return _with_prose("\n".join([first, *later]), p.rng, p=0.3), True


_NO_HEADER = [
    "getting this: {m} any idea?",
    "{m}",
    "after upgrading burn I get `{m}`",
    'what does "{m}" mean?',
    "my training loop dies with\n{m}\nwhat am I doing wrong?",
]


def _no_header(p: _Pick) -> tuple[str, bool]:
    if "\n" in p.message.strip():
        return f"getting this error:\n```\n{p.message}\n```\nany idea?", False
    return p.rng.choice(_NO_HEADER).replace("{m}", p.message), False


_BUILDERS: dict[str, Callable[[_Pick], tuple[str, bool]]] = {
    "hdr-new": _hdr_new,
    "hdr-threadid": _hdr_threadid,
    "hdr-old": _hdr_old,
    "logger": _logger,
    "unwrap": _unwrap,
    "backtrace": _backtrace,
    "cargo-test": _cargo_test,
    "build-script": _build_script,
    "ansi": _ansi,
    "slack": _slack,
    "multi": _multi,
    "no-header": _no_header,
}


def _pick(fmt: str, cat: _Catalog, rng: random.Random) -> _Pick:
    """A random site suited to the format, with its runtime message already generated."""
    candidates = [s for s in cat.sites if s["kind"] == "expect"] if fmt == "unwrap" else cat.sites
    for _ in range(100):
        site = rng.choice(candidates)
        record = cat.by_id[site["id"]]
        message = runtime_message(record, site, rng, result_expect=True if fmt == "unwrap" else None)
        if fmt == "hdr-old" and "\n" in message:
            continue  # the old header quoted the message on one line; multi-line ones are left out
        return _Pick(record, site, cat, rng, message)
    raise RuntimeError(f"no site fits format {fmt!r}")


def positive_cases(records: list[dict], sites: list[dict], rng: random.Random, per_format: int) -> list[Case]:
    """``per_format`` cases for each of FORMATS, each from a random site."""
    cat = _Catalog(records, sites)
    cases = []
    for fmt in FORMATS:
        for i in range(per_format):
            p = _pick(fmt, cat, rng)
            text, has_location = _BUILDERS[fmt](p)
            accepted = cat.accepted(p.record, has_location)
            cases.append(Case(f"{fmt}-{i:06d}", text, fmt, p.record["id"], accepted, has_location, None))
    return cases


# ---- Typed queries with a typo ------------------------------------------------------------------------


def _literal_runs(message: str) -> list[list[str]]:
    """Runs of consecutive whitespace-separated words that hold no placeholder."""
    runs: list[list[str]] = [[]]
    for word in message.split():
        if "{" in word or "}" in word:
            runs.append([])
        else:
            runs[-1].append(word)
    return [r for r in runs if len(r) >= 3]


def _typo(word: str, rng: random.Random) -> str:
    """One keyboard slip: swap two neighbouring letters, drop, double or replace one letter."""
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    while True:
        op, i = rng.choice(["swap", "drop", "double", "replace"]), rng.choice(letters)
        if op == "swap" and i + 1 < len(word) and word[i + 1].isalpha() and word[i] != word[i + 1]:
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        if op == "drop":
            return word[:i] + word[i + 1 :]
        if op == "double":
            return word[:i] + word[i] + word[i:]
        if op == "replace":
            c = rng.choice([x for x in string.ascii_lowercase if x != word[i].lower()])
            return word[:i] + (c.upper() if word[i].isupper() else c) + word[i + 1 :]


def _unique_fragment(
    record: dict, cat: _Catalog, lowered: list[tuple[str, str]], rng: random.Random
) -> list[str] | None:
    """Words (3-6) of the message that only records of the same message contain, or None."""
    own = cat.same_message_ids(record)
    windows = [
        run[start : start + size]
        for run in _literal_runs(record["errorMessage"])
        for size in range(3, 7)
        for start in range(len(run) - size + 1)
    ]
    rng.shuffle(windows)
    for words in windows:
        if not any(sum(c.isalpha() for c in w) >= 5 for w in words):
            continue
        needle = " ".join(words).lower()
        if all(rid in own for rid, text in lowered if needle in text):
            return words
    return None


def typo_cases(records: list[dict], rng: random.Random, n: int) -> list[Case]:
    """Typed queries: 3-6 literal words of a message, sometimes lower-cased, with one typo."""
    cat = _Catalog(records, [])
    lowered = [(r["id"], " ".join(r["errorMessage"].split()).lower()) for r in records]
    cases: list[Case] = []
    order = list(records)
    rng.shuffle(order)
    for record in order:
        if len(cases) == n:
            break
        words = _unique_fragment(record, cat, lowered, rng)
        if words is None:
            continue
        j = rng.choice([k for k, w in enumerate(words) if sum(c.isalpha() for c in w) >= 5])
        message = " ".join(record["errorMessage"].split()).lower()
        text = " ".join(words)
        while text.lower() in message:  # dropping a final letter could leave a plain prefix
            text = " ".join([*words[:j], _typo(words[j], rng), *words[j + 1 :]])
        text = text.lower() if rng.random() < 0.4 else text
        accepted = cat.same_message_ids(record)
        cases.append(Case(f"typo-{len(cases):06d}", text, "typo", record["id"], accepted, False, None))
    return cases


# ---- Negatives: chat the bot must not answer ----------------------------------------------------------


def _user_loc(rng: random.Random) -> str:
    file = rng.choice(["src/main.rs", "src/lib.rs", "src/model.rs", "examples/train.rs"])
    return f"{file}:{rng.randint(3, 300)}:{rng.randint(5, 40)}"


def _dep_loc(rng: random.Random, dep: str, rest: str) -> str:
    registry = f"/home/{rng.choice(_USERS)}/.cargo/registry/src/{rng.choice(_CRATES_IO)}"
    return f"{registry}/{dep}/{rest}:{rng.randint(50, 4000)}:{rng.randint(5, 30)}"


_QUESTIONS = [
    "how do I load a model checkpoint in burn?",
    "Is there a way to run burn on the GPU on a Mac?",
    "what's the difference between the wgpu and cuda backends?",
    "Does anyone have an example of a custom dataset loader?",
    "How can I export my model to ONNX?",
    "when is the next release planned?",
]
_RUSTC = [
    "error[E0277]: the trait bound `MyModel<B>: Module<B>` is not satisfied\n --> src/main.rs:10:5\n   |\n"
    "10 |     let model = MyModel::new(&device);\n"
    "   |     ^^^^^^^^^^^^^ the trait `Module<B>` is not implemented for `MyModel<B>`",
    "error[E0308]: mismatched types\n  --> src/model.rs:42:19\n   |\n42 |         self.linear.forward(x)\n"
    "   |                   ^^^^^^^ expected `Tensor<B, 2>`, found `Tensor<B, 3>`",
    "error[E0599]: no method named `to_device` found for struct `Tensor` in the current scope\n"
    '  --> src/train.rs:77:14\n\nerror: could not compile `mnist` (bin "mnist") due to 1 previous error',
]
_PYTHON = [
    'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    model = load()\n'
    '  File "train.py", line 7, in load\n    return torch.load(path)\n'
    "FileNotFoundError: [Errno 2] No such file or directory: 'model.pt'",
    'Traceback (most recent call last):\n  File "/app/infer.py", line 33, in forward\n'
    "    x = x.view(-1, 784)\nRuntimeError: shape '[-1, 784]' is invalid for input of size 1000",
]
_STD_PANICS = [
    "index out of bounds: the len is 3 but the index is 5",
    "attempt to subtract with overflow",
    "attempt to add with overflow",
    "called `Option::unwrap()` on a `None` value",
    "RefCell already borrowed",
    "already mutably borrowed: BorrowError",
    "attempt to divide by zero",
    "range end index 10 out of range for slice of length 4",
]
_USER_PANICS = [
    "config.json is missing the `epochs` key",
    "expected 10 classes in the dataset",
    "TODO: handle grayscale images",
    "batch was empty, check the dataloader",
    "could not parse learning rate from args",
]
_BURN_LIKE = [
    "something that no record says",
    "gradient graph got tangled while merging two branches",
    "kernel launch exceeded the imaginary limit of 7 blocks",
    "the tensor wandered off to another dimension",
]
_UNWRAP_ERRS = [
    'Os { code: 2, kind: NotFound, message: "No such file or directory" }',
    "ParseIntError { kind: InvalidDigit }",
    'Error("expected value", line: 1, column: 1)',
    "RecvError",
]
_CHATTER = ["thanks!! 🎉", "lol 😅 works now", "🔥🔥🔥", ":+1: merged", "gm ☕", "nice, ty 🙏"]


def _neg_std(rng: random.Random) -> str:
    loc = _user_loc(rng) if rng.random() < 0.6 else _dep_loc(rng, "ndarray-0.16.1", "src/dimension/mod.rs")
    return _panic_block(loc, rng.choice(_STD_PANICS))


def _neg_unwrap(rng: random.Random) -> str:
    msg = f"called `Result::unwrap()` on an `Err` value: {rng.choice(_UNWRAP_ERRS)}"
    return _panic_block(_user_loc(rng), msg)


def _neg_tokio(rng: random.Random) -> str:
    msg = rng.choice([
        "Cannot start a runtime from within a runtime. This happens because a function (like `block_on`) "
        "attempted to block the current thread while the thread is being used to drive asynchronous tasks.",
        "there is no reactor running, must be called from the context of a Tokio 1.x runtime",
    ])  # fmt: skip
    loc = _dep_loc(rng, "tokio-1.44.2", "src/runtime/scheduler/multi_thread/mod.rs")
    return _panic_block(loc, msg, "tokio-runtime-worker")


def _neg_wgpu(rng: random.Random) -> str:
    msg = (
        "wgpu error: Validation Error\n\nCaused by:\n  In Device::create_buffer\n"
        "    Buffer size 4294967296 is greater than the maximum buffer size (268435456)\n"
    )
    loc = _dep_loc(rng, "wgpu-25.0.2", "src/backend/wgpu_core.rs")
    return _panic_block(loc, msg)


def _neg_burn_like(rng: random.Random) -> str:
    path = rng.choice(["crates/burn-autodiff/src/ops/module.rs", "crates/burn-tensor/src/tensor/api/base.rs"])
    return _panic_block(f"{path}:{rng.randint(100, 900)}:9", rng.choice(_BURN_LIKE))


_NEGATIVES: dict[str, Callable[[random.Random], str]] = {
    "neg-question": lambda rng: rng.choice(_QUESTIONS),
    "neg-rustc": lambda rng: rng.choice(_RUSTC),
    "neg-python": lambda rng: rng.choice(_PYTHON),
    "neg-std": _neg_std,
    "neg-unwrap": _neg_unwrap,
    "neg-tokio": _neg_tokio,
    "neg-wgpu": _neg_wgpu,
    "neg-user": lambda rng: _panic_block(_user_loc(rng), rng.choice(_USER_PANICS)),
    "neg-burn-like": _neg_burn_like,
    "neg-empty": lambda rng: rng.choice(["", " ", "\n", "  \t\n  "]),
    "neg-chatter": lambda rng: rng.choice(_CHATTER),
}


def negative_cases(rng: random.Random, n: int) -> list[Case]:
    """``n`` chat messages with no catalogued panic, cycling through every kind of negative."""
    kinds = list(_NEGATIVES)
    counts: dict[str, int] = defaultdict(int)
    cases = []
    for i in range(n):
        fmt = kinds[i % len(kinds)]
        text = _NEGATIVES[fmt](rng)
        cases.append(Case(f"{fmt}-{counts[fmt]:06d}", text, fmt, "", frozenset(), False, False))
        counts[fmt] += 1
    return cases


# ---- Everything, and the command line -----------------------------------------------------------------


def all_cases(data_dir: Path, seed: int = 0, per_format: int = 60) -> list[Case]:
    """Positives (per_format per family), per_format typo queries and 2 * per_format negatives."""
    records, sites = load_records(Path(data_dir))
    # One generator per section, so that changing one section does not reshuffle the others.
    return [
        *positive_cases(records, sites, random.Random(f"{seed}:positive"), per_format),
        *typo_cases(records, random.Random(f"{seed}:typo"), per_format),
        *negative_cases(random.Random(f"{seed}:negative"), 2 * per_format),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="JSONL file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-format", type=int, default=60)
    parser.add_argument("--data-dir", type=Path, default=FIXTURES_DIR)
    args = parser.parse_args(argv)
    cases = all_cases(args.data_dir, args.seed, args.per_format)
    with args.out.open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case.to_json(), ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
