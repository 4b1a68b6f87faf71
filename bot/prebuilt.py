"""A prebuilt catalog file (`.pbcat`): the index of a `PanicLookup` stored once, loaded in a fraction of the
time a JSONL catalog takes to parse, validate and index, with records validated only when a lookup touches
them.

Layout (offsets are from the first byte after the header line):

    PANICBOT-PREBUILT\\n                       the magic line
    {"format": 2, "fingerprint": ..., ...}\\n  the header, one JSON line
    index section                             pickle (protocol 5) of plain containers, read by a
                                              restricted unpickler
    records blob                              each record's JSON compressed on its own (zlib, against a
                                              dictionary of the catalog's own text kept in the index),
                                              concatenated (offsets and a crc32 per record in the index)
    suggest section                           pickle of what autocomplete reads of every record (its
                                              message, tags, whether analysed), read on first use

The header's fingerprint is the sha256 of the source of the bot modules whose objects the index holds (and of
the interpreter and machine facts the arrays depend on): a file written by other code is stale. The index
section's own sha256 is checked before anything of it is unpickled (the suggest section's, when it is read).
Any mismatch is a `PrebuiltError`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import json
import os
import pickle
import sys
import threading
import weakref
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Concatenate, ParamSpec, TypeVar, overload

import orjson

from bot.autocomplete import SuggestFields
from bot.lookup import PanicLookup
from bot.matcher import Matcher
from bot.prebuilt_checks import check_index
from bot.records import Catalog, Record, gc_paused
from bot.regular_files import NotARegularFile, open_regular
from bot.releases import ReleaseTable

MAGIC = b"PANICBOT-PREBUILT\n"
FORMAT_VERSION = 4  # 2: the suggest section; 3: a crc32 per record; 4: records compressed
# Records are compressed one at a time (a lookup reads a few), each against the same dictionary: the text
# that most records share (field names, repository URLs, paths), sampled from the catalog's own records.
RECORD_DICTIONARY_BYTES = 32 * 1024
RECORD_DICTIONARY_SAMPLES = 64
RECORD_COMPRESSION_LEVEL = 1  # the embedded catalog: 8.4 -> 2.5 MB, +0.1 s on the start that writes it
MAX_RECORD_BYTES = 16 * 1024 * 1024  # one record's JSON: a larger one is refused when written and read
SUFFIX = ".pbcat"
# The modules whose objects (or whose way of building them) the index holds.
FINGERPRINT_MODULES = (
    "bot.matcher",
    "bot.lookup",
    "bot.records",
    "bot.releases",
    "bot.patterns",
    "bot.rust_messages",
    "bot.paths",
    "bot.merge",
    "bot.lint",
    "bot.prebuilt",
)
# The matcher's dicts of arrays, stored packed (see `_pack`).
PACKED_FIELDS = ("_anchors", "_pair_anchors", "_postings", "_by_path", "_path_lines")
# Records kept validated, the most recently read (a batch of pastes over the embedded catalog reads about
# 5 a paste: with 256 kept, validating them again was a fifth of `lookup --jsonl`). About 15 MB at most.
RECORD_CACHE_SIZE = 2_048
MAX_HEADER_BYTES = 64 * 1024
_READ_CHUNK = 1 << 20
REBUILD_HINT = "rebuild it with `panicbot catalog build`"

# Everything the index section may name: arrays, builtin containers and the release table's dataclasses.
ALLOWED_GLOBALS = frozenset(
    {
        ("array", "_array_reconstructor"),
        ("array", "array"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "dict"),
        ("builtins", "list"),
        ("builtins", "tuple"),
        ("bot.releases", "ReleaseTable"),
        ("bot.releases", "Release"),
        ("bot.releases", "Site"),
        ("bot.releases", "FunctionRange"),
        ("bot.releases", "Removal"),
    }
)


class PrebuiltError(Exception):
    """A prebuilt catalog file that cannot be used (stale, foreign, corrupt): one line naming the file."""


# What the restricted unpickler raises on crafted bytes (its checks, the allowed constructors given wrong
# arguments, a counted opcode whose length no memory can hold, CPython's own consistency checks): refusals.
UNPICKLING_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    AttributeError,
    ImportError,
    KeyError,
    IndexError,
    MemoryError,
    OverflowError,
    SystemError,
    RecursionError,
)


def _said(exc: BaseException) -> str:
    """An exception in one short line (a crafted pickle can put any text in one)."""
    text = " ".join(str(exc).split())
    return f"{exc.__class__.__name__}: {text[:200]}" if text else exc.__class__.__name__


@functools.cache
def code_fingerprint() -> str:
    """sha256 of the source of FINGERPRINT_MODULES, with the Python version and the machine's array sizes:
    made once a process (the code it runs is the code it loaded)."""
    digest = hashlib.sha256()
    facts = (sys.version_info[:2], sys.byteorder, array("I").itemsize, array("i").itemsize, FORMAT_VERSION)
    digest.update(repr(facts).encode())
    for name in FINGERPRINT_MODULES:
        module = importlib.import_module(name)
        source = module.__file__
        if source is None:
            raise PrebuiltError(f"cannot fingerprint {name}: no source file")
        digest.update(name.encode() + b"\0")
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()


# ---- writing ----------------------------------------------------------------------------------------------


def _portable_releases(releases: ReleaseTable) -> ReleaseTable:
    """A copy of the release table holding only data: function tables given by a function (the embedded
    one, gunzipped on first use) are read now; parsed caches are dropped."""
    table = ReleaseTable(
        releases=releases.releases,
        paths=releases.paths,
        by_path=releases.by_path,
        function_texts=[text() if callable(text) else text for text in releases.function_texts],
        history_texts=[text() if callable(text) else text for text in releases.history_texts],
        repos_by_crate=releases.repos_by_crate,
    )
    table._sites = dict(releases._sites)
    table._pending = dict(releases._pending)
    table._history_of = dict(releases._history_of)
    return table


def prebuilt_bytes(lookup: PanicLookup) -> bytes:
    """The whole prebuilt file of `lookup` (see the module's doc)."""
    records = lookup.matcher.records
    offsets = array("Q", [0])
    checksums = array("I")
    blob = bytearray()
    names: dict[str | None, int] = {}
    version_codes = array("I")
    dictionary = record_dictionary(records)
    primed = zlib.compressobj(RECORD_COMPRESSION_LEVEL, zdict=dictionary)
    for record in records:
        data = _record_json(record)
        stream = primed.copy()
        stored = stream.compress(data) + stream.flush()
        blob += stored
        offsets.append(len(blob))
        checksums.append(zlib.crc32(stored))
        version = lookup.dataset_version(record.id)
        version_codes.append(names.setdefault(version, len(names)))
    state = lookup.matcher.export_state()
    for name in PACKED_FIELDS:
        state[name] = _pack(state[name])
    index = {
        "matcher": state,
        "positions": dict(lookup._positions),
        "version_names": list(names),
        "version_codes": version_codes,
        "under_review": frozenset(lookup.under_review),
        "releases": _portable_releases(lookup.catalog.releases),
        "covered": dict(lookup.catalog.covered),
        "record_offsets": offsets,
        "record_crc32": checksums,
        "record_dictionary": dictionary,
    }
    # What autocomplete reads of every record, apart: read when the first keystroke comes (a Slack-only
    # service never reads it), without validating every record.
    suggest = (
        [record.errorMessage for record in records],
        [tuple(record.tags) for record in records],
        bytes(record.has_analysis for record in records),
    )
    with gc_paused():
        index_bytes = pickle.dumps(index, protocol=5)
        suggest_bytes = pickle.dumps(suggest, protocol=5)
    header = {
        "format": FORMAT_VERSION,
        "fingerprint": code_fingerprint(),
        "index_sha256": hashlib.sha256(index_bytes).hexdigest(),
        "suggest_sha256": hashlib.sha256(suggest_bytes).hexdigest(),
        "records": len(records),
        "index": [0, len(index_bytes)],
        "records_blob": [len(index_bytes), len(blob)],
        "suggest": [len(index_bytes) + len(blob), len(suggest_bytes)],
    }
    head = MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n"
    return head + index_bytes + bytes(blob) + suggest_bytes


def _record_json(record: Record) -> bytes:
    data = orjson.dumps(record.model_dump(mode="json"))
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"record {record.id}: {len(data)} bytes of JSON, over {MAX_RECORD_BYTES}")
    return data


def record_dictionary(records: Sequence[Record]) -> bytes:
    """The dictionary the records are compressed against: the JSON of up to RECORD_DICTIONARY_SAMPLES
    records spread over the catalog, its last RECORD_DICTIONARY_BYTES (zlib favours a dictionary's end)."""
    step = max(1, len(records) // RECORD_DICTIONARY_SAMPLES)
    sample = b"".join(_record_json(records[position]) for position in range(0, len(records), step))
    return sample[-RECORD_DICTIONARY_BYTES:]


def _pack(value: object) -> tuple[Any, ...]:
    """A dict of arrays (or of dicts of arrays) as its keys and one concatenated array: unpickling many small
    arrays keeps every one's bytes alive in the unpickler's memo until the end (twice the memory at load).
    A mapping read in place from a prebuilt file (its arrays memoryviews) packs the same way."""
    if not isinstance(value, Mapping):
        raise TypeError(f"cannot pack {type(value).__name__}")
    if any(isinstance(inner, Mapping) for inner in value.values()):
        counts = array("Q", [len(inner) for inner in value.values()])
        flat = {(outer, key): item for outer, inner in value.items() for key, item in inner.items()}
        _, keys, whole, ends = _pack(flat)
        return ("nested", list(value), counts, [key for _, key in keys], whole, ends)
    values = [array(item.format, item) if isinstance(item, memoryview) else item for item in value.values()]
    typecode = values[0].typecode if values else "I"
    whole = array(typecode)
    ends = array("Q")
    for item in values:
        if not isinstance(item, array) or item.typecode != typecode:
            raise TypeError("cannot pack mixed values")
        whole.extend(item)
        ends.append(len(whole))
    return ("arrays", list(value), whole, ends)


class _PackedKeys:
    """The keys of a packed mapping, in their stored order, and where each one's values are."""

    _keys: list[Any]
    _index: Mapping[Any, object]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class PackedArrays(_PackedKeys, Mapping[Any, memoryview]):
    """A dict of arrays as `_pack` stored it, read in place: a key's array is a view of its slice of the one
    concatenated array, made when asked for (unpacking a million small arrays took seconds at load). The
    views index, slice, iterate and search like the arrays they stand for."""

    def __init__(self, keys: list[Any], whole: array[int], ends: array[int], first: int = 0) -> None:
        if not isinstance(whole, array) or not isinstance(ends, array) or len(keys) > len(ends) - first:
            raise TypeError("packed arrays")
        self._keys = keys
        self._index: dict[Any, int] = {key: position for position, key in enumerate(keys, start=first)}
        self._view = memoryview(whole)
        self._ends = ends

    def __getitem__(self, key: Any) -> memoryview:
        return self._slice(self._index[key])

    def get(self, key: Any, default: Any = None) -> Any:
        position = self._index.get(key)
        return default if position is None else self._slice(position)

    def _slice(self, position: int) -> memoryview:
        return self._view[self._ends[position - 1] if position else 0 : self._ends[position]]


class PackedNested(_PackedKeys, Mapping[Any, PackedArrays]):
    """A dict of dicts of arrays as `_pack` stored it: an outer key's dict is made when first asked for
    (a view of its slice of the inner keys and arrays), and kept."""

    def __init__(
        self, outer: list[Any], counts: array[int], inner: list[Any], whole: array[int], ends: array[int]
    ) -> None:
        if len(outer) != len(counts) or len(inner) != len(ends):
            raise TypeError("packed nested arrays")
        self._keys = outer
        self._index: dict[Any, tuple[int, int]] = {}
        first = 0
        for key, count in zip(outer, counts, strict=True):
            self._index[key] = (first, count)
            first += count
        self._inner = inner
        self._whole = whole
        self._ends = ends
        self._made: dict[Any, PackedArrays] = {}

    def __getitem__(self, key: Any) -> PackedArrays:
        made = self._made.get(key)
        if made is None:
            first, count = self._index[key]
            made = PackedArrays(self._inner[first : first + count], self._whole, self._ends, first)
            self._made[key] = made
        return made

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self._index else default


def _unpack(packed: Any) -> Mapping[Any, Any]:
    """The dict `_pack` packed, read in place."""
    if packed[0] == "nested":
        _, outer_keys, counts, inner_keys, whole, ends = packed
        return PackedNested(outer_keys, counts, inner_keys, whole, ends)
    _, keys, whole, ends = packed
    return PackedArrays(keys, whole, ends)


def write_prebuilt(lookup: PanicLookup, path: Path | str) -> None:
    """`prebuilt_bytes` written to `path` (callers that need it atomic write those bytes themselves)."""
    Path(path).write_bytes(prebuilt_bytes(lookup))


# ---- reading ----------------------------------------------------------------------------------------------


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refused global {module}.{name}")
        return super().find_class(module, name)


class _Bounded:
    """What the unpickler reads: `length` bytes of a buffered section, never more. A read asks for at most
    what is left, so a crafted frame or opcode length (2**50, 2**63) is a short read, which the unpickler
    refuses as truncated data, instead of a buffer of that size allocated first."""

    def __init__(self, reader: io.BufferedReader[Any], length: int) -> None:
        self._reader = reader
        self._left = length

    def read(self, size: int = -1) -> bytes:
        size = self._left if size is None or size < 0 else min(size, self._left)
        data = self._reader.read(size)
        self._left -= len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        # Every view released on the way out, even on an error: a view left in a traceback would keep the
        # unpickler's buffer exported when it frees it.
        with memoryview(buffer) as view, view.cast("B") as flat, flat[: self._left] as part:
            got = self._reader.readinto(part)
        self._left -= got
        return got

    def readline(self, size: int = -1) -> bytes:
        size = self._left if size is None or size < 0 else min(size, self._left)
        data = self._reader.readline(size)
        self._left -= len(data)
        return data


class _Section(io.RawIOBase):
    """`length` bytes of a file from `start`: what the unpickler reads, a frame at a time (never the whole
    section in memory at once)."""

    def __init__(self, handle: IO[bytes], start: int, length: int) -> None:
        self._handle = handle
        self._left = length
        handle.seek(start)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        with memoryview(buffer) as view, view.cast("B") as flat:
            wanted = min(len(flat), self._left)
            if wanted <= 0:
                return 0
            got = len(data := self._handle.read(wanted))
            flat[:got] = data
        self._left -= got
        return got


class LazyRecords(Sequence[Record]):
    """The records of a prebuilt file, validated (`Record.model_validate_json`) when one is read, the
    RECORD_CACHE_SIZE most recently read kept. Each is read from the open file when needed (`os.pread`): a
    record never read costs no memory. The file stays open as it was opened, so replacing it (a rename, as
    `catalog build` writes) changes nothing here; one overwritten in place gives records that no longer fit
    the index, refused (`PrebuiltError`) instead of answered, and never a crash of a memory-mapped read."""

    def __init__(
        self,
        handle: IO[bytes],
        start: int,
        offsets: array[int],
        positions: Mapping[str, int],
        source: str,
        checksums: array[int],
        dictionary: bytes,
    ) -> None:
        self._fd = os.dup(handle.fileno())
        self._checksums = checksums
        self._dictionary = dictionary
        self._closer = weakref.finalize(self, os.close, self._fd)
        self._start = start
        self._offsets = offsets
        self._positions = positions
        self.source = source
        self._cache: OrderedDict[int, Record] = OrderedDict()
        self._lock = threading.Lock()
        self.validations = 0
        """How many records were validated (a test counts them)."""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("record position out of range")
        with self._lock:
            found = self._cache.get(index)
            if found is not None:
                self._cache.move_to_end(index)  # the least recently read go first
        if found is not None:
            return found
        start = self._start + self._offsets[index]
        length = self._offsets[index + 1] - self._offsets[index]
        try:
            data = os.pread(self._fd, length, start)
            if zlib.crc32(data) != self._checksums[index]:
                # The records blob has no sha256 (it is most of the file, and read a record at a time): a
                # damaged record could still inflate to JSON, and a card from it would be a wrong one.
                raise PrebuiltError(f"{self.source}: record {index} is damaged (its crc32); {REBUILD_HINT}")
            record = Record.model_validate_json(self._inflated(index, data))
        except (ValueError, zlib.error) as exc:  # pydantic's ValidationError is a ValueError
            raise PrebuiltError(
                f"{self.source}: record {index} is corrupt ({exc.__class__.__name__}); {REBUILD_HINT}"
            ) from None
        except OSError as exc:
            raise PrebuiltError(
                f"{self.source}: cannot read record {index} ({exc.strerror or exc})"
            ) from None
        if self._positions.get(record.id) != index:
            raise PrebuiltError(
                f"{self.source}: record {index} is not the one the index holds (the file was changed in "
                f"place?); {REBUILD_HINT}"
            )
        with self._lock:
            self.validations += 1
            if len(self._cache) >= RECORD_CACHE_SIZE:
                self._cache.popitem(last=False)
            self._cache[index] = record
        return record

    def _inflated(self, index: int, stored: bytes) -> bytes:
        """A record's JSON from its stored bytes, never more than MAX_RECORD_BYTES of it."""
        stream = zlib.decompressobj(zdict=self._dictionary)
        data = stream.decompress(stored, MAX_RECORD_BYTES)
        if stream.unconsumed_tail or stream.unused_data or not stream.eof:
            raise ValueError(f"record {index} does not inflate to one whole record")
        return data

    def __iter__(self) -> Iterator[Record]:
        for position in range(len(self)):
            yield self[position]

    def read_section(self, start: int, length: int) -> bytes:
        """`length` bytes of the file from `start` (another section of it)."""
        parts = []
        while length > 0:
            part = os.pread(self._fd, min(length, _READ_CHUNK * 64), start)
            if not part:
                raise PrebuiltError(
                    f"{self.source}: truncated (a section ends past the file); {REBUILD_HINT}"
                )
            parts.append(part)
            start += len(part)
            length -= len(part)
        return b"".join(parts)


class SuggestSection:
    """What autocomplete reads of every record (messages, tags, whether analysed: `bot.autocomplete`'s
    `SuggestFields`), read from the file when called: its sha256 checked, then unpickled by the restricted
    unpickler. A Slack-only service never calls it."""

    def __init__(self, records: LazyRecords, start: int, length: int, sha256: object) -> None:
        self._records = records
        self._start = start
        self._length = length
        self._sha256 = sha256

    def __call__(self) -> SuggestFields:
        source = self._records.source
        data = self._records.read_section(self._start, self._length)
        if hashlib.sha256(data).hexdigest() != self._sha256:
            raise PrebuiltError(
                f"{source}: corrupt suggest section (its sha256 is not the header's); {REBUILD_HINT}"
            )
        try:
            with gc_paused():
                messages, tags, analysed = _RestrictedUnpickler(io.BytesIO(data)).load()
        except UNPICKLING_ERRORS as exc:
            raise PrebuiltError(f"{source}: suggest section refused ({_said(exc)}); {REBUILD_HINT}") from None
        count = len(self._records)
        if not (
            isinstance(messages, list)
            and isinstance(tags, list)
            and isinstance(analysed, bytes)
            and len(messages) == len(tags) == len(analysed) == count
        ):
            raise PrebuiltError(f"{source}: suggest section not in the expected shape; {REBUILD_HINT}")
        return SuggestFields(messages, tags, [bool(flag) for flag in analysed])


class _PositionVersions(Mapping[str, str | None]):
    """Record id -> data set version, kept as a code per record position (few distinct versions)."""

    def __init__(self, positions: Mapping[str, int], codes: array[int], names: list[str | None]) -> None:
        self._positions = positions
        self._codes = codes
        self._names = names

    def __getitem__(self, record_id: str) -> str | None:
        return self._names[self._codes[self._positions[record_id]]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _refusing(
    method: Callable[Concatenate[PrebuiltLookup, _P], _T],
) -> Callable[Concatenate[PrebuiltLookup, _P], _T]:
    """`method` of a lookup over a prebuilt file, where any error but the file's own PrebuiltError is the
    file's damage found late (a part the load does not check: a record's JSON, a release table row parsed
    on first use), refused as a PrebuiltError naming the file."""

    @functools.wraps(method)
    def guarded(self: PrebuiltLookup, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(self, *args, **kwargs)
        except PrebuiltError:
            raise
        except Exception as exc:  # whatever the damage makes the code raise, the file is refused
            raise PrebuiltError(
                f"{self.source}: damaged, found when a lookup read it ({_said(exc)}); {REBUILD_HINT}"
            ) from exc

    return guarded


class PrebuiltLookup(PanicLookup):
    """The lookup of a prebuilt file: what its load checked (`bot.prebuilt_checks`) cannot fail a lookup,
    and damage in what it reads later (records, release table rows, function tables) is a PrebuiltError
    of the file, as the CLI and the service expect of a refused catalog, never another exception."""

    source: str

    lookup_reading = _refusing(PanicLookup.lookup_reading)
    site = _refusing(PanicLookup.site)
    card = _refusing(PanicLookup.card)
    card_for_record = _refusing(PanicLookup.card_for_record)
    record = _refusing(PanicLookup.record)
    suggest = _refusing(PanicLookup.suggest)
    unmatched = _refusing(PanicLookup.unmatched)
    answer_json = _refusing(PanicLookup.answer_json)
    dataset_version = _refusing(PanicLookup.dataset_version)
    family = _refusing(PanicLookup.family)


def _fail(path: Path, why: str) -> PrebuiltError:
    return PrebuiltError(f"{path}: {why}; {REBUILD_HINT}")


def _read_header(handle: IO[bytes], path: Path) -> tuple[dict[str, Any], int]:
    if handle.read(len(MAGIC)) != MAGIC:
        raise _fail(path, "not a panicbot prebuilt catalog (bad magic line)")
    line = handle.readline(MAX_HEADER_BYTES)
    if not line.endswith(b"\n"):
        raise _fail(path, "truncated or corrupt header")
    try:
        header = json.loads(line)
    except ValueError:
        raise _fail(path, "corrupt header") from None
    if not isinstance(header, dict):
        raise _fail(path, "corrupt header")
    return header, len(MAGIC) + len(line)


def _section(header: dict[str, Any], name: str, path: Path, body: int, size: int) -> tuple[int, int]:
    value = header.get(name)
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and v >= 0 for v in value)
        or body + value[0] + value[1] > size
    ):
        raise _fail(path, f"corrupt header ({name} section)")
    return body + value[0], value[1]


def read_prebuilt(path: Path | str) -> PanicLookup:
    """The `PanicLookup` a prebuilt file holds, its records read from the file when a lookup needs them.
    Raises PrebuiltError for a stale, foreign, corrupt or crafted file, for one that cannot be read, and
    for a path that is not a regular file (a FIFO, a device, a socket: refused before it is read)."""
    path = Path(path)
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            return _read(handle, path)
    except NotARegularFile as exc:
        raise PrebuiltError(f"{path}: {exc.strerror}; a prebuilt catalog is a file") from None
    except OSError as exc:
        raise PrebuiltError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read(handle: IO[bytes], path: Path) -> PanicLookup:
    size = os.fstat(handle.fileno()).st_size
    header, body = _read_header(handle, path)
    if header.get("format") != FORMAT_VERSION:
        raise _fail(path, f"format {header.get('format')!r}, this panicbot reads {FORMAT_VERSION}")
    if header.get("fingerprint") != code_fingerprint():
        raise _fail(path, "stale: written by another version of panicbot's code")
    index_start, index_length = _section(header, "index", path, body, size)
    blob_start, blob_length = _section(header, "records_blob", path, body, size)
    suggest_start, suggest_length = _section(header, "suggest", path, body, size)
    if blob_start + blob_length != suggest_start or suggest_start + suggest_length != size:
        raise _fail(path, "truncated or padded (its size is not the header's)")
    digest = hashlib.sha256()
    handle.seek(index_start)
    left = index_length
    while left > 0:
        chunk = handle.read(min(_READ_CHUNK, left))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)
    if left or digest.hexdigest() != header.get("index_sha256"):
        raise _fail(path, "corrupt index (its sha256 is not the header's)")
    records = header.get("records")
    if type(records) is not int or not 0 < records <= blob_length:
        raise _fail(path, "corrupt header (records)")
    try:
        with gc_paused():
            section = io.BufferedReader(_Section(handle, index_start, index_length), 1 << 16)
            index = _RestrictedUnpickler(_Bounded(section, index_length)).load()
    except UNPICKLING_ERRORS as exc:
        raise _fail(path, f"index refused ({_said(exc)})") from None
    try:
        check_index(index, records, blob_length)
        suggest = (suggest_start, suggest_length)
        return _assemble(index, handle, path, blob_start, blob_length, header, suggest)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise _fail(path, f"index not in the expected shape ({exc.__class__.__name__}: {exc})") from None


def _assemble(
    index: Any,
    handle: IO[bytes],
    path: Path,
    blob_start: int,
    blob_length: int,
    header: dict[str, Any],
    suggest_section: tuple[int, int],
) -> PanicLookup:
    if not isinstance(index, dict):
        raise TypeError("not a dict")
    offsets = index["record_offsets"]
    releases = index["releases"]
    if not isinstance(offsets, array) or not isinstance(releases, ReleaseTable):
        raise TypeError("offsets or releases")
    count = len(offsets) - 1
    if count != header.get("records") or offsets[-1] != blob_length:
        raise ValueError("record offsets do not fit the records blob")
    if not blob_length:
        raise ValueError("no records")
    positions = index["positions"]
    if not isinstance(positions, dict):
        raise TypeError("positions")
    records = LazyRecords(
        handle,
        blob_start,
        offsets,
        positions,
        str(path),
        index["record_crc32"],
        index["record_dictionary"],
    )
    state = dict(index["matcher"])
    for name in PACKED_FIELDS:
        state[name] = _unpack(state[name])
    matcher = Matcher.restore(state, records)
    versions = _PositionVersions(positions, index["version_codes"], index["version_names"])
    catalog = Catalog(releases=releases, covered=index["covered"])
    suggest_start, suggest_length = suggest_section
    suggest = SuggestSection(records, suggest_start, suggest_length, header.get("suggest_sha256"))
    names = sorted(name for name in index["version_names"] if name)
    lookup = PrebuiltLookup.from_prebuilt(
        catalog, matcher, positions, versions, index["under_review"], suggest, dataset_versions=names
    )
    assert isinstance(lookup, PrebuiltLookup)
    lookup.source = str(path)
    return lookup
