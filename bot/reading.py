"""A paste read once: the panics in it and the versions it declares. Reading is the part of a lookup whose
cost grows with the paste (a megabyte of log costs milliseconds); the result is small, pure data that can be
made in another process and looked up against a catalog here (`PanicLookup.lookup_reading`)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.extract import Extraction, extract
from bot.releases import VersionHint, hints_in_text


@dataclass(frozen=True)
class PasteReading:
    """`extraction`: the panics found (`bot.extract.extract`); `version_hints`: Cargo.lock entries and
    Cargo.toml dependency lines the paste holds, None when they were not read (a catalog without releases
    has no use for them)."""

    extraction: Extraction
    version_hints: tuple[VersionHint, ...] | None


def read_paste(text: str, *, versions: bool = True) -> PasteReading:
    """Read `text` once; `versions=False` skips the declared versions. Never raises on text."""
    return PasteReading(extract(text), tuple(hints_in_text(text)) if versions else None)
