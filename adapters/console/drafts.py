"""Records drafted in the console: pre-filled from an unmatched panic, checked as schema v2 (patterns with
RE2, as the matcher runs them), appended to a drafts file (JSONL) for `catalog lint` / `catalog merge`, never
to the live catalog. A line is written whole or not at all; a damaged tail is set aside, never appended to."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from adapters.console.queries_types import GroupLike
from bot.harvest import record_id, slug
from bot.patterns import is_valid_pattern
from bot.records import Record
from bot.releases import ReleaseTable, VersionHint, hint_from_path
from bot.rust_messages import escape_literal

# Standalone numbers and addresses vary between runs of one site (the store's normalisation): placeholders.
_NUMBER = re.compile(r"\b(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)\b")
_CRATE_PATH = re.compile(r"^crates/(?P<crate>[A-Za-z0-9_-]+)/")
DRAFT_DATASET_VERSION = "console-draft"
FIELDS = (
    "errorMessage",
    "messagePattern",
    "filePath",
    "lineNumber",
    "repo",
    "release",
    "severity",
    "documentation",
    "triggerScenarios",
    "solutions",
    "exampleFix",
    "preventionTips",
    "tags",
)
LIST_FIELDS = ("solutions", "preventionTips")
# A field longer than this is refused (a record is read by people; a paste is not a record).
FIELD_MAX_CHARS = 20_000
DAMAGED_SUFFIX = ".damaged"

log = logging.getLogger("panicbot.console")


class DraftWriteError(Exception):
    """The drafts file could not take the line (disk full, no permission): nothing of it was kept."""


def release_of(raw_path: str | None) -> str | None:
    """The release a pasted path reveals (`burn-fusion 0.21.0`), read as the lookup reads it."""
    hint = hint_from_path(raw_path) if raw_path else None
    if isinstance(hint, VersionHint):
        return f"{hint.crate} {hint.version}"
    if hint is not None:
        return f"{hint.name} @{hint.rev}"
    return None


def repo_of(path: str | None, releases: ReleaseTable) -> str:
    """The repository that has a crate of that name (`crates/burn-fusion/...` is tracel-ai/burn)."""
    found = _CRATE_PATH.match(path or "")
    if not found:
        return ""
    repos = sorted(releases.repos_by_crate.get(found.group("crate"), ()))
    return repos[0] if len(repos) == 1 else ""


def prefill(group: GroupLike, releases: ReleaseTable) -> dict[str, str]:
    """The first values of the form: the message (numbers as `{}`), pattern, file, line, repo, release."""
    literals = _NUMBER.split(group.message)
    release = release_of(group.raw_path) or ""
    return {
        "errorMessage": "{}".join(literals),
        "messagePattern": "(.+?)".join(escape_literal(part) for part in literals),
        "filePath": group.path or "",
        "lineNumber": str(group.line or ""),
        "repo": repo_of(group.path, releases),
        "release": release,
        "severity": "error",
        "documentation": "",
        "triggerScenarios": "",
        "solutions": "",
        "exampleFix": "",
        "preventionTips": "",
        "tags": "",
    }


@dataclass(frozen=True)
class DraftResult:
    record: Record | None
    problems: tuple[str, ...]


def build_record(form: dict[str, str], now: datetime | None = None) -> DraftResult:
    """A schema-v2 record from the form, or the problems that stop it (named by field)."""
    values = {name: (form.get(name) or "").strip() for name in FIELDS}
    problems = [
        f"{name}: at most {FIELD_MAX_CHARS:,} characters ({len(value):,} given)"
        for name, value in values.items()
        if len(value) > FIELD_MAX_CHARS
    ]
    if problems:
        return DraftResult(None, tuple(problems))
    if not values["errorMessage"]:
        problems.append("errorMessage: required")
    line: int | None = None
    if values["lineNumber"]:
        if values["lineNumber"].isdigit() and int(values["lineNumber"]) > 0:
            line = int(values["lineNumber"])
        else:
            problems.append("lineNumber: a positive whole number")
    if values["messagePattern"]:
        # RE2, as the matcher runs it: no backreferences or lookarounds, and a program of bounded size (a
        # pattern that would backtrack for ever elsewhere is either linear here or refused as too large).
        reason = is_valid_pattern(values["messagePattern"])
        if reason:
            problems.append(f"messagePattern: RE2 cannot compile it ({reason})")
    if problems:
        return DraftResult(None, tuple(problems))
    repo, path, message = values["repo"] or None, values["filePath"] or None, values["errorMessage"]
    payload: dict[str, Any] = {
        "id": record_id(repo or "", path or "", message),
        "repo": repo,
        "slug": slug(message, is_format=True),
        "errorMessage": message,
        "messagePattern": values["messagePattern"] or None,
        "errorType": "panic",
        "severity": values["severity"] or None,
        "filePath": path,
        "lineNumber": line,
        "documentation": values["documentation"] or None,
        "triggerScenarios": values["triggerScenarios"] or None,
        "solutions": [s.strip() for s in values["solutions"].splitlines() if s.strip()],
        "exampleFix": values["exampleFix"] or None,
        "preventionTips": [t.strip() for t in values["preventionTips"].splitlines() if t.strip()],
        "tags": [t.strip() for t in values["tags"].split(",") if t.strip()],
        "analyzedAt": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "schemaVersion": 2,
    }
    if values["release"]:
        payload["release"] = values["release"]  # kept as an extra field: the release it was seen in
    try:
        record = Record.model_validate(payload)
    except ValidationError as exc:
        return DraftResult(None, tuple(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    return DraftResult(record, ())


def draft_line(record: Record) -> str:
    """The catalog line of a draft (`{"record": ..., "datasetVersion": ...}`), newline included."""
    payload = {
        "record": record.model_dump(mode="json", exclude_none=True),
        "datasetVersion": DRAFT_DATASET_VERSION,
    }
    return json.dumps(payload, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class DamagedTail:
    line: int
    """The line number the damaged text started at in the drafts file."""
    chars: int
    kept_in: Path


def set_aside_damaged_tail(path: Path) -> DamagedTail | None:
    """A last line without its newline (a write cut short) is moved to `PATH.damaged` and cut off the drafts
    file, so the next draft starts a line of its own. Returns where it went; None when the file is whole (or
    cannot be read: that is logged, and the next save says why it cannot write)."""
    try:
        with path.open("rb+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                return _set_aside(path, handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("drafts file %s: cannot be checked (%s)", path, exc.strerror or exc)
        return None


def _set_aside(path: Path, handle: Any) -> DamagedTail | None:
    data = handle.read()
    if not data or data.endswith(b"\n"):
        return None
    whole = data.rfind(b"\n") + 1
    tail = data[whole:]
    line = data.count(b"\n", 0, whole) + 1
    damaged = path.with_name(path.name + DAMAGED_SUFFIX)
    with damaged.open("ab") as kept:
        kept.write(f"# {path.name} line {line}, set aside:\n".encode() + tail + b"\n")
        kept.flush()
        os.fsync(kept.fileno())
    handle.truncate(whole)
    handle.flush()
    os.fsync(handle.fileno())
    log.warning(
        "drafts file %s: line %d was cut short (%d bytes, no newline); set aside in %s",
        path,
        line,
        len(tail),
        damaged,
    )
    return DamagedTail(line, len(tail), damaged)


def append_draft(path: Path, record: Record) -> int:
    """Append one catalog line; returns its line number. Locked and flushed to disk, so two maintainers saving
    at once never interleave a line; written whole or not at all (on a failed write the file is cut back to
    its size before, and `DraftWriteError` says why); a damaged last line is set aside first, never extended.
    """
    data = draft_line(record).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                _set_aside(path, handle)
                handle.seek(0)
                count = sum(1 for _ in handle)
                size = handle.seek(0, os.SEEK_END)
                try:
                    _write_all(handle.fileno(), data)
                    os.fsync(handle.fileno())
                except OSError:
                    _cut_back(handle.fileno(), size)
                    raise
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        raise DraftWriteError(f"{path}: the draft was not written ({reason})") from exc
    return count + 1


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _write_chunk(descriptor, view)
        view = view[written:]


def _write_chunk(descriptor: int, data: memoryview) -> int:
    """One `write(2)`: it may take part of the data, or fail after an earlier part was taken."""
    return os.write(descriptor, data)


def _cut_back(descriptor: int, size: int) -> None:
    try:
        os.ftruncate(descriptor, size)
        os.fsync(descriptor)
    except OSError:
        log.exception("drafts file could not be cut back after a failed write")
