"""The analysed error record (schema v2) and loading catalogs of them without dying on one bad line."""

from __future__ import annotations

import functools
import gc
import gzip
import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.merge import merge_catalogs
from bot.regular_files import read_regular
from bot.releases import ReleaseTable

if TYPE_CHECKING:
    from bot.families import FamilyTable

SUPPORTED_SCHEMA_VERSIONS = frozenset({2})
CATALOG_SUFFIXES = (".jsonl", ".json", ".txt", ".ndjson")
COMPRESSED_SUFFIX = ".gz"
# Side tables beside a catalog file `X.jsonl`: `X.releases.jsonl` (each harvested release and its crate
# versions), `X.sites.jsonl` (the releases, lines and functions of each record's site) and
# `X.functions.jsonl` (every function's lines per file per release) and `X.history.jsonl` (the commit that
# took a message out of its file); gzipped or not.
SIDE_TABLES = (".releases", ".sites", ".functions", ".history")
# `X.api.jsonl[.gz|.xz]`: each release's public API (bot/api_table.py), read by `catalog lint` only, never
# as records.
LINT_TABLES = (".api",)
DEFAULT_CATALOG_NAME = "embedded default data set"
# The word that names the embedded catalog among catalog paths: `PANICBOT_CATALOG=default:/mine.jsonl`.
DEFAULT_CATALOG_WORD = "default"
# The embedded catalog: analysed records (the seeds, the Rust runtime panics) over the ecosystem baseline.
EMBEDDED_FILES = (
    "data/default_catalog.jsonl",
    "data/rust_runtime.jsonl",
    "data/analyses.jsonl",
    "data/ecosystem.jsonl.gz",
)


class Record(BaseModel):
    """One analysed error site. Every field of the seeds; unknown extra fields are kept, not refused."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    id: str = Field(min_length=1)
    errorMessage: str = Field(min_length=1)
    repo: str | None = None
    slug: str | None = None
    errorCode: str | None = None
    messagePattern: str | None = None
    errorType: str | None = None
    errorClass: str | None = None
    httpStatus: int | None = None
    severity: str | None = None
    filePath: str | None = None
    lineNumber: int | None = None
    sourceCode: str | None = None
    sourceCodeStart: int | None = None
    sourceCodeEnd: int | None = None
    githubUrl: str | None = None
    documentation: str | None = None
    triggerScenarios: str | None = None
    commonSituations: str | None = None
    solutions: tuple[str, ...] = ()
    exampleFix: str | None = None
    handlingStrategy: str | None = None
    validationCode: str | None = None
    typeGuard: str | None = None
    tryCatchPattern: str | None = None
    preventionTips: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    backgroundTag: str | None = None
    analyzedSha: str | None = None
    analyzedAt: str | None = None
    contentChangedAt: str | None = None
    schemaVersion: int = 2

    @field_validator("solutions", "preventionTips", "tags", mode="before")
    @classmethod
    def _null_list_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("schemaVersion")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value not in SUPPORTED_SCHEMA_VERSIONS:
            known = ", ".join(str(v) for v in sorted(SUPPORTED_SCHEMA_VERSIONS))
            raise ValueError(f"unknown schemaVersion {value} (this panicbot reads {known})")
        return value

    @property
    def has_analysis(self) -> bool:
        """True when the record carries the analysis (documentation or solutions), not only the site."""
        return bool(self.documentation or self.solutions)


@dataclass(frozen=True)
class CatalogEntry:
    """A record with where it came from."""

    record: Record
    dataset_version: str | None
    source: str
    line: int


@dataclass(frozen=True)
class CatalogProblem:
    """A line that was skipped (error) or a record that replaced an earlier one (duplicate)."""

    source: str
    line: int
    reason: str
    by_design: bool = False
    """A bare baseline twin of an analysed record, left out: how analyses join a harvested catalog."""

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


@dataclass
class FileSummary:
    source: str
    records: int = 0
    errors: int = 0


@dataclass
class Catalog:
    """The loaded records (later duplicates win) with every problem met on the way."""

    entries: list[CatalogEntry] = field(default_factory=list)
    errors: list[CatalogProblem] = field(default_factory=list)
    duplicates: list[CatalogProblem] = field(default_factory=list)
    files: list[FileSummary] = field(default_factory=list)
    releases: ReleaseTable = field(default_factory=ReleaseTable)
    covered: dict[str, str] = field(default_factory=dict)
    """Baseline record id -> the analysed record of the same site that replaced it."""
    families: FamilyTable | None = None
    """The analysis families read beside its files (`X.families.toml`); None: the embedded ones apply."""

    @property
    def records(self) -> list[Record]:
        return [entry.record for entry in self.entries]

    @property
    def dataset_versions(self) -> list[str]:
        return sorted({e.dataset_version for e in self.entries if e.dataset_version})


def _reason_from_validation(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "record"
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse_record_line(obj: Any) -> tuple[Record, str | None]:
    """One JSON value in the seeds' format (or a bare record) -> the record and its data set version."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    dataset_version = None
    if "record" in obj:
        payload = obj["record"]
        version = obj.get("datasetVersion")
        dataset_version = None if version is None else str(version)
        if not isinstance(payload, dict):
            raise ValueError("'record' is not a JSON object")
    else:
        payload = obj
    missing = [name for name in ("id", "errorMessage") if not payload.get(name)]
    if missing:
        raise ValueError("missing required field " + " and ".join(repr(m) for m in missing))
    return Record.model_validate(payload), dataset_version


def _loads(text: str) -> Any:
    """`json.loads`, by orjson (several times faster on a catalog's lines): where orjson refuses a text
    (NaN, a number beyond 64 bits, a lone surrogate), `json` decides, so values and errors are its own."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _json_values(text: str) -> Iterable[tuple[int, Any | Exception]]:
    """(line number, value or the error) for a JSONL text, or for a JSON document holding an array/object."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            yield from enumerate(values, start=1)
            return
    whole: Any = None
    end = len(stripped)
    while end and stripped[end - 1].isspace():  # not rstrip(): a copy of a 100 MB text holds the interpreter
        end -= 1
    if stripped.startswith("{") and stripped.find("\n", 0, end) != -1:
        # A pretty-printed single object spans lines; JSONL objects never do.
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict):
            yield 1, whole
            return
    # Not splitlines(): JSON allows U+2028 and friends raw inside strings.
    yield from _json_lines(_numbered_lines(text))


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """`enumerate(text.split("\n"), start=1)`, one line at a time (a split of a large catalog is one long
    hold of the interpreter, and a list as long as the file)."""
    start, number = 0, 1
    while True:
        end = text.find("\n", start)
        if end == -1:
            yield number, text[start:]
            return
        yield number, text[start:end]
        start, number = end + 1, number + 1


def _json_lines(lines: Iterable[tuple[int, str]]) -> Iterable[tuple[int, Any | Exception]]:
    """(line number, value or the error) for numbered JSONL lines; blank lines skipped."""
    for number, line in lines:
        if not line.strip():
            continue
        try:
            yield number, _loads(line)
        except json.JSONDecodeError as exc:
            yield number, ValueError(f"not JSON ({exc.msg} at column {exc.colno})")


def parse_catalog_text(text: str, source: str, catalog: Catalog | None = None) -> Catalog:
    """Add the records of one catalog text to `catalog` (a new one by default); bad lines become errors."""
    catalog = catalog if catalog is not None else Catalog()
    summary = FileSummary(source)
    catalog.files.append(summary)
    index = {entry.record.id: i for i, entry in enumerate(catalog.entries)}
    for line, value in _json_values(text):
        if isinstance(value, Exception):
            catalog.errors.append(CatalogProblem(source, line, str(value)))
            summary.errors += 1
            continue
        try:
            record, version = parse_record_line(value)
        except ValidationError as exc:
            catalog.errors.append(CatalogProblem(source, line, _reason_from_validation(exc)))
            summary.errors += 1
            continue
        except ValueError as exc:
            catalog.errors.append(CatalogProblem(source, line, str(exc)))
            summary.errors += 1
            continue
        entry = CatalogEntry(record, version, source, line)
        summary.records += 1
        if record.id in index:
            earlier = catalog.entries[index[record.id]]
            if earlier.record.has_analysis and not record.has_analysis:
                # An analysed record is never hidden by a bare baseline twin, whatever the order.
                catalog.duplicates.append(
                    CatalogProblem(
                        source,
                        line,
                        f"duplicate id {record.id}: the analysed record at {earlier.source}:{earlier.line} "
                        "is kept",
                        by_design=True,
                    )
                )
                continue
            catalog.duplicates.append(
                CatalogProblem(
                    source, line, f"duplicate id {record.id}: replaces {earlier.source}:{earlier.line}"
                )
            )
            catalog.entries[index[record.id]] = entry
        else:
            index[record.id] = len(catalog.entries)
            catalog.entries.append(entry)
    return catalog


def _base_name(name: str) -> str:
    """`x.jsonl.gz` -> `x.jsonl`: what a compressed catalog file holds."""
    return name[: -len(COMPRESSED_SUFFIX)] if name.lower().endswith(COMPRESSED_SUFFIX) else name


def is_side_table(path: Path) -> bool:
    """`X.sites.jsonl`, `X.releases.jsonl` (gzipped or not): read with their catalog, never as records."""
    stem = Path(_base_name(path.name)).stem
    return any(stem.endswith(suffix) for suffix in (*SIDE_TABLES, *LINT_TABLES))


def is_catalog_file(path: Path) -> bool:
    return Path(_base_name(path.name)).suffix.lower() in CATALOG_SUFFIXES and not is_side_table(path)


def catalog_files(path: Path) -> list[Path]:
    """The catalog files a path names: the file itself, or the catalog files of a folder, sorted."""
    if path.is_dir():
        # Hidden entries are skipped: a Kubernetes ConfigMap mount holds each file twice, once under a
        # timestamped `..2024_...` folder.
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and is_catalog_file(p)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    return [path]


def side_table_names(catalog_name: str) -> list[tuple[str, str]]:
    """(kind, file name) of the side tables a catalog file may have beside it, releases first."""
    stem = Path(_base_name(catalog_name)).stem
    return [(kind, f"{stem}{kind}.jsonl{gz}") for kind in SIDE_TABLES for gz in ("", COMPRESSED_SUFFIX)]


def decode_catalog_bytes(data: bytes, source: str) -> tuple[str, CatalogProblem | None]:
    """UTF-8 text of a catalog file (gunzipped when it is gzip); undecodable bytes are replaced and
    reported once."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            return "", CatalogProblem(source, 0, f"not a readable gzip file ({exc})")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        # utf-8-sig reports positions after the byte order mark.
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        problem = CatalogProblem(source, line, "invalid UTF-8 (bytes replaced)")
        return data.decode("utf-8-sig", errors="replace"), problem


def parse_side_table(text: str, kind: str, source: str, catalog: Catalog, *, trusted: bool = False) -> None:
    """Add a side table's rows to the catalog's release table; a bad row is reported and skipped. A
    function table is kept as text until a line is named (most lookups never need it). The rows of a
    `trusted` site table (the embedded catalog's) are parsed, and their sites made, per record on first
    use."""
    if kind == ".functions":
        catalog.releases.add_function_text(text)
        return
    if kind == ".history":
        catalog.releases.add_history_text(text)
        return
    if trusted and kind == ".sites":
        try:
            catalog.releases.add_trusted_site_text(text, functools.partial(_side_line, source, catalog))
        except (KeyError, TypeError, ValueError) as exc:
            catalog.errors.append(CatalogProblem(source, 0, f"bad side table: {exc}"))
        return
    rows: list[dict[str, Any]] = []
    for line, value in _json_values(text):
        row = _side_row(value, line, source, catalog)
        if row is not None:
            rows.append(row)
    try:
        if kind == ".releases":
            catalog.releases.add_release_rows(rows)
        else:
            catalog.releases.add_site_rows(rows)
    except (KeyError, TypeError, ValueError) as exc:
        catalog.errors.append(CatalogProblem(source, 0, f"bad side table: {exc}"))


def _side_line(source: str, catalog: Catalog, number: int, line: str) -> dict[str, Any] | None:
    """One line of a side table parsed: its row, or None (a blank line, or a bad one, then reported)."""
    for _, value in _json_lines([(number, line)]):
        return _side_row(value, number, source, catalog)
    return None


def _side_row(value: Any, line: int, source: str, catalog: Catalog) -> dict[str, Any] | None:
    """A side table's row, or None when the line is not a JSON object (then reported)."""
    if isinstance(value, dict):
        return value
    reason = str(value) if isinstance(value, Exception) else "expected a JSON object"
    catalog.errors.append(CatalogProblem(source, line, reason))
    return None


def _read_file(file: Path, catalog: Catalog) -> None:
    try:
        data = read_regular(file)  # a FIFO or a device is refused, never read
    except OSError as exc:
        catalog.errors.append(CatalogProblem(str(file), 0, f"cannot read: {exc.strerror}"))
        catalog.files.append(FileSummary(str(file), errors=1))
        return
    text, problem = decode_catalog_bytes(data, str(file))
    if problem:
        catalog.errors.append(problem)
    parse_catalog_text(text, str(file), catalog)
    for kind, name in side_table_names(file.name):
        side = file.with_name(name)
        if side.is_file():
            try:
                side_text, side_problem = decode_catalog_bytes(read_regular(side), str(side))
            except OSError as exc:
                catalog.errors.append(CatalogProblem(str(side), 0, f"cannot read: {exc.strerror}"))
                continue
            if side_problem:
                catalog.errors.append(side_problem)
            parse_side_table(side_text, kind, str(side), catalog)
    _read_families_beside(file, catalog)


def _read_families_beside(file: Path, catalog: Catalog) -> None:
    """`X.families.toml` beside `X.jsonl`: its families join the catalog's; a bad one is a catalog error."""
    from bot.families import FAMILIES_SUFFIX, FamilyError, FamilyTable, parse_families  # noqa: PLC0415

    stem = Path(_base_name(file.name)).stem
    beside = file.with_name(stem + FAMILIES_SUFFIX)
    if not beside.is_file():
        return
    try:
        table = parse_families(read_regular(beside).decode("utf-8"), str(beside))
    except (OSError, UnicodeDecodeError, FamilyError) as exc:
        catalog.errors.append(CatalogProblem(str(beside), 0, f"bad families file: {exc}"))
        return
    if catalog.families is None:
        catalog.families = FamilyTable(source=table.source)
    catalog.families.families.extend(table.families)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a catalog or its index is built: they make hundreds of thousands
    of objects and no cycles, and each collection would walk all of them again (a third of the embedded
    catalog's load time, measured; bench/README.md). Restored on the way out, even on an error.

    On the way out the objects made meanwhile join the oldest generation untraversed (`freeze` then
    `unfreeze` moves every tracked object there and zeroes the young count): else the first young
    collection after the pause walks them all (0.05 s of a cold `panicbot lookup`, measured, for the
    catalog's pause and the index's).
    Skipped when something froze objects already (the service freezes its heap between reloads)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_catalog(paths: Sequence[Path | str]) -> Catalog:
    """Read catalogs from files and folders (and `default`, the embedded catalog, where no such file is).
    A missing or unreadable path is an error, never an exception. Analysed records win over the baseline
    records of their site (see `settle`)."""
    with gc_paused():
        return _load_catalog(paths)


def _load_catalog(paths: Sequence[Path | str]) -> Catalog:
    catalog = Catalog()
    for raw in paths:
        path = Path(raw)
        if str(raw) == DEFAULT_CATALOG_WORD and not path.exists():
            _read_embedded(catalog)
            continue
        if not path.exists():
            catalog.errors.append(CatalogProblem(str(path), 0, "no such file or folder"))
            catalog.files.append(FileSummary(str(path), errors=1))
            continue
        files = catalog_files(path)
        if not files:
            catalog.errors.append(CatalogProblem(str(path), 0, "folder holds no .jsonl/.json catalog file"))
            catalog.files.append(FileSummary(str(path), errors=1))
        for file in files:
            _read_file(file, catalog)
    return settle(catalog)


def _read_embedded(catalog: Catalog) -> None:
    package = resources.files("bot")
    for name in EMBEDDED_FILES:
        resource = package.joinpath(name)
        if not resource.is_file():
            continue  # a data file not built yet: the others still serve
        text, problem = decode_catalog_bytes(resource.read_bytes(), DEFAULT_CATALOG_NAME)
        if problem:
            catalog.errors.append(problem)
        parse_catalog_text(text, DEFAULT_CATALOG_NAME, catalog)
        folder = name.rpartition("/")[0]
        for kind, side_name in side_table_names(name.rpartition("/")[2]):
            side = package.joinpath(f"{folder}/{side_name}")
            if side.is_file():
                if kind == ".functions":  # gunzipped when a lookup first names a function's line
                    catalog.releases.add_function_text(functools.partial(_embedded_text, side.read_bytes()))
                    continue
                if kind == ".history":  # gunzipped when a card first asks why a message went
                    catalog.releases.add_history_text(functools.partial(_embedded_text, side.read_bytes()))
                    continue
                side_text = _embedded_text(side.read_bytes())
                parse_side_table(side_text, kind, DEFAULT_CATALOG_NAME, catalog, trusted=True)


def _embedded_text(data: bytes) -> str:
    """An embedded side table's text (its problems are the build's, checked by the tests, not the user's)."""
    return decode_catalog_bytes(data, DEFAULT_CATALOG_NAME)[0]


def settle(catalog: Catalog) -> Catalog:
    """Analysed records over the baseline: a harvested record of the same site (file and message) as an
    analysed one is dropped, whatever the order of loading, and the analysed record takes over its
    releases."""
    analysed = [entry.record for entry in catalog.entries if entry.record.has_analysis]
    if not analysed:
        return catalog
    baseline = [entry.record for entry in catalog.entries if not entry.record.has_analysis]
    result = merge_catalogs(analysed, baseline)
    if not result.covered_by:
        return catalog
    for covered_id, by in result.covered_by.items():
        catalog.releases.alias(by, covered_id)
    catalog.covered.update(result.covered_by)
    dropped = set(result.covered_by)
    catalog.entries = [
        entry for entry in catalog.entries if entry.record.has_analysis or entry.record.id not in dropped
    ]
    return catalog


def default_catalog() -> Catalog:
    """The data set embedded in the package: the analysed seed and Rust runtime records over the ecosystem
    baseline (every release of Burn and the crates under it)."""
    with gc_paused():
        catalog = Catalog()
        _read_embedded(catalog)
        return settle(catalog)
