"""Records drafted in the console: pre-filled from an unmatched panic, checked as schema v2 and by `catalog
lint`, appended to a drafts file (JSONL) for `catalog lint` / `catalog merge`, never to the live catalog."""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from adapters.console.queries_types import GroupLike
from bot.harvest import record_id, slug
from bot.lint import Finding, lint_catalog
from bot.records import Catalog, CatalogEntry, Record
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
    findings: tuple[Finding, ...] = ()


def build_record(form: dict[str, str], now: datetime | None = None) -> DraftResult:
    """A schema-v2 record from the form, or the problems that stop it (named by field)."""
    values = {name: (form.get(name) or "").strip() for name in FIELDS}
    problems = []
    if not values["errorMessage"]:
        problems.append("errorMessage: required")
    line: int | None = None
    if values["lineNumber"]:
        if values["lineNumber"].isdigit() and int(values["lineNumber"]) > 0:
            line = int(values["lineNumber"])
        else:
            problems.append("lineNumber: a positive whole number")
    if values["messagePattern"]:
        try:
            re.compile(values["messagePattern"])
        except re.error as exc:
            problems.append(f"messagePattern: not a regular expression ({exc})")
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
    catalog = Catalog(entries=[CatalogEntry(record, DRAFT_DATASET_VERSION, "draft", 1)])
    return DraftResult(record, (), tuple(lint_catalog(catalog)))


def append_draft(path: Path, record: Record) -> int:
    """Append one catalog line (`{"record": ..., "datasetVersion": ...}`); returns its line number. Locked and
    flushed to disk, so two maintainers saving at once never interleave a line."""
    line = json.dumps(
        {
            "record": record.model_dump(mode="json", exclude_none=True),
            "datasetVersion": DRAFT_DATASET_VERSION,
        },
        ensure_ascii=False,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            count = sum(1 for _ in handle)
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return count + 1
