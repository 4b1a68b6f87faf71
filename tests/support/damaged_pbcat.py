"""Damaged and crafted `.pbcat` files, made from a good one: the reader's tests, the watcher's test and the
fuzz run (`fuzz_prebuilt`, also run at scale by bench/pbcat_fuzz.py) share them.

"Crafted" means the header's sha256 and section offsets are made to fit again after the change, so the
file passes the checks a random damage fails, and what is tested is the reader past them."""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import itertools
import json
import pickle
import random
import sys
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.families import FamilyTable, default_families
from bot.lookup import PanicLookup
from bot.prebuilt import MAGIC, PrebuiltError, prebuilt_bytes, read_prebuilt
from bot.records import load_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BURN = FIXTURES / "burn-panics.jsonl"
SEEDS = FIXTURES / "seeds.jsonl"
SMALL_RECORDS = 24
REPO = "tracel-ai/burn"
RELEASES = ("v0.18.0", "v0.19.0")


@dataclass
class Parts:
    """A prebuilt file cut into its parts."""

    header: dict[str, Any]
    index: bytes
    blob: bytes
    suggest: bytes

    @classmethod
    def of(cls, data: bytes) -> Parts:
        end = data.index(b"\n", len(MAGIC)) + 1
        header = json.loads(data[len(MAGIC) : end])
        body = data[end:]
        index_start, index_length = header["index"]
        blob_start, blob_length = header["records_blob"]
        suggest_start, suggest_length = header["suggest"]
        return cls(
            header,
            body[index_start : index_start + index_length],
            body[blob_start : blob_start + blob_length],
            body[suggest_start : suggest_start + suggest_length],
        )

    def joined(self, *, fit: bool = True) -> bytes:
        """The file; with `fit`, its header made to fit the parts (offsets, lengths, sha256s)."""
        header = dict(self.header)
        if fit:
            header["index"] = [0, len(self.index)]
            header["records_blob"] = [len(self.index), len(self.blob)]
            header["suggest"] = [len(self.index) + len(self.blob), len(self.suggest)]
            header["index_sha256"] = hashlib.sha256(self.index).hexdigest()
            header["suggest_sha256"] = hashlib.sha256(self.suggest).hexdigest()
        head = MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n"
        return head + self.index + self.blob + self.suggest


def with_header(data: bytes, **changes: Any) -> bytes:
    """The file with header fields changed, nothing else made to fit."""
    parts = Parts.of(data)
    parts.header.update(changes)
    return parts.joined(fit=False)


def crafted_index(data: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """The file with its index unpickled, edited, pickled again, and the header made to fit."""
    parts = Parts.of(data)
    index = pickle.loads(parts.index)
    edit(index)
    parts.index = pickle.dumps(index, protocol=5)
    return parts.joined()


def crafted_index_bytes(data: bytes, index: bytes) -> bytes:
    """The file with these index bytes (a hand-made pickle), the header made to fit."""
    parts = Parts.of(data)
    parts.index = index
    return parts.joined()


# ---- a small catalog with releases, sites and function tables ------------------------------------------


def small_catalog_files(folder: Path, records: int = SMALL_RECORDS) -> Path:
    """`folder/small.jsonl`: the three seed records and the first `records` of the Burn fixture, with
    side tables giving each Burn record a site in two releases. Returns the catalog file."""
    lines = [line for line in BURN.read_text(encoding="utf-8").splitlines() if line.strip()][:records]
    seeds = [line for line in SEEDS.read_text(encoding="utf-8").splitlines() if line.strip()]
    catalog = folder / "small.jsonl"
    catalog.write_text("\n".join(seeds + lines) + "\n", encoding="utf-8")
    crates = {"burn": "0.18.0", "burn-autodiff": "0.18.0", "burn-tensor": "0.18.0", "burn-core": "0.18.0"}
    release_rows = [
        {"repo": REPO, "ref": ref, "sha": str(number) * 40, "date": f"202{number}-01-01T00:00:00Z",
         "crates": {name: version.replace("18", str(17 + number)) for name, version in crates.items()}}
        for number, ref in enumerate(RELEASES, start=1)
    ]  # fmt: skip
    site_rows = []
    for line in lines:
        record = json.loads(line)["record"]
        if not record.get("filePath") or not record.get("lineNumber"):
            continue
        crate = record["filePath"].split("/")[1] if record["filePath"].startswith("crates/") else "burn"
        line_number = record["lineNumber"]
        releases = [
            {
                "crate": crate,
                "refs": [ref],
                "sites": [{"line": at, "column": 9, "kind": "panic", "function": name}],
            }
            for ref, at, name in (
                (RELEASES[0], line_number + 3, "older"),
                (RELEASES[1], line_number, "newer"),
            )
        ]
        site_rows.append(
            {"id": record["id"], "repo": REPO, "filePath": record["filePath"], "releases": releases}
        )
    (folder / "small.releases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in release_rows))
    (folder / "small.sites.jsonl").write_text("".join(json.dumps(row) + "\n" for row in site_rows))
    return catalog


def small_prebuilt_bytes(folder: Path, records: int = SMALL_RECORDS) -> tuple[bytes, list[str]]:
    """A small prebuilt catalog (`small_catalog_files`) and pastes that reach its records, sites and
    releases: header pastes at each record's line naming a release, its bare message, typed words."""
    catalog = load_catalog([small_catalog_files(folder, records)])
    assert not catalog.errors, catalog.errors
    assert catalog.releases, "the side tables were not read"
    pastes = []
    # Burn records first (pastes[0] has a site in a release), then a seed record (analysed, no site).
    for entry in [*catalog.entries[3 :: max(1, (len(catalog.entries) - 3) // 2)], catalog.entries[1]]:
        record = entry.record
        where = f"{record.filePath or 'src/lib.rs'}:{record.lineNumber or 1}:9"
        pastes.append(
            f"thread 'main' panicked at /root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
            f"burn-autodiff-0.19.0/{where.removeprefix('crates/burn-autodiff/')}:\n{record.errorMessage}\n"
        )
        pastes.append(f"thread 'main' panicked at {where}:\n{record.errorMessage}\n")
    pastes.append("avg pool 2d backward")
    return prebuilt_bytes(PanicLookup(catalog)), pastes


# ---- the damaged kinds a test names ---------------------------------------------------------------------


def _pickle_with_huge_frame(index: bytes) -> bytes:
    """The index pickle with its first frame's length made 2**50 (protocol 5: PROTO 5, then FRAME)."""
    assert index[:3] == b"\x80\x05\x95"
    return index[:3] + (2**50).to_bytes(8, "little") + index[11:]


HUGE_BYTES = b"\x80\x05\x8e" + (2**63 - 1).to_bytes(8, "little") + b"xx."  # BINBYTES8 of 2**63-1 bytes
HUGE_BYTEARRAY = b"\x80\x05\x96" + (2**50).to_bytes(8, "little") + b"xx."  # BYTEARRAY8 of 2**50 bytes
HUGE_LIST = b"\x80\x05(" + b"K\x01" * 100 + b"\x8e" + (2**44).to_bytes(8, "little") + b"l."


# The kinds a load cannot see (release table rows are kept as text, parsed when a lookup first needs them;
# records are read, their crc32 checked, when a lookup needs them): the lookup that meets them is refused.
# Every kind `damaged_kinds` makes, by name: the tests of the reader and of the commands take each one.
KIND_NAMES = [
    "records' text changed",
    "truncated",
    "empty",
    "random bytes",
    "index length 2**50",
    "blob length 2**63",
    "suggest offset past the end",
    "records 2**63",
    "negative length",
    "record offsets past the blob",
    "empty version table",
    "version code past the table",
    "posting past the records",
    "positions not a dict",
    "bad release table rows",
    "pickle frame of 2**50",
    "pickled bytes of 2**63",
    "pickled bytearray of 2**50",
    "pickled list of 2**44 bytes",
]

FOUND_AT_LOOKUP = frozenset({"bad release table rows", "records' text changed"})


def damaged_kinds(good: bytes) -> dict[str, bytes]:
    """name -> a damaged or crafted file, one of each kind the issue found (and a few more)."""
    parts = Parts.of(good)
    size = len(good)

    def set_(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
        def edit(index: dict[str, Any]) -> None:
            index[name] = value

        return edit

    def offsets_past_the_end(index: dict[str, Any]) -> None:
        offsets = index["record_offsets"]
        offsets[len(offsets) // 2] = 2**40

    def code_past_the_table(index: dict[str, Any]) -> None:
        index["version_codes"][0] = 7

    def posting_past_the_records(index: dict[str, Any]) -> None:
        index["matcher"]["_postings"][2][0] = 10**6

    def bad_site_rows(index: dict[str, Any]) -> None:
        # Every record's sites as a row kept as text (as the embedded table keeps them), not JSON.
        table = index["releases"]
        for record_id in list(table._sites):
            del table._sites[record_id]
            table._pending[record_id] = [("{not json", {})]

    def messages_changed() -> bytes:
        # Each record's message one letter off: still JSON, still a record, not the one that was built
        # (each record inflated, changed, compressed again; the index's offsets made to fit, its crc32s not).
        changed = Parts.of(good)
        index = pickle.loads(changed.index)
        offsets, dictionary = index["record_offsets"], index["record_dictionary"]
        key = b'"errorMessage":"'
        blob = bytearray()
        new_offsets = array(offsets.typecode, [0])
        for start, end in itertools.pairwise(offsets):
            text = bytearray(zlib.decompressobj(zdict=dictionary).decompress(changed.blob[start:end]))
            at = text.find(key)
            text[at + len(key)] = ord("~")
            stream = zlib.compressobj(zdict=dictionary)
            blob += stream.compress(bytes(text)) + stream.flush()
            new_offsets.append(len(blob))
        index["record_offsets"] = new_offsets
        changed.index = pickle.dumps(index, protocol=5)
        changed.blob = bytes(blob)
        return changed.joined()

    return {
        "records' text changed": messages_changed(),
        "truncated": good[: size // 2],
        "empty": b"",
        "random bytes": MAGIC + random.Random(7).randbytes(4096),
        "index length 2**50": with_header(good, index=[0, 2**50]),
        "blob length 2**63": with_header(good, records_blob=[len(parts.index), 2**63]),
        "suggest offset past the end": with_header(good, suggest=[size * 2, len(parts.suggest)]),
        "records 2**63": with_header(good, records=2**63),
        "negative length": with_header(good, index=[0, -5]),
        "record offsets past the blob": crafted_index(good, offsets_past_the_end),
        "empty version table": crafted_index(good, set_("version_names", [])),
        "version code past the table": crafted_index(good, code_past_the_table),
        "posting past the records": crafted_index(good, posting_past_the_records),
        "positions not a dict": crafted_index(good, set_("positions", [1, 2, 3])),
        "bad release table rows": crafted_index(good, bad_site_rows),
        "pickle frame of 2**50": crafted_index_bytes(good, _pickle_with_huge_frame(parts.index)),
        "pickled bytes of 2**63": crafted_index_bytes(good, HUGE_BYTES),
        "pickled bytearray of 2**50": crafted_index_bytes(good, HUGE_BYTEARRAY),
        "pickled list of 2**44 bytes": crafted_index_bytes(good, HUGE_LIST),
    }


# ---- the fuzz run -------------------------------------------------------------------------------------


# What CPython 3.11's bytearray destructor prints itself (PyErr_Print, to sys.stderr), now and then, when a
# crafted pickle's BYTEARRAY8 length is more than malloc gives (seen with plain `pickle.loads` of such bytes;
# most likely the new object freed on the failed allocation before its export count is set). The load still
# fails with MemoryError and the file is refused; stopping the line would take parsing every opcode first.
CPYTHON_BYTEARRAY_LINE = "SystemError: deallocated bytearray object has exported buffers"


@dataclass
class FuzzResult:
    runs: int = 0
    refused_at_load: int = 0
    refused_at_lookup: int = 0
    right_answers: int = 0
    other_answers: int = (
        0  # a clean answer that is not the good file's (a crafted value the code cannot tell)
    )
    failures: list[str] = field(default_factory=list)  # any other exception: the goal is none
    # Refusals (counted above) where CPython 3.11 also printed CPYTHON_BYTEARRAY_LINE itself (see there).
    cpython_printed: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    other_by_kind: Counter[str] = field(default_factory=Counter)  # the mutations of the other answers
    seconds: float = 0.0

    @property
    def refusals(self) -> int:
        return self.refused_at_load + self.refused_at_lookup

    def summary(self) -> str:
        return (
            f"{self.runs} runs in {self.seconds:.1f} s: {self.refusals} refusals ({self.refused_at_load} at "
            f"load, {self.refused_at_lookup} at a lookup), {self.right_answers} right answers, "
            f"{self.other_answers} other clean answers, {len(self.failures)} other outcomes (exceptions); "
            f"{self.cpython_printed} refusals where CPython printed its bytearray SystemError line"
        )


def answers(lookup: PanicLookup, pastes: list[str]) -> list[Any]:
    """What a user sees of a lookup: each paste's JSON answer and card, autocomplete's suggestions, and
    the card of a record named by its id (`panicbot card ID`)."""
    seen: list[Any] = []
    for paste in pastes:
        result = lookup.lookup(paste)
        seen.append(lookup.answer_json(result))
        seen.append(lookup.card(result))
    seen.append([record.id for record in lookup.suggest("pool", 5)])
    seen.append(lookup.card_for_record("5c5da46720dbbf10", 1.0))  # the deform seed record
    return seen


_BOUNDARIES = (0, 1, 2, 7, 255, 2**16 - 1, 2**31 - 1, 2**32 - 1, 2**40, 2**63 - 1)
_STRANGE: tuple[Any, ...] = (None, -1, 0, 1, 2**31, 2**63, 2**64, 1.5, "x", "", b"", (), [], {}, ("a",), [0])


def _strange(rng: random.Random) -> Any:
    """A value of a wrong kind or size: a fresh copy (the mutated index may be mutated again)."""
    return copy.copy(rng.choice(_STRANGE))


def _random_container(rng: random.Random, value: Any) -> Any:
    """A mutable container (a dict, a list, an array, or an object's field dict) reached from `value` by a
    random walk down its tables."""
    current = value
    chosen = None
    for _ in range(10):
        state = getattr(current, "__dict__", None)
        if isinstance(state, dict) and not isinstance(current, type):
            current = state
        if isinstance(current, dict | list | array):
            chosen = current
        if isinstance(current, dict):
            children = list(current.values())
        elif isinstance(current, list | tuple):
            children = list(current)
        else:
            children = []
        children = [child for child in children if not isinstance(child, str | bytes | int | float | None)]
        if not children or (chosen is not None and rng.random() < 0.3):
            break
        current = rng.choice(children)
    return chosen if chosen is not None else value


def _mutate_value(rng: random.Random, container: Any) -> None:
    if isinstance(container, array):
        if not container or rng.random() < 0.2:
            if rng.random() < 0.5 and container:
                del container[rng.randrange(len(container))]
            else:
                container.append(rng.choice(_BOUNDARIES[:3]))
            return
        position = rng.randrange(len(container))
        for candidate in (rng.choice(_BOUNDARIES), len(container), container[position] + 1, 0):
            try:
                container[position] = candidate
                return
            except OverflowError:
                return
        return
    if isinstance(container, list):
        choice = rng.random()
        if not container or choice < 0.15:
            container.append(_strange(rng))
        elif choice < 0.3:
            del container[rng.randrange(len(container))]
        elif choice < 0.4:
            container.clear()
        elif choice < 0.55:
            container.append(container[rng.randrange(len(container))])
        else:
            container[rng.randrange(len(container))] = _strange(rng)
        return
    if isinstance(container, dict):
        keys = list(container)
        choice = rng.random()
        if not keys or choice < 0.15:
            container[rng.choice(("x", 3, ("a", "b"), None))] = _strange(rng)
        elif choice < 0.35:
            del container[rng.choice(keys)]
        elif choice < 0.45 and len(keys) > 1:
            first, second = rng.sample(keys, 2)
            container[first], container[second] = container[second], container[first]
        else:
            container[rng.choice(keys)] = _strange(rng)


@functools.cache
def _counted_opcodes(index: bytes) -> list[int]:
    """Where a byte of the pickle is one of the opcodes followed by a length (maybe data: a guess)."""
    return [i for i, byte in enumerate(index[:-9]) if byte in b"\x95\x8e\x96\x8d\x8c\x8f\x94"]


def mutations(good: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of the good file: (kind, bytes)."""
    parts = Parts.of(good)
    kind = rng.choice(
        (
            "flip bytes",
            "truncate",
            "append",
            "header field",
            "header json",
            "pickle bytes",
            "pickle length",
            "index table",
            "index table",
            "index table",
            "records blob",
            "suggest section",
        )
    )
    data = bytearray(good)
    if kind == "flip bytes":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return kind, bytes(data)
    if kind == "truncate":
        return kind, bytes(data[: rng.randrange(len(data))])
    if kind == "append":
        return kind, bytes(data) + rng.randbytes(rng.randint(1, 64))
    if kind == "header field":
        name = rng.choice(("index", "records_blob", "suggest", "records", "format", "fingerprint"))
        value: Any
        if name in ("index", "records_blob", "suggest"):
            start, length = parts.header[name]
            pick = rng.choice((0, 1, -1, len(good), 2**31, 2**50, 2**63, 2**64, start + 1, length - 1))
            value = [pick, length] if rng.random() < 0.5 else [start, pick]
            value = rng.choice((value, [start], "x", None, [start, length, 0]))
        else:
            strange = tuple(item for item in _STRANGE if not isinstance(item, bytes))
            value = rng.choice((*strange, parts.header["records"] + 1, parts.header["records"] - 1))
        return kind, with_header(good, **{name: value})
    if kind == "header json":
        end = good.index(b"\n", len(MAGIC))
        position = rng.randrange(len(MAGIC), end)
        data[position] = rng.choice(b'{}[]":,0123456789 x\n')
        return kind, bytes(data)
    if kind == "pickle bytes":
        index = bytearray(parts.index)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(index))
            action = rng.random()
            if action < 0.5:
                index[position] = rng.randrange(256)
            elif action < 0.75:
                del index[position : position + rng.randint(1, 16)]
            else:
                index[position:position] = rng.randbytes(rng.randint(1, 16))
        return kind, crafted_index_bytes(good, bytes(index))
    if kind == "pickle length":
        # A counted opcode's length (frame, bytes, unicode, array payload) made huge or off by some.
        index = bytearray(parts.index)
        counted = _counted_opcodes(parts.index)
        position = rng.choice(counted) if counted else 2
        width = 8 if index[position] in b"\x95\x8e\x96\x8d" else (1 if index[position] == 0x8C else 4)
        value = rng.choice((2**50, 2**63 - 1, 2**64 - 1, 2**31, len(index), 0))
        index[position + 1 : position + 1 + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
        return kind, crafted_index_bytes(good, bytes(index))
    if kind == "index table":
        index = pickle.loads(parts.index)
        for _ in range(rng.randint(1, 3)):
            _mutate_value(rng, _random_container(rng, index))
        parts.index = pickle.dumps(index, protocol=5)
        return kind, parts.joined()
    if kind == "records blob":
        blob = bytearray(parts.blob)
        for _ in range(rng.randint(1, 4)):
            blob[rng.randrange(len(blob))] = rng.choice(b'{}[]":,0123456789 xn\\')
        parts.blob = bytes(blob)
        return kind, parts.joined()
    # The suggest section, crafted: its lists edited, or its pickle's bytes.
    messages, tags, analysed = pickle.loads(parts.suggest)
    target = rng.choice((messages, tags))
    _mutate_value(rng, target)
    if rng.random() < 0.3:
        analysed = analysed[:-1]
    parts.suggest = pickle.dumps((messages, tags, analysed), protocol=5)
    return kind, parts.joined()


def fuzz_prebuilt(
    folder: Path, runs: int, seed: int = 0, records: int = SMALL_RECORDS, dump: Path | None = None
) -> FuzzResult:
    """`runs` mutations of a small prebuilt catalog, each loaded and asked the pastes' lookups; the files
    of failed runs written to `dump` when given."""
    good, pastes = small_prebuilt_bytes(folder, records)
    path = folder / "fuzzed.pbcat"
    path.write_bytes(good)
    # The embedded families (never in a .pbcat: a lookup reads them on its first card) parsed once, not
    # once a run (45 ms each).
    families = default_families()
    first = read_prebuilt(path)
    first._families = families
    expected = answers(first, pastes)
    rng = random.Random(seed)
    result = FuzzResult()
    started = time.perf_counter()
    unraisable: list[str] = []
    before = sys.unraisablehook
    # An error CPython cannot raise (in a destructor) is printed, not raised: counted as a failure too.
    sys.unraisablehook = lambda what: unraisable.append(f"{what.exc_type.__name__}: {what.exc_value}")
    stderr = sys.stderr
    try:
        for run in range(runs):
            kind, data = mutations(good, rng)
            # What CPython prints itself (a destructor's error goes to sys.stderr) is an outcome too.
            sys.stderr = printed = io.StringIO()
            try:
                _fuzz_run(run, kind, data, path, pastes, expected, families, result)
            finally:
                sys.stderr = stderr
            if unraisable:
                result.failures.append(f"run {run} ({kind}) unraisable: {unraisable[0]}"[:300])
                unraisable.clear()
            said = printed.getvalue().strip()
            if said == CPYTHON_BYTEARRAY_LINE:
                result.cpython_printed += 1
            elif said:
                result.failures.append(f"run {run} ({kind}) printed: {said}"[:300])
            if said and dump is not None:
                (dump / f"run-{run}.pbcat").write_bytes(data)
    finally:
        sys.unraisablehook = before
    result.seconds = time.perf_counter() - started
    return result


def _fuzz_run(
    run: int,
    kind: str,
    data: bytes,
    path: Path,
    pastes: list[str],
    expected: list[Any],
    families: FamilyTable,
    result: FuzzResult,
) -> None:
    """One mutated file: loaded, then asked the pastes; the outcome counted in `result`."""
    result.runs += 1
    result.by_kind[kind] += 1
    path.write_bytes(data)
    try:
        lookup = read_prebuilt(path)
    except PrebuiltError:
        result.refused_at_load += 1
        return
    except Exception as exc:  # what the test counts: the goal is none
        result.failures.append(f"run {run} ({kind}) at load: {exc.__class__.__name__}: {exc}"[:300])
        return
    lookup._families = families
    try:
        got = answers(lookup, pastes)
    except PrebuiltError:
        result.refused_at_lookup += 1
        return
    except Exception as exc:
        result.failures.append(f"run {run} ({kind}) at a lookup: {exc.__class__.__name__}: {exc}"[:300])
        return
    if got == expected:
        result.right_answers += 1
    else:
        result.other_answers += 1
        result.other_by_kind[kind] += 1
