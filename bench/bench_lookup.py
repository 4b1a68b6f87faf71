"""Lookup benchmark for panicbot's Matcher on the real Burn catalog and on synthetic catalogs scaled from it.

One run measures, per catalog size: index build time, index memory per record (tracemalloc), lookup latency
per query category (p50/p99), top-1 correctness on header pastes, and two baselines on the same queries
(a loop of `re.fullmatch` over every record's messagePattern, and `rapidfuzz.process.extractOne` over all
messages). It prints tables and writes nothing to disk.

    uv run python bench/bench_lookup.py                       # 1199, 10k, 100k, 1M
    uv run python bench/bench_lookup.py --quick               # smoke test: 1199 and 10k, few queries
    uv run python bench/bench_lookup.py --sizes 1199,100000 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pstats
import random
import re
import subprocess
import sys
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python bench/bench_lookup.py` puts bench/, not the root, on sys.path
    sys.path.insert(0, str(REPO_ROOT))

import hyperscan  # noqa: E402
import re2  # noqa: E402
from rapidfuzz import process  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bot import patterns as bot_patterns  # noqa: E402
from bot.matcher import Matcher  # noqa: E402
from bot.records import Record, load_catalog  # noqa: E402
from bot.rust_messages import pattern_from_message, pattern_segments, split_format_string  # noqa: E402

DATA_FILE = REPO_ROOT / "tests" / "fixtures" / "burn-panics.jsonl"
REAL_SIZE = 1199
DEFAULT_SIZES = (REAL_SIZE, 10_000, 100_000, 1_000_000)
RECORDS_PER_FILE = 50
FILES_PER_CRATE = 16
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"

# Query mix: mostly header pastes; the rest split between the other categories.
CATEGORIES = ("header", "no-location", "typo", "negative")
MIX = {"header": 0.70, "no-location": 0.10, "typo": 0.10, "negative": 0.10}

# Targets (checked at sizes up to 100k; 1M figures are reported whatever they are).
TARGET_P99_MS = 1.0
TARGET_P99_SIZE = 100_000
TARGET_BUILD_S_PER_100K = 5.0
TARGET_INDEX_BYTES = 2048
TARGET_MAX_SIZE = 100_000
SMALL_BUILD = 10_000
RE2_SET_CHUNK = 5_000  # patterns per RE2 Set in the RE2 Set baseline
SHAPES = ("plain", "releases", "escaped")

console = Console(width=160)


# ----------------------------------------------------------------------------------------------------------
# Rust format strings: placeholders and the data set's messagePattern derivation

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[^{}\n]*\}")
_WORD = re.compile(r"^[A-Za-z][a-z_]{2,}$")
_SLUG = re.compile(r"[^a-z0-9]+")


def split_message(message: str) -> list[tuple[bool, str]]:
    """(is_placeholder, text) pieces of a Rust format string; `{{`/`}}` stay in the text as written."""
    pieces: list[tuple[bool, str]] = []
    position = 0
    for match in _PLACEHOLDER.finditer(message):
        token = match.group(0)
        if token in ("{{", "}}"):
            continue
        if match.start() > position:
            pieces.append((False, message[position : match.start()]))
        pieces.append((True, token))
        position = match.end()
    if position < len(message):
        pieces.append((False, message[position:]))
    return pieces


def unbrace(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


# ----------------------------------------------------------------------------------------------------------
# Synthetic catalog: a bigger Burn-like catalog, not copies


@dataclass
class Vocabulary:
    words: list[str]
    lower_words: list[str]

    @classmethod
    def from_messages(cls, messages: Sequence[str]) -> Vocabulary:
        found: Counter[str] = Counter()
        for message in messages:
            for is_ph, text in split_message(message):
                if not is_ph:
                    found.update(w.strip(".,:;`'\"()") for w in text.split())
        words = sorted(w for w in found if _WORD.match(w))
        lower = sorted({w.lower() for w in words if w.islower() and "_" not in w})
        return cls(words, lower)


def _identifier(rng: random.Random, vocab: Vocabulary, n: int) -> str:
    style = rng.random()
    if style < 0.4:
        return f"op_{n}"
    if style < 0.7:
        return f"quantized_{rng.choice(vocab.lower_words)}_{n}"
    return f"{rng.choice(vocab.lower_words)}_{rng.choice(vocab.lower_words)}_{n}"


def synth_message(base: str, rng: random.Random, vocab: Vocabulary, n: int) -> str:
    """A new message shaped like `base`: 1-2 words replaced from the real vocabulary, and a made-up identifier
    (unique per record) inserted. Placeholders are kept where the base had them."""
    pieces = split_message(base)
    items: list[list[str]] = []  # per text piece: whitespace-split items with separators kept
    candidates: list[tuple[int, int]] = []
    for p_index, (is_ph, text) in enumerate(pieces):
        parts = re.split(r"(\s+)", text) if not is_ph else [text]
        items.append(parts)
        if is_ph:
            continue
        last = len(parts) - 1
        for i_index, item in enumerate(parts):
            if i_index % 2 or not _WORD.match(item):
                continue
            touches_left = i_index == 0 and p_index > 0
            touches_right = i_index == last and p_index < len(pieces) - 1
            if not (touches_left or touches_right):
                candidates.append((p_index, i_index))
    replace = min(len(candidates), rng.choice((1, 1, 2)))
    for p_index, i_index in rng.sample(candidates, replace):
        old = items[p_index][i_index]
        new = rng.choice(vocab.words)
        if old[:1].isupper():
            new = new[:1].upper() + new[1:]
        elif old.islower():
            new = new.lower()
        items[p_index][i_index] = new
    ident = _identifier(rng, vocab, n)
    where = rng.random()
    if where < 0.35 or not candidates:
        prefix = f"{ident}: "
        return prefix + "".join("".join(parts) for parts in items)
    if where < 0.7:
        p_index, i_index = rng.choice(candidates)
        items[p_index][i_index] += rng.choice((" in ", " for ", " of ", " ")) + ident
        return "".join("".join(parts) for parts in items)
    text = "".join("".join(parts) for parts in items)
    stripped = text.rstrip()
    return stripped + f" (in `{ident}`)" + text[len(stripped) :]


def synth_id(k: int) -> str:
    # Multiplying by an odd constant is a bijection mod 2**64: unique, random-looking 16-hex ids.
    return f"{(k * 0x9E3779B97F4A7C15 + 0x5EED) & 0xFFFFFFFFFFFFFFFF:016x}"


def reescaped(record: Record) -> Record:
    """The record with its plain messagePattern's literals escaped by `re.escape` instead."""
    segments = pattern_segments(record.messagePattern or "")
    if segments is None:
        return record
    pattern = "(.+?)".join(re.escape(segment) for segment in segments)
    return record.model_copy(update={"messagePattern": pattern})


def python_escaped_pattern(message: str) -> str:
    """The messagePattern a tool using Python's `re.escape` writes: `\\ `, `\\-`, `\\#` ... and `(.+?)`."""
    return "(.+?)".join(re.escape(segment) for segment in split_format_string(message))


def generate_synthetic(
    bases: Sequence[dict], count: int, seed: int, *, releases: int = 1, files: int = 1, escaped: bool = False
) -> Iterator[Record]:
    """`count` synthetic records (Record.model_validate each), deterministic for a seed. A prefix of a longer
    run equals a shorter run, so one generation serves every size. With `releases` x `files` above 1, each
    message has that many copies (the shape of a multi-release catalog): the same message in `files` files,
    each at `releases` lines a few apart (one per release). `escaped`: patterns written with `re.escape`."""
    rng = random.Random(seed)
    vocab = Vocabulary.from_messages([b["errorMessage"] for b in bases])
    modules: dict[int, str] = {}
    copies = releases * files
    base: dict = {}
    message = ""
    for k in range(count):
        group, copy = divmod(k, copies)
        if copy == 0:
            base = bases[rng.randrange(len(bases))]
            message = synth_message(base["errorMessage"], rng, vocab, group)
        release, site = divmod(copy, files)
        # ~RECORDS_PER_FILE records per file: with copies, each file holds its sites in every release.
        slot = (group * files + site) if copies > 1 else k
        per_file = max(1, RECORDS_PER_FILE // releases)
        file_index = slot // per_file
        crate = file_index // FILES_PER_CRATE
        module = modules.get(file_index)
        if module is None:
            word = rng.choice(vocab.lower_words)
            sub = rng.choice(("", "", "ops/", "tensor/", "kernel/"))
            module = modules[file_index] = f"{sub}{word}_{file_index % FILES_PER_CRATE}"
        path = f"crates/burn-synth-{crate}/src/{module}.rs"
        line = 20 + (slot % per_file) * 25 + (3 * release if copies > 1 else rng.randrange(20))
        slug = _SLUG.sub("-", unbrace(_PLACEHOLDER.sub("", message)).lower()).strip("-")[:80]
        record = dict(base)
        record.update(
            id=synth_id(k),
            slug=slug,
            errorMessage=message,
            messagePattern=python_escaped_pattern(message) if escaped else pattern_from_message(message),
            filePath=path,
            lineNumber=line,
            githubUrl=f"https://github.com/tracel-ai/burn/blob/{base.get('analyzedSha')}/{path}#L{line}",
            tags=["rust", "burn", f"burn-synth-{crate}", "panic"],
        )
        yield Record.model_validate(record)


# ----------------------------------------------------------------------------------------------------------
# Queries

_DEBUG_VALUES = (
    "Float(F32)",
    "Int(I64)",
    "[2, 3, 4]",
    "Shape { dims: [8, 16, 32] }",
    '"weight"',
    "Some(4)",
    "None",
    "Cuda(0)",
    "QuantScheme { value: Q8F, mode: Symmetric }",
    "NodeId { value: 17 }",
    "Bool",
    "(1, 2)",
)
_DISPLAY_VALUES = ("3", "0", "128", "7", "f32", "conv1", "linear.weight", "2", "64", "-1", "1024")
_PRETTY_DEBUG = "Shape {\n    dims: [\n        2,\n        3,\n    ],\n}"
_THREADS = ("main", "main", "main", "tokio-runtime-worker", "<unnamed>", "burn-train-worker")
_SENTENCES = (
    "getting this error: {m}",
    "I get `{m}` when I start training, any idea?",
    "anyone seen {m} before?",
    "after upgrading burn I now see: {m}",
    "{m}",
    'hi, my model fails with "{m}" on wgpu',
)
_QUESTIONS = (
    "how do I switch from the ndarray backend to wgpu?",
    "is there an example of training on multiple GPUs?",
    "thanks, that fixed it!",
    "which burn version works with cubecl 0.7?",
    "can I load a pytorch checkpoint into a burn module?",
    "why is my loss NaN after the first epoch",
    "does anyone have a working ONNX import for resnet?",
)
_STD_PANICS = (
    "index out of bounds: the len is {a} but the index is {b}",
    "attempt to subtract with overflow",
    "attempt to add with overflow",
    "attempt to divide by zero",
    "called `Option::unwrap()` on a `None` value",
    'called `Result::unwrap()` on an `Err` value: Os {{ code: 2, kind: NotFound, message: "No such file or '
    'directory" }}',
    "already borrowed: BorrowMutError",
    "byte index {b} is out of range of `abc`",
    "range end index {b} out of range for slice of length {a}",
    "capacity overflow",
)


def scaled_records(largest: int, shape: str = "plain") -> list[Record]:
    """The real records then synthetic ones up to `largest` (seed 7): every smaller size is a prefix.
    `shape` "releases" gives each synthetic message 10 x 8 copies, as `--shape releases` does."""
    real, _ = load_real_records()
    bases = [record.model_dump() for record in real]
    copies = {"releases": 10, "files": 8} if shape == "releases" else {}
    return real + list(generate_synthetic(bases, max(0, largest - len(real)), 7, **copies))


def fill(message: str, rng: random.Random) -> str:
    """The message as Rust prints it: every placeholder replaced by a plausible value."""
    out = []
    for is_ph, text in split_message(message):
        if not is_ph:
            out.append(unbrace(text))
        elif "#?" in text:
            out.append(_PRETTY_DEBUG)
        elif "?" in text:
            out.append(rng.choice(_DEBUG_VALUES))
        else:
            out.append(rng.choice(_DISPLAY_VALUES))
    return "".join(out)


def paste_path(path: str, rng: random.Random) -> str:
    """The repository path, or how it shows up from a cargo registry checkout."""
    match = re.match(r"crates/([^/]+)/(src/.+)$", path)
    if match and rng.random() < 0.3:
        crate, rest = match.groups()
        return f"/home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/{crate}-0.19.1/{rest}"
    return path


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == 1:
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def typo_fragment(message: str, rng: random.Random) -> str | None:
    """3-5 consecutive literal words of the message, one of them misspelt."""
    made = typed_fragment(message, rng)
    return None if made is None else made[0]


def typed_fragment(message: str, rng: random.Random) -> tuple[str, str] | None:
    """(what is typed, the words it was taken from): 3-5 consecutive literal words of the message, one of
    four letters or more misspelt, half of them lower-cased."""
    runs: list[list[str]] = []
    for is_ph, text in split_message(message):
        if is_ph:
            continue
        words = [w for w in unbrace(text).split() if w]
        if len(words) >= 3:
            runs.append(words)
    if not runs:
        return None
    run = rng.choice(runs)
    length = min(len(run), rng.randint(3, 5))
    start = rng.randrange(len(run) - length + 1)
    words = run[start : start + length]
    original = " ".join(words)
    long = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if long:
        i = rng.choice(long)
        words[i] = _typo(words[i], rng)
    text = " ".join(words)
    return (text.lower() if rng.random() < 0.5 else text), original


@dataclass(frozen=True)
class Query:
    category: str
    text: str
    record_index: int | None  # the record it was made from (None for negatives)
    line: int | None  # pasted line number (header pastes)


def header_paste(message: str, path: str, line: int, rng: random.Random) -> str:
    column = rng.randint(5, 60)
    thread = rng.choice(_THREADS)
    return f"thread '{thread}' panicked at {path}:{line}:{column}:\n{message}\n{NOTE}"


def make_queries(records: Sequence[Record], count: int, seed: int) -> list[Query]:
    rng = random.Random(seed)
    queries: list[Query] = []
    counts = {c: round(count * MIX[c]) for c in CATEGORIES}
    counts["header"] += count - sum(counts.values())
    for category in CATEGORIES:
        made = 0
        while made < counts[category]:
            if category == "negative":
                if rng.random() < 0.6:
                    std = rng.choice(_STD_PANICS).format(a=rng.randint(1, 9), b=rng.randint(10, 99))
                    line = rng.randint(3, 200)
                    text = header_paste(std, "src/main.rs", line, rng)
                else:
                    text = rng.choice(_QUESTIONS)
                queries.append(Query(category, text, None, None))
                made += 1
                continue
            index = rng.randrange(len(records))
            record = records[index]
            if category == "header":
                line = max(1, (record.lineNumber or 1) + rng.randint(-5, 5))
                message = fill(record.errorMessage, rng)
                text = header_paste(message, paste_path(record.filePath or "src/lib.rs", rng), line, rng)
                queries.append(Query(category, text, index, line))
            elif category == "no-location":
                message = fill(record.errorMessage, rng).strip()
                text = rng.choice(_SENTENCES).format(m=message)
                queries.append(Query(category, text, index, None))
            else:
                fragment = typo_fragment(record.errorMessage, rng)
                if fragment is None:
                    continue
                queries.append(Query(category, fragment, index, None))
            made += 1
    rng.shuffle(queries)
    return queries


def baseline_message(text: str) -> str:
    """Simple extraction for the baselines: the lines between the header and the note, else the whole text."""
    lines = text.split("\n")
    if len(lines) > 1 and " panicked at " in lines[0]:
        body = [line for line in lines[1:] if not line.startswith("note: ")]
        return "\n".join(body)
    return text.strip()


# ----------------------------------------------------------------------------------------------------------
# Measurements


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Timing:
    latencies_ns: list[int] = field(default_factory=list)

    def p(self, q: float) -> float:
        return percentile(self.latencies_ns, q) / 1e6


@dataclass
class BaselineResult:
    name: str
    queries: int
    prep_s: float
    timing: Timing
    panicbot_same: Timing
    header_correct: int
    header_total: int


@dataclass
class SizeResult:
    size: int
    synthetic: int
    records_bytes: float
    records_exact: bool
    build_s: float
    index_current: int | None
    index_peak: int | None
    index_rss: int
    queries: int
    warmup: int
    panicbot: dict[str, Timing]
    panicbot_all: Timing
    header_correct: int
    header_total: int
    header_auto: int
    noloc_correct: int
    noloc_total: int
    negative_known: int
    negative_auto: int
    re2_compiles: int
    baselines: list[BaselineResult] = field(default_factory=list)

    @property
    def index_bytes(self) -> float:
        """Index memory per record: tracemalloc's retained delta, else the RSS delta."""
        value = self.index_current if self.index_current is not None else self.index_rss
        return value / self.size


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_index_memory(records: list[Record]) -> tuple[int, int]:
    """tracemalloc (current, peak) delta of building Matcher(records); the matcher is thrown away."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    matcher = Matcher(records)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del matcher
    gc.collect()
    return current - before, peak - before


def same_site(got: Record, want: Record, line: int | None) -> bool:
    """Top-1 is right when it is the record, or an indistinguishable twin (same pattern and file, at least
    as close to the pasted line)."""
    if got.id == want.id:
        return True
    if got.messagePattern != want.messagePattern or got.filePath != want.filePath or line is None:
        return False
    return abs((got.lineNumber or 0) - line) <= abs((want.lineNumber or 0) - line)


def run_panicbot(
    matcher: Matcher, queries: Sequence[Query], warmups: Sequence[Query]
) -> list[tuple[int, Any]]:
    for query in warmups:
        matcher.lookup(query.text)
    gc.collect()
    out: list[tuple[int, Any]] = []
    clock = time.perf_counter_ns
    lookup = matcher.lookup
    for query in queries:
        start = clock()
        result = lookup(query.text)
        out.append((clock() - start, result))
    return out


def timed_baseline(
    texts: Sequence[str], budget_s: float, minimum: int, top: Callable[[str], int | None]
) -> tuple[list[int], list[int | None]]:
    """A baseline's `top(text)` per query, timed (message extraction included), until the budget is spent
    and at least `minimum` queries are done: (latencies in ns, top record per query)."""
    latencies: list[int] = []
    tops: list[int | None] = []
    clock = time.perf_counter_ns
    gc.collect()
    deadline = time.perf_counter() + budget_s
    for text in texts:
        if len(latencies) >= minimum and time.perf_counter() > deadline:
            break
        t0 = clock()
        found = top(text)
        latencies.append(clock() - t0)
        tops.append(found)
    return latencies, tops


def run_regex_baseline(
    records: Sequence[Record], texts: Sequence[str], budget_s: float, minimum: int
) -> tuple[float, list[int], list[int | None]]:
    """Compile every messagePattern (re.DOTALL), then per query fullmatch all of them and collect the hits."""
    start = time.perf_counter()
    fullmatchers = []
    owners = []
    for index, record in enumerate(records):
        pattern = record.messagePattern or re.escape(record.errorMessage)
        try:
            fullmatchers.append(re.compile(pattern, re.DOTALL).fullmatch)
        except re.error:
            continue
        owners.append(index)
    prep = time.perf_counter() - start

    def top(text: str) -> int | None:
        message = baseline_message(text)
        hits = [i for i, fullmatch in enumerate(fullmatchers) if fullmatch(message)]
        return owners[hits[0]] if hits else None

    return (prep, *timed_baseline(texts, budget_s, minimum, top))


def run_re2_set_baseline(
    records: Sequence[Record], texts: Sequence[str], budget_s: float, minimum: int
) -> tuple[float, list[int], list[int | None]]:
    """Every messagePattern in RE2 Sets (full match, `.` matches newlines; as many Sets of RE2_SET_CHUNK
    patterns as needed, each compiled once), then per query one Match per Set and the first hit."""
    start = time.perf_counter()
    options = re2.Options()
    options.dot_nl = True
    options.log_errors = False
    options.max_mem = 256 << 20
    sets: list[tuple[Any, list[int]]] = []
    current: Any = None
    owners: list[int] = []
    for index, record in enumerate(records):
        if current is None:
            current, owners = re2.Set.FullMatchSet(options), []
        try:
            current.Add(record.messagePattern or re.escape(record.errorMessage))
        except re2.error:
            continue
        owners.append(index)
        if len(owners) == RE2_SET_CHUNK:
            current.Compile()
            sets.append((current, owners))
            current = None
    if current is not None and owners:
        current.Compile()
        sets.append((current, owners))
    prep = time.perf_counter() - start

    def top(text: str) -> int | None:
        message = baseline_message(text).encode()
        hits = [owners[i] for compiled, owners in sets for i in compiled.Match(message) or ()]
        return min(hits) if hits else None

    return (prep, *timed_baseline(texts, budget_s, minimum, top))


def run_hyperscan_baseline(
    records: Sequence[Record], texts: Sequence[str], budget_s: float, minimum: int
) -> tuple[float, list[int], list[int | None]]:
    """Every messagePattern in one Hyperscan block-mode database (anchored at both ends for a full match,
    `.` matching newlines, one report per pattern), compiled once; per query one scan and the first hit.
    Hyperscan treats `(.+?)` as `(.+)` and reports matches, not groups: the strongest "which patterns
    match" engine there is, and nothing more."""
    start = time.perf_counter()
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_DOTALL | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
    expressions = [f"^(?:{r.messagePattern or re.escape(r.errorMessage)})$".encode() for r in records]
    owners = list(range(len(records)))
    try:
        database.compile(expressions=expressions, ids=owners, flags=[flags] * len(expressions))
    except hyperscan.error:  # what Hyperscan cannot compile (lookarounds, backreferences) is left out
        kept = []
        for index, expression in zip(owners, expressions, strict=True):
            try:
                hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK).compile(
                    expressions=[expression], flags=[flags]
                )
            except hyperscan.error:
                continue
            kept.append(index)
        owners = kept
        expressions = [expressions[index] for index in kept]
        ids = list(range(len(kept)))
        database.compile(expressions=expressions, ids=ids, flags=[flags] * len(expressions))
    prep = time.perf_counter() - start

    def top(text: str) -> int | None:
        hits: list[int] = []

        def found(pattern_id: int, _start: int, _end: int, _flags: int, _context: object) -> None:
            hits.append(owners[pattern_id])

        database.scan(baseline_message(text).encode(), match_event_handler=found)
        return min(hits) if hits else None

    return (prep, *timed_baseline(texts, budget_s, minimum, top))


def run_rapidfuzz_baseline(
    records: Sequence[Record], texts: Sequence[str], budget_s: float, minimum: int
) -> tuple[float, list[int], list[int | None]]:
    """rapidfuzz.process.extractOne(message, all_messages) with its defaults (WRatio, no processor)."""
    start = time.perf_counter()
    messages = [record.errorMessage for record in records]
    prep = time.perf_counter() - start

    def top(text: str) -> int | None:
        found = process.extractOne(baseline_message(text), messages)
        return found[2] if found else None

    return (prep, *timed_baseline(texts, budget_s, minimum, top))


def _profile_tables(profiler: cProfile.Profile, size: int, what: str, per: int, unit: str) -> list[Any]:
    """A heading and two tables: all functions by own time, and bot/ functions by cumulative time."""
    top = 20
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total: float = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (filename, lineno, name), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        short = _short_name(filename)
        label = f"{short}:{lineno} {name}" if short else name
        rows.append((label, short.startswith("bot/"), ncalls, tottime, cumtime))
    heading = (
        f"\n[bold]cProfile of {what} at {size:,} records[/bold]: profiled total {total:.2f} s "
        f"({total / per * 1e3:,.3f} ms per {unit} under the profiler)"
    )
    by_self = Table(title=f"{size:,} records, {what}: functions by own time (tottime), share of the total")
    for column in ("function", "calls", f"calls/{unit}", "tottime s", "share", "cumtime s", "cum share"):
        by_self.add_column(column, justify="left" if column == "function" else "right")
    for label, _, ncalls, tottime, cumtime in sorted(rows, key=lambda r: -r[3])[:top]:
        by_self.add_row(
            label,
            f"{ncalls:,}",
            f"{ncalls / per:,.1f}",
            f"{tottime:.3f}",
            f"{tottime / total:.1%}",
            f"{cumtime:.3f}",
            f"{cumtime / total:.1%}",
        )
    by_cum = Table(title=f"{size:,} records, {what}: bot/ functions by cumulative time")
    for column in ("function", "calls", f"calls/{unit}", "cumtime s", "cum share", "tottime s", "share"):
        by_cum.add_column(column, justify="left" if column == "function" else "right")
    for label, _, ncalls, tottime, cumtime in sorted((r for r in rows if r[1]), key=lambda r: -r[4])[:top]:
        by_cum.add_row(
            label,
            f"{ncalls:,}",
            f"{ncalls / per:,.1f}",
            f"{cumtime:.3f}",
            f"{cumtime / total:.1%}",
            f"{tottime:.3f}",
            f"{tottime / total:.1%}",
        )
    return [heading, by_self, by_cum]


def profile_build_index(records: list[Record], size: int) -> list[Any]:
    """cProfile of Matcher(records): where the build time goes."""
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    matcher = Matcher(records)
    profiler.disable()
    del matcher
    gc.collect()
    return _profile_tables(profiler, size, "the index build", len(records), "record")


def _short_name(filename: str) -> str:
    if "/bot/" in filename:
        return "bot/" + filename.rsplit("/bot/", 1)[1]
    if "site-packages/" in filename:
        return filename.rsplit("site-packages/", 1)[1]
    if filename == "~":
        return ""
    return Path(filename).name


def profile_lookups(matcher: Matcher, queries: Sequence[Query], size: int) -> list[Any]:
    """cProfile of lookups at one size (the measured query mix, in the measured order)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        matcher.lookup(query.text)
    profiler.disable()
    return _profile_tables(profiler, size, f"{len(queries)} lookups", len(queries), "lookup")


# ----------------------------------------------------------------------------------------------------------
# Driver


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


def code_version() -> str:
    """The commit measured, and whether bot/ differs from it (read-only git calls)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "bot"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    return f"{head[:90]}{'; bot/ has uncommitted changes' if dirty else ''}"


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.strip().replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from exc
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError("sizes must be positive integers")
    return sizes


def baseline_cap(size: int, queries: int, override: int | None) -> int:
    if override is not None:
        return min(queries, override)
    # Every baseline query scans the whole catalog: fewer queries at large sizes (2000, 2000, 200, 50).
    return max(50, min(queries, int(2e7 // size)))


def load_real_records() -> tuple[list[Record], int]:
    """The real catalog's records and the bytes they hold (tracemalloc, the Catalog wrapper dropped)."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    catalog = load_catalog([DATA_FILE])
    records = catalog.records
    problems = len(catalog.errors)
    del catalog
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    if problems:
        console.print(f"[yellow]note:[/yellow] {problems} catalog lines were skipped by load_catalog")
    return records, held


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="catalog sizes")
    parser.add_argument("--queries", type=int, default=2000, help="timed lookups per size (default 2000)")
    parser.add_argument(
        "--queries-1m", type=int, default=300, help="timed lookups at sizes >= 1M (default 300)"
    )
    parser.add_argument("--warmup", type=int, default=300, help="warm-up lookups before timing (default 300)")
    parser.add_argument(
        "--warmup-1m", type=int, default=30, help="warm-up lookups at sizes >= 1M (default 30)"
    )
    parser.add_argument("--baseline-queries", type=int, default=None, help="cap on baseline queries per size")
    parser.add_argument(
        "--baseline-budget",
        type=float,
        default=30.0,
        help="seconds per baseline and size (at least 20 queries)",
    )
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--trace-max",
        type=int,
        default=TARGET_MAX_SIZE,
        help="largest size whose index memory is measured with tracemalloc (slow: ~4 min at 1M); above, RSS",
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 1199 and 10k, few queries")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="auto",
        default="auto",
        help="cProfile lookups: 'auto' (default: sizes failing a target), 'off', or a comma list of sizes",
    )
    parser.add_argument("--profile-queries", type=int, default=300, help="lookups profiled (at 1M: 40)")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--shape",
        choices=SHAPES,
        default="plain",
        help="synthetic catalog: 'plain' (one record per message), 'releases' (each message --releases x "
        "--files times), 'escaped' (patterns written with Python's re.escape, every record)",
    )
    parser.add_argument("--releases", type=int, default=10, help="releases per message with --shape releases")
    parser.add_argument("--files", type=int, default=8, help="files per message with --shape releases")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = [REAL_SIZE, 10_000]
        args.queries, args.warmup = 300, 100
        args.baseline_queries = args.baseline_queries or 100
        args.profile_queries = 100

    if not DATA_FILE.is_file():
        console.print(
            f"[red]error:[/red] the Burn catalog is missing: expected {DATA_FILE}\n"
            "(it is committed as tests/fixtures/burn-panics.jsonl)"
        )
        return 2

    run_start = time.perf_counter()
    cpu_start = time.process_time()
    console.print(f"code: {code_version()}; load average at start {_load()}")
    console.print(
        f"[bold]panicbot lookup benchmark[/bold]  python {sys.version.split()[0]}, sizes "
        f"{', '.join(f'{s:,}' for s in args.sizes)}{' (quick)' if args.quick else ''}; shape {args.shape}"
        + (f" ({args.releases} releases x {args.files} files a message)" if args.shape == "releases" else "")
    )

    # -- catalogs and queries: all generated before any timing -----------------------------------------
    real_records, real_bytes = load_real_records()
    if not real_records:
        console.print(f"[red]error:[/red] no record could be read from {DATA_FILE}")
        return 2
    real_n = len(real_records)
    bases = [r.model_dump() for r in real_records]
    if args.shape == "escaped":  # the real records' patterns too, the same literals escaped by re.escape
        real_records = [reescaped(record) for record in real_records]
    agree = sum(pattern_from_message(b["errorMessage"]) == b["messagePattern"] for b in bases)
    console.print(
        f"real catalog: {real_n:,} records from {DATA_FILE} "
        f"({real_bytes / real_n:,.0f} B per Record); the derived messagePattern equals the data set's for "
        f"{agree}/{real_n}"
    )

    synth_needed = max(0, max(args.sizes) - real_n)
    traced_sizes = [s - real_n for s in args.sizes if real_n < s <= args.trace_max]
    trace_until = max(traced_sizes, default=0)
    if synth_needed > trace_until:  # a bigger size gets a per-record estimate from a traced prefix
        trace_until = max(trace_until, min(synth_needed, 100_000))
    synth_bytes: dict[int, int] = {}
    synthetic: list[Record] = []
    if synth_needed:
        start = time.perf_counter()
        gc.collect()
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        checkpoints = set(traced_sizes) | {trace_until}
        copies = (args.releases, args.files) if args.shape == "releases" else (1, 1)
        for record in generate_synthetic(
            bases,
            synth_needed,
            args.seed,
            releases=copies[0],
            files=copies[1],
            escaped=args.shape == "escaped",
        ):
            synthetic.append(record)
            if tracemalloc.is_tracing() and len(synthetic) in checkpoints:
                synth_bytes[len(synthetic)] = tracemalloc.get_traced_memory()[0] - before
                if len(synthetic) == trace_until:
                    tracemalloc.stop()
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        ids = {r.id for r in real_records}
        clashes = sum(r.id in ids for r in synthetic)
        ids.update(r.id for r in synthetic)
        console.print(
            f"synthetic records: {synth_needed:,} built with Record.model_validate (validated; "
            f"model_construct not needed) in {time.perf_counter() - start:.1f} s, the first "
            f"{trace_until:,} under tracemalloc; "
            f"~{RECORDS_PER_FILE} per file, {FILES_PER_CRATE} files per crate; "
            f"{len(ids):,} unique ids{f', {clashes} CLASHES' if clashes else ''}"
        )
        for sample in synthetic[:3]:
            console.print(f"  e.g. {sample.filePath}:{sample.lineNumber}  {sample.errorMessage!r}")

    def catalog_for(size: int) -> tuple[list[Record], float, bool]:
        """Records of a size, bytes per Record, and whether that figure was measured (else extrapolated)."""
        if size <= real_n:
            return real_records[:size], real_bytes / real_n, True
        extra = size - real_n
        if extra in synth_bytes:
            return real_records + synthetic[:extra], (real_bytes + synth_bytes[extra]) / size, True
        per_synth = synth_bytes[trace_until] / trace_until
        return real_records + synthetic[:extra], (real_bytes + per_synth * extra) / size, False

    plans: dict[int, tuple[list[Query], list[Query]]] = {}
    for size in args.sizes:
        records = catalog_for(size)[0]
        big = size >= 1_000_000
        count = min(args.queries, args.queries_1m) if big else args.queries
        warm = min(args.warmup, args.warmup_1m) if big else args.warmup
        plans[size] = (make_queries(records, count, args.seed + size), make_queries(records, warm, ~size))
    console.print(f"queries generated; {time.perf_counter() - run_start:.0f} s so far\n")

    # -- measurements ----------------------------------------------------------------------------------
    results: list[SizeResult] = []
    profiles: list[Any] = []
    for size in args.sizes:
        records, record_bytes, record_exact = catalog_for(size)
        queries, warmups = plans[size]
        bot_patterns.compile_pattern.cache_clear()  # each size starts cold; the warm-up fills the cache
        current = peak = None
        if size <= args.trace_max:
            console.print(f"[{size:,}] tracemalloc of Matcher(records) ...")
            current, peak = measure_index_memory(records)
        # Small builds take tens of ms and are noisy: best of 3 up to SMALL_BUILD, one build above.
        build_s = math.inf
        matcher = None
        for _ in range(3 if size <= SMALL_BUILD else 1):
            matcher = None
            gc.collect()
            rss_before = rss_bytes()
            start = time.perf_counter()
            matcher = Matcher(records)
            build_s = min(build_s, time.perf_counter() - start)
            gc.collect()
            index_rss = rss_bytes() - rss_before
        assert matcher is not None
        console.print(
            f"[{size:,}] index built in {build_s:.2f} s; {len(warmups)} warm-up + {len(queries)} lookups"
        )
        info_before = bot_patterns.compile_pattern.cache_info()
        timed = run_panicbot(matcher, queries, warmups)
        info_after = bot_patterns.compile_pattern.cache_info()
        # Plain patterns are matched without RE2; only records with a regex of their own compile one.
        re2_compiles = info_after.misses - info_before.misses

        pattern_ids: dict[str, set[int]] = defaultdict(set)
        for i, r in enumerate(records):
            pattern_ids[r.messagePattern or r.errorMessage].add(i)
        result = SizeResult(
            size=size,
            synthetic=max(0, size - real_n),
            records_bytes=record_bytes,
            records_exact=record_exact,
            build_s=build_s,
            index_current=current,
            index_peak=peak,
            index_rss=index_rss,
            queries=len(queries),
            warmup=len(warmups),
            panicbot=defaultdict(Timing),
            panicbot_all=Timing(),
            header_correct=0,
            header_total=0,
            header_auto=0,
            noloc_correct=0,
            noloc_total=0,
            negative_known=0,
            negative_auto=0,
            re2_compiles=re2_compiles,
        )
        for query, (ns, found) in zip(queries, timed, strict=True):
            result.panicbot[query.category].latencies_ns.append(ns)
            result.panicbot_all.latencies_ns.append(ns)
            top = found.matches[0] if found.matches else None
            if query.category == "header":
                want = records[query.record_index]
                result.header_total += 1
                result.header_correct += top is not None and same_site(top.record, want, query.line)
                result.header_auto += bool(found.auto_reply)
            elif query.category == "no-location":
                want = records[query.record_index]
                result.noloc_total += 1
                ok = (
                    found.best is not None
                    and found.best.record_index in pattern_ids[want.messagePattern or ""]
                )
                result.noloc_correct += ok
            elif query.category == "negative":
                result.negative_known += found.best is not None
                result.negative_auto += bool(found.auto_reply)
        del timed

        if not args.no_baselines:
            cap = baseline_cap(size, len(queries), args.baseline_queries)
            subset = queries[:cap]
            texts = [q.text for q in subset]
            for name, runner in (
                ("re.fullmatch loop", run_regex_baseline),
                ("RE2 Set (full match)", run_re2_set_baseline),
                ("Hyperscan (full match)", run_hyperscan_baseline),
                ("rapidfuzz extractOne", run_rapidfuzz_baseline),
            ):
                console.print(
                    f"[{size:,}] baseline {name} (up to {cap} queries, {args.baseline_budget:.0f} s) ..."
                )
                prep, latencies, tops = runner(records, texts, args.baseline_budget, min(20, cap))
                ok = total = 0
                for query, top_index in zip(subset, tops, strict=False):
                    if query.category == "header":
                        total += 1
                        want = records[query.record_index]
                        ok += top_index is not None and top_index in pattern_ids[want.messagePattern or ""]
                same = Timing(result.panicbot_all.latencies_ns[: len(latencies)])
                result.baselines.append(
                    BaselineResult(name, len(latencies), prep, Timing(latencies), same, ok, total)
                )
                del latencies, tops
                gc.collect()

        results.append(result)
        failed = failed_targets(result)
        largest_judged = max((s for s in args.sizes if s <= TARGET_MAX_SIZE), default=0)
        if args.profile == "auto":
            profile_lookup = "p99" in failed
            # A slow build shows best at the largest judged size; profiling smaller builds adds nothing.
            profile_build = "build" in failed and size == largest_judged
        elif args.profile == "off":
            profile_lookup = profile_build = False
        else:
            profile_lookup = profile_build = size in parse_sizes(args.profile)
        if profile_lookup:
            n = min(len(queries), args.profile_queries if size < 1_000_000 else min(args.profile_queries, 40))
            console.print(f"[{size:,}] cProfile of {n} lookups ...")
            profiles.extend(profile_lookups(matcher, queries[:n], size))
        if profile_build:
            console.print(f"[{size:,}] cProfile of Matcher(records) ...")
            profiles.extend(profile_build_index(records, size))
        del matcher, records
        gc.collect()

    console.print()
    print_report(results, args)
    for item in profiles:
        console.print(item)
    wall = time.perf_counter() - run_start
    cpu = time.process_time() - cpu_start
    console.print(
        f"\nrun took {wall:.0f} s in all ({cpu:.0f} s of CPU, {cpu / wall:.0%} of one core: below ~95% the "
        f"machine was busy with other work; load average at end {_load()}); bot/ imported from "
        f"{Path(bot_patterns.__file__).parent}; nothing was written to disk"
    )
    return 0


def failed_targets(r: SizeResult) -> list[str]:
    failed = []
    if r.size == TARGET_P99_SIZE and r.panicbot_all.p(99) > TARGET_P99_MS:
        failed.append("p99")
    if r.size <= TARGET_MAX_SIZE and r.build_s / r.size * 1e5 > TARGET_BUILD_S_PER_100K:
        failed.append("build")
    if r.size <= TARGET_MAX_SIZE and r.index_bytes > TARGET_INDEX_BYTES:
        failed.append("memory")
    return failed


def _ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _verdict(ok: bool) -> str:
    return "[green]PASS[/green]" if ok else "[red]FAIL[/red]"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.1%})" if whole else "-"


def print_report(results: list[SizeResult], args: argparse.Namespace) -> None:
    index_table = Table(title="panicbot Matcher: catalog and index (bytes per record; build time)")
    for column in (
        "records",
        "synthetic",
        "Record objects B/rec",
        "build s (best of 3 up to 10k)",
        "build s/100k",
        "index B/rec (tracemalloc retained)",
        "index peak B/rec (tracemalloc)",
        "index B/rec (RSS delta)",
    ):
        index_table.add_column(column, justify="right")
    for r in results:
        index_table.add_row(
            f"{r.size:,}",
            f"{r.synthetic:,}",
            f"{r.records_bytes:,.0f}{'' if r.records_exact else ' (est.)'}",
            f"{r.build_s:.2f}",
            f"{r.build_s / r.size * 1e5:.2f}",
            "-" if r.index_current is None else f"{r.index_current / r.size:,.0f}",
            "-" if r.index_peak is None else f"{r.index_peak / r.size:,.0f}",
            f"{r.index_rss / r.size:,.0f}",
        )
    console.print(index_table)

    lookup_table = Table(title="panicbot Matcher.lookup: latency (ms) and answers")
    for column in (
        "records",
        "timed (+warm-up)",
        "p50",
        "p99",
        "max",
        "top-1 header paste",
        "auto-reply header",
        "top-1 no-location (same message)",
        "negatives answered / auto-replied",
        "RE2 compiles (timed lookups)",
    ):
        lookup_table.add_column(column, justify="right")
    for r in results:
        neg = len(r.panicbot.get("negative", Timing()).latencies_ns)
        lookup_table.add_row(
            f"{r.size:,}",
            f"{r.queries:,} (+{r.warmup})",
            _ms(r.panicbot_all.p(50)),
            _ms(r.panicbot_all.p(99)),
            _ms(r.panicbot_all.p(100)),
            _share(r.header_correct, r.header_total),
            _share(r.header_auto, r.header_total),
            _share(r.noloc_correct, r.noloc_total),
            f"{r.negative_known} / {r.negative_auto} of {neg}",
            f"{r.re2_compiles:,}",
        )
    console.print(lookup_table)

    cat_table = Table(title="panicbot lookup latency per query category: n / p50 / p99 (ms)")
    cat_table.add_column("records", justify="right")
    for c in CATEGORIES:
        cat_table.add_column(c, justify="right")
    for r in results:
        cells = []
        for c in CATEGORIES:
            t = r.panicbot.get(c, Timing())
            cells.append(f"{len(t.latencies_ns)} / {_ms(t.p(50))} / {_ms(t.p(99))}")
        cat_table.add_row(f"{r.size:,}", *cells)
    console.print(cat_table)

    if any(r.baselines for r in results):
        base_table = Table(
            title="baselines on the same queries (ms); ratio = panicbot / baseline on the same query subset"
        )
        for column in (
            "records",
            "baseline",
            "queries",
            "prep s",
            "p50",
            "p99",
            "panicbot p50",
            "panicbot p99",
            "ratio p50",
            "ratio p99",
            "top-1 header (same message)",
        ):
            base_table.add_column(column, justify="right")
        for r in results:
            for b in r.baselines:
                base_table.add_row(
                    f"{r.size:,}",
                    b.name,
                    f"{b.queries:,}",
                    f"{b.prep_s:.2f}",
                    _ms(b.timing.p(50)),
                    _ms(b.timing.p(99)),
                    _ms(b.panicbot_same.p(50)),
                    _ms(b.panicbot_same.p(99)),
                    f"{b.panicbot_same.p(50) / b.timing.p(50):.3g}",
                    f"{b.panicbot_same.p(99) / b.timing.p(99):.3g}",
                    _share(b.header_correct, b.header_total),
                )
        console.print(base_table)

    target_table = Table(title="targets (checked up to 100k records; larger sizes are reported, not judged)")
    for column in (
        "records",
        f"p99 <= {TARGET_P99_MS:g} ms at {TARGET_P99_SIZE:,}",
        f"build <= {TARGET_BUILD_S_PER_100K:g} s per 100k",
        f"index <= {TARGET_INDEX_BYTES // 1024} KB per record",
    ):
        target_table.add_column(column, justify="right")
    for r in results:
        failed = failed_targets(r)
        judged = r.size <= TARGET_MAX_SIZE
        p99 = r.panicbot_all.p(99)
        per100k = r.build_s / r.size * 1e5
        source = "" if r.index_current is not None else " (RSS)"
        cells = []
        for value, key, applies in (
            (f"{_ms(p99)} ms", "p99", r.size == TARGET_P99_SIZE),
            (f"{per100k:.2f} s", "build", judged),
            (f"{r.index_bytes:,.0f} B{source}", "memory", judged),
        ):
            cells.append(f"{value} {_verdict(key not in failed)}" if applies else f"{value} (reported)")
        target_table.add_row(f"{r.size:,}", *cells)
    console.print(target_table)
    console.print(
        "Notes: latency = time.perf_counter_ns around Matcher.lookup(text) after the warm-up (GC on); plain "
        "patterns (escaped literals and `(.+?)`) are matched with str.find; RE2 programs are compiled only "
        "for other regexes (bot.patterns.compile_pattern, cleared before each size; the count is over the "
        "timed lookups). Index memory = tracemalloc delta of building Matcher(records) once the records "
        "exist (retained = current, what the target uses); above --trace-max it is the RSS delta instead "
        "(an over-estimate: freed temporaries stay in pymalloc arenas). Record objects: tracemalloc of "
        "creating them ('est.' = extrapolated from the traced first 100k synthetic records). Queries: "
        f"{', '.join(f'{int(MIX[c] * 100)}% {c}' for c in CATEGORIES)}, drawn from the catalog measured. "
        "Top-1 header = the record, or a same-pattern twin in the same file at least as close to the pasted "
        "line. Baselines: re.fullmatch of every compiled messagePattern (re.DOTALL; all hits collected; "
        "prep = compiling) and rapidfuzz extractOne(message, all_messages) (default WRatio); both take the "
        "message by simple extraction (lines after the header, else the whole text) and run on the first N "
        "queries of the same shuffled list (N capped at 2e7/records, at least 50, and by a "
        f"{args.baseline_budget:g} s budget, at least 20 queries); their top-1 counts any record with the "
        "pasted message's pattern."
    )


if __name__ == "__main__":
    raise SystemExit(main())
