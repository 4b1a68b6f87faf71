"""The serving catalog, reloadable without a restart: a new index is built aside and swapped in at once.

A broken file keeps the old catalog serving and says exactly why. Handlers hold a `LiveLookup` and never see
a half-built index: the swap is one attribute assignment, and each call reads it once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.serve.logs import log_summary
from bot import Card, Lookup, LookupResult, Match, Matcher, PanicLookup, PasteReading, Record
from bot.records import Catalog, catalog_files, default_catalog, load_catalog

log = logging.getLogger("panicbot.catalog")


class CatalogLoadError(Exception):
    """A catalog that cannot serve: no usable record at all."""


@dataclass(frozen=True)
class LoadReport:
    records: int
    problems: list[str]
    sources: list[str]


def build_lookup(paths: Sequence[str]) -> tuple[PanicLookup, LoadReport]:
    """A PanicLookup over `paths` (the embedded data set when empty); bad lines are reported, not fatal."""
    catalog: Catalog = load_catalog(paths) if paths else default_catalog()
    problems = [str(problem) for problem in catalog.errors]
    # One line however many: a catalog built by concatenation can hold tens of thousands of duplicates.
    log_summary(log, logging.WARNING, "duplicate ids in the catalog (later records kept)", catalog.duplicates)
    if not catalog.entries:
        raise CatalogLoadError("; ".join(problems[:5]) or "no record found")
    sources = list(paths) or ["embedded default data set"]
    return PanicLookup(catalog), LoadReport(len(catalog.entries), problems, sources)


def _fingerprint(paths: Sequence[str]) -> tuple[tuple[str, float, int], ...]:
    """What changes when a catalog file is edited, added or removed."""
    found = []
    for raw in paths:
        path = Path(raw)
        files = catalog_files(path)
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                continue
            if file.is_file():
                found.append((str(file), stat.st_mtime, stat.st_size))
    return tuple(found)


def settle_heap() -> None:
    """Collect what the previous catalog left, then freeze what is alive: a catalog and its index are
    millions of long-lived objects, and without this every full collection walks them all, pausing a
    lookup for tens to hundreds of milliseconds months into a run. Reference counting still frees
    frozen objects; a cycle among them waits for the next reload, which unfreezes first."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class LiveLookup(Lookup):
    """A `Lookup` over whichever catalog is serving now: each call reads `current` once, so it never mixes
    two catalogs."""

    def __init__(
        self,
        paths: Sequence[str],
        on_loaded: Callable[[PanicLookup, LoadReport], None] | None = None,
        on_refused: Callable[[], None] | None = None,
    ) -> None:
        self.paths = list(paths)
        self._on_loaded = on_loaded
        self._on_refused = on_refused
        self.current, report = build_lookup(self.paths)
        self._fingerprint = _fingerprint(self.paths)
        settle_heap()
        self._announce(report)

    @property
    def matcher(self) -> Matcher:
        return self.current.matcher

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        return self.current.lookup(text, limit=limit)

    def lookup_reading(self, reading: PasteReading, limit: int = 5) -> LookupResult:
        return self.current.lookup_reading(reading, limit=limit)

    def card(self, result: LookupResult, match: Match | None = None) -> Card | None:
        return self.current.card(result, match)

    def card_for_record(self, record_id: str, confidence: float, pasted: str | None = None) -> Card | None:
        return self.current.card_for_record(record_id, confidence, pasted)

    def record(self, record_id: str) -> Record | None:
        return self.current.record(record_id)

    def suggest(self, current: str, limit: int = 25) -> list[Record]:
        return self.current.suggest(current, limit)

    def _announce(self, report: LoadReport) -> None:
        log_summary(log, logging.WARNING, "problems in the catalog (lines skipped)", report.problems)
        log.info("catalog serving %d records from %s", report.records, ", ".join(report.sources))
        if self._on_loaded is not None:
            self._on_loaded(self.current, report)

    def reload(self) -> bool:
        """Build the catalog again and swap it in; on failure keep serving the old one. True if swapped."""
        try:
            fresh, report = build_lookup(self.paths)
        except (CatalogLoadError, OSError) as exc:
            self._fingerprint = _fingerprint(self.paths)
            if self._on_refused is not None:
                self._on_refused()
            log.error("catalog reload failed, still serving the previous catalog: %s", exc)
            return False
        if report.problems:
            # A file caught mid-save or a bad edit: serving it would silently drop records. Remember the
            # files as seen, so the watcher waits for the next change instead of failing every poll.
            self._fingerprint = _fingerprint(self.paths)
            if self._on_refused is not None:
                self._on_refused()
            log.error(
                "catalog reload refused, still serving the previous catalog: %d problem(s), first: %s",
                len(report.problems),
                report.problems[0],
            )
            return False
        self.current = fresh
        del fresh
        self._fingerprint = _fingerprint(self.paths)
        settle_heap()
        self._announce(report)
        return True

    def changed_on_disk(self) -> bool:
        return bool(self.paths) and _fingerprint(self.paths) != self._fingerprint

    async def watch(self, interval: float = 5.0) -> None:
        """Reload when a catalog file changes (polled: works on every filesystem, mounts included)."""
        while True:
            await asyncio.sleep(interval)
            if self.changed_on_disk():
                log.info("catalog files changed on disk: reloading")
                await asyncio.to_thread(self.reload)

    def install_sighup(self, loop: asyncio.AbstractEventLoop) -> None:
        """`kill -HUP` reloads; the build runs in a thread so replies keep flowing meanwhile."""

        def on_sighup() -> None:
            log.info("SIGHUP: reloading the catalog")
            loop.create_task(asyncio.to_thread(self.reload))

        try:
            loop.add_signal_handler(signal.SIGHUP, on_sighup)
        except (NotImplementedError, RuntimeError, AttributeError):  # not on this platform
            log.info("SIGHUP reload is not available here")
