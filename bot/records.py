"""The analysed error record (schema v2) and loading catalogs of them without dying on one bad line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

SUPPORTED_SCHEMA_VERSIONS = frozenset({2})
CATALOG_SUFFIXES = (".jsonl", ".json", ".txt", ".ndjson")
DEFAULT_CATALOG_NAME = "embedded default data set"


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
    if stripped.startswith("{") and "\n" in stripped.rstrip():
        # A pretty-printed single object spans lines; JSONL objects never do.
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict):
            yield 1, whole
            return
    # Not splitlines(): JSON allows U+2028 and friends raw inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
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


def catalog_files(path: Path) -> list[Path]:
    """The catalog files a path names: the file itself, or the catalog files of a folder, sorted."""
    if path.is_dir():
        # Hidden entries are skipped: a Kubernetes ConfigMap mount holds each file twice, once under a
        # timestamped `..2024_...` folder.
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and p.suffix.lower() in CATALOG_SUFFIXES
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    return [path]


def decode_catalog_bytes(data: bytes, source: str) -> tuple[str, CatalogProblem | None]:
    """UTF-8 text of a catalog file; undecodable bytes are replaced and reported once."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        # utf-8-sig reports positions after the byte order mark.
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        problem = CatalogProblem(source, line, "invalid UTF-8 (bytes replaced)")
        return data.decode("utf-8-sig", errors="replace"), problem


def load_catalog(paths: Sequence[Path | str]) -> Catalog:
    """Read catalogs from files and folders. A missing or unreadable path is an error, never an exception."""
    catalog = Catalog()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            catalog.errors.append(CatalogProblem(str(path), 0, "no such file or folder"))
            catalog.files.append(FileSummary(str(path), errors=1))
            continue
        files = catalog_files(path)
        if not files:
            catalog.errors.append(CatalogProblem(str(path), 0, "folder holds no .jsonl/.json catalog file"))
            catalog.files.append(FileSummary(str(path), errors=1))
        for file in files:
            try:
                data = file.read_bytes()
            except OSError as exc:
                catalog.errors.append(CatalogProblem(str(file), 0, f"cannot read: {exc.strerror}"))
                catalog.files.append(FileSummary(str(file), errors=1))
                continue
            text, problem = decode_catalog_bytes(data, str(file))
            if problem:
                catalog.errors.append(problem)
            parse_catalog_text(text, str(file), catalog)
    return catalog


def default_catalog() -> Catalog:
    """The data set embedded in the package (the seed records)."""
    text = resources.files("bot").joinpath("data/default_catalog.jsonl").read_text(encoding="utf-8")
    return parse_catalog_text(text, DEFAULT_CATALOG_NAME)
