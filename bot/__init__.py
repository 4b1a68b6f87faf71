"""panicbot's core: text in, matches and cards out. No network, no environment, no chat SDK.

What adapters may use is exported here; everything else is the core's own business."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bot.autocomplete import Autocomplete
from bot.card import Card, build_card, confidence_percent, context_line, render_markdown
from bot.extract import Panic
from bot.lookup import AnswerSite, PanicLookup, result_json
from bot.matcher import LookupResult, Match, Matcher, Reason
from bot.reading import PasteReading, read_paste
from bot.records import Catalog, Record, default_catalog, load_catalog
from bot.redact import redact

__all__ = [
    "AnswerSite",
    "Autocomplete",
    "Card",
    "Catalog",
    "Lookup",
    "LookupResult",
    "Match",
    "Matcher",
    "Panic",
    "PanicLookup",
    "PasteReading",
    "Reason",
    "Record",
    "build_card",
    "confidence_percent",
    "context_line",
    "default_catalog",
    "load_catalog",
    "read_paste",
    "redact",
    "render_markdown",
    "result_json",
]


class Lookup(Protocol):
    """What a chat adapter asks of a catalog: `PanicLookup`, or a stand-in that swaps catalogs while
    serving (the service's live catalog)."""

    @property
    def matcher(self) -> Matcher:
        """The index serving now (its `records` are the catalog's)."""

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        """The matches for a paste or typed words; never raises on text."""

    def lookup_reading(self, reading: PasteReading, limit: int = 5) -> LookupResult:
        """`lookup` of a paste already read by `read_paste` (a large one may be read in another process)."""

    def card(self, result: LookupResult, match: Match | None = None) -> Card | None:
        """The card for `match` (default: the answer); None when no known record answers."""

    def card_for_record(self, record_id: str, confidence: float, pasted: str | None = None) -> Card | None:
        """The card of a record named by id (a button pressed later); None when it is gone."""

    def record(self, record_id: str) -> Record | None:
        """The record of that id in the catalog serving now."""

    def suggest(self, current: str, limit: int = 25) -> list[Record]:
        """Records for what someone is typing (autocomplete), best first."""

    def record_ids(self) -> Iterable[str]:
        """Every record id of the catalog serving now, without reading its records (a prebuilt catalog
        reads a record from disk when asked for it)."""
