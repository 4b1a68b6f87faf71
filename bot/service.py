"""The one object adapters hold: a catalog, its index, cards, and the JSON shape of a lookup."""

from __future__ import annotations

from typing import Any

from bot.card import Card, build_card
from bot.extract import Panic
from bot.lint import analysis_is_suspect
from bot.matcher import LookupResult, Match, Matcher
from bot.records import Catalog, Record


class PanicLookup:
    """Built once per catalog at start-up; `lookup` and `card` are cheap and never raise on text."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.matcher = Matcher(catalog.records)
        self._versions = {entry.record.id: entry.dataset_version for entry in catalog.entries}
        self._positions = {record.id: index for index, record in enumerate(self.matcher.records)}
        self.under_review = frozenset(r.id for r in self.matcher.records if analysis_is_suspect(r))

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        return self.matcher.lookup(text, limit=limit)

    def dataset_version(self, record_id: str) -> str | None:
        return self._versions.get(record_id)

    def record(self, record_id: str) -> Record | None:
        position = self._positions.get(record_id)
        return None if position is None else self.matcher.records[position]

    def card_for_record(self, record_id: str, confidence: float, pasted: str | None = None) -> Card | None:
        """The card of a record named by id (a button pressed later), or None when it is gone."""
        position = self._positions.get(record_id)
        if position is None:
            return None
        record = self.matcher.records[position]
        match = Match(record, 0.0, confidence, (), 0, True, position)
        return build_card(
            match, pasted, self.dataset_version(record_id), under_review=record_id in self.under_review
        )

    def card(self, result: LookupResult, match: Match | None = None) -> Card | None:
        """The card for `match` (default: the answer); None when the paste has no known record."""
        chosen = match or result.best
        if chosen is None:
            return None
        panic = result.panics[chosen.panic_index] if chosen.panic_index < len(result.panics) else None
        pasted = panic.message if panic is not None and panic.kind != "query" else None
        record_id = chosen.record.id
        return build_card(
            chosen, pasted, self.dataset_version(record_id), under_review=record_id in self.under_review
        )


def panic_json(panic: Panic) -> dict[str, Any]:
    location = panic.location
    return {
        "message": panic.message,
        "path": location.path if location else None,
        "raw_path": location.raw_path if location else None,
        "line": location.line if location else None,
        "column": location.column if location else None,
        "thread": panic.thread,
        "thread_id": panic.thread_id,
        "kind": panic.kind,
        "frames": len(panic.frames),
    }


def match_json(match: Match) -> dict[str, Any]:
    record = match.record
    return {
        "record_id": record.id,
        "score": match.score,
        "confidence": match.confidence,
        "known": match.known,
        "panic": match.panic_index,
        "message": record.errorMessage,
        "file": record.filePath,
        "line": record.lineNumber,
        "reasons": [
            {
                "signal": reason.signal,
                "detail": reason.detail,
                "span": list(reason.span) if reason.span else None,
                "matched_text": reason.matched_text,
            }
            for reason in match.reasons
        ],
    }


def result_json(result: LookupResult) -> dict[str, Any]:
    """The `--json` shape: what was extracted, the ranked matches, and whether to post unasked."""
    return {
        "status": result.status,
        "answer_panic": result.answer_panic,
        "auto_reply": result.auto_reply,
        "panics": [panic_json(panic) for panic in result.panics],
        "matches": [match_json(match) for match in result.matches],
    }
