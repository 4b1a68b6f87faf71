"""A draft seen before it is written: the record as it would be saved, its card as Slack, Discord and GitHub
show it (with the limits check of `panicbot card`), what `catalog lint` would say of it in the served catalog,
and which stored unmatched panics it would answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.console.drafts import DRAFT_DATASET_VERSION
from adapters.console.previews import Preview, previews
from adapters.storage.console_queries import UnmatchedGroup
from bot.api_table import ApiTable, load_api_table
from bot.card import Card
from bot.lint import Finding, lint_draft
from bot.lookup import PanicLookup
from bot.records import Catalog, CatalogEntry, Record

# The most seen groups a preview tries the draft on (a lookup each, ~1 ms): the store's retention keeps far
# fewer in practice; past this the page says how many it tried.
GROUPS_TRIED = 5000


@dataclass(frozen=True)
class AnsweredPanic:
    group: UnmatchedGroup
    confidence: float
    unasked: bool
    """Whether the card would also be posted unasked in an auto-reply channel."""


@dataclass(frozen=True)
class DraftPreview:
    record: Record
    card: Card
    previews: list[Preview]
    findings: list[Finding]
    answered: list[AnsweredPanic]
    tried: int


class ApiTables:
    """The releases' public API for the example checks, read once (it takes seconds) on first use."""

    def __init__(self, catalog_paths: Sequence[str]) -> None:
        self._paths = list(catalog_paths) or ["default"]
        self._table: ApiTable | None = None
        self._lock = threading.Lock()

    def get(self) -> ApiTable:
        with self._lock:
            if self._table is None:
                self._table = load_api_table(self._paths)
            return self._table


def paste_of(group: UnmatchedGroup) -> str:
    """The stored panic as a paste again: its path as pasted (or the canonical one), line and message."""
    path = group.raw_path or group.path
    if not path:
        return f"thread 'main' panicked:\n{group.message}\n"
    return f"thread 'main' panicked at {path}:{group.line or 1}:1:\n{group.message}\n"


def answered_by(lookup: PanicLookup, record_id: str, groups: Sequence[UnmatchedGroup]) -> list[AnsweredPanic]:
    """The groups whose panic `lookup` (over the draft alone) answers with the draft."""
    found = []
    for group in groups:
        result = lookup.lookup(paste_of(group), 1)
        best = result.best
        if result.status == "matched" and best is not None and best.record.id == record_id:
            found.append(AnsweredPanic(group, best.confidence, result.auto_reply))
    return found


def preview_draft(
    record: Record,
    served: PanicLookup,
    groups: Sequence[UnmatchedGroup],
    api: Callable[[], ApiTable] | None = None,
) -> DraftPreview:
    """Everything the draft page shows of `record` before it is written. `served` is the live catalog: its
    release tables and families make the card, its records are the lint's context (a prebuilt catalog holds
    no entries: then only the draft's own checks and its id run)."""
    entry = CatalogEntry(record, DRAFT_DATASET_VERSION, "draft", 1)
    context = served.catalog
    alone = PanicLookup(Catalog(entries=[entry], releases=context.releases, families=context.families))
    card = alone.card_for_record(record.id, 1.0)
    assert card is not None  # the record is the one catalog entry
    return DraftPreview(
        record=record,
        card=card,
        previews=previews(card),
        findings=draft_findings(record, served, api),
        answered=answered_by(alone, record.id, groups),
        tried=len(groups),
    )


def draft_findings(
    record: Record, served: PanicLookup, api: Callable[[], ApiTable] | None = None
) -> list[Finding]:
    """What `catalog lint` would report of the draft in the served catalog (its own findings only)."""
    entry = CatalogEntry(record, DRAFT_DATASET_VERSION, "draft", 1)
    return lint_draft(
        entry,
        served.catalog,
        api() if api is not None else None,
        served.families,
        existing=served.record(record.id),
    )


def catalog_paths_of(settings: object) -> list[str]:
    """The served catalog's paths when the settings carry them (the service's do), else the embedded one."""
    paths = getattr(settings, "catalog_paths", None)
    return [str(path) for path in paths] if paths else ["default"]
