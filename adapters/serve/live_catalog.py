"""The serving catalog, reloadable without a restart: a new index is built aside and swapped in at once.

A broken file keeps the old catalog serving and says exactly why. Handlers hold a `LiveLookup` and never see
a half-built index: the swap is one attribute assignment, and each call reads it once.

A reload runs in a thread, and none of its own steps holds the interpreter long, so the event loop keeps
answering meanwhile (bench/reload_latency.py probes /healthz during reloads of 100k records): the catalog is
built with the cyclic collector off and frozen as built (no collection ever walks it), and the retired
catalog is freed item by item (`release_in_steps`), not in one deallocation cascade.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.cli.prebuilt_commands import PrebuiltUsageError, is_prebuilt_path, open_prebuilt
from adapters.default_cache import open_default_lookup
from adapters.serve.logs import log_summary
from bot import Card, Lookup, LookupResult, Match, Matcher, PanicLookup, PasteReading, Record
from bot.records import Catalog, catalog_files, load_catalog
from bot.regular_files import first_irregular_path

log = logging.getLogger("panicbot.catalog")


class CatalogLoadError(Exception):
    """A catalog that cannot serve: no usable record at all, or a prebuilt file refused (stale, damaged)."""


@dataclass(frozen=True)
class LoadReport:
    records: int
    problems: list[str]
    sources: list[str]


def build_lookup(paths: Sequence[str]) -> tuple[PanicLookup, LoadReport]:
    """A PanicLookup over `paths` (the embedded data set when empty); bad lines are reported, not fatal.
    A prebuilt catalog (`.pbcat`, named alone) is loaded as built: a refused one (stale, damaged) is a
    CatalogLoadError saying why, as is a path that names a FIFO, a device or a socket (never opened)."""
    irregular = first_irregular_path(paths)
    if irregular is not None:
        raise CatalogLoadError(irregular)
    if any(is_prebuilt_path(path) for path in paths):
        try:
            lookup = open_prebuilt(paths)
        except PrebuiltUsageError as exc:
            raise CatalogLoadError(str(exc)) from None
        return lookup, LoadReport(len(lookup.matcher), [], [str(paths[0])])
    if not paths:
        # The embedded data set, prebuilt once in the user's cache folder (adapters/default_cache.py: any
        # problem with the cache falls back to the JSONL).
        lookup = open_default_lookup(os.environ)
        return lookup, LoadReport(len(lookup.matcher), [], ["embedded default data set"])
    catalog: Catalog = load_catalog(paths)
    problems = [str(problem) for problem in catalog.errors]
    # One line however many: a catalog built by concatenation can hold tens of thousands of duplicates.
    log_summary(log, logging.WARNING, "duplicate ids in the catalog (later records kept)", catalog.duplicates)
    if not catalog.entries:
        raise CatalogLoadError("; ".join(problems[:5]) or "no record found")
    return PanicLookup(catalog), LoadReport(len(catalog.entries), problems, list(paths))


def _fingerprint(paths: Sequence[str]) -> tuple[tuple[str, int, int, int, int], ...]:
    """What changes when a catalog file is edited, added, removed or replaced (renamed over, by a file or
    by something that is not one: a FIFO, a device, which a reload then refuses)."""
    found = []
    for raw in paths:
        path = Path(raw)
        try:
            files = catalog_files(path)
        except OSError:
            continue
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                continue
            found.append((str(file), stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_mode))
    return tuple(found)


# A retired catalog's containers are emptied item by item (the interpreter may switch threads between two
# items), and its walked objects dropped this many at a time.
RELEASE_STEP = 1_000
# A container this long is emptied in steps rather than walked (its items are the catalog's data).
LONG_CONTAINER = 1_000
# The objects of a retired catalog's structure walked at most (the index's objects and containers).
WALK_LIMIT = 100_000
# A retired catalog still held elsewhere (a lookup in flight, an adapter's reference) is tried again this
# often, and given up after this long (its last holder then frees it).
RELEASE_RETRY_SECONDS = 0.05
RELEASE_PATIENCE_SECONDS = 600.0
# Never walked into nor emptied: code and the program's shared objects, not a catalog's.
_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    types.CellType,
    types.MappingProxyType,
)


def _trimmer() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, where there is one (through ctypes, which lets go of the interpreter while
    it runs: 40 ms after a 100k-record catalog)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _trimmer()


def return_freed_memory() -> None:
    """Give the memory of a freed catalog back to the system: without it the process keeps the peak of
    two catalogs (1.9 GB instead of 1.0 GB at 100k records, VmRSS)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while a catalog is built, until it is frozen (`gc.freeze`, constant time)
    or released in steps: no collection ever walks a catalog's objects. A collection is one call that
    holds the interpreter, 0.3-0.8 s over a 100k-record catalog (bot.records.gc_paused, inside, sees the
    collector off and leaves it so). What the rest of the process left is collected first: with the serving
    catalog frozen, that walks only the objects made since."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def release_in_steps(box: list[Any], step: int = RELEASE_STEP) -> list[Any]:
    """Free the object `box` holds (the box is emptied: it must hold the only reference the caller has)
    and everything only it holds, a few objects at a time, so that no single deallocation runs over a whole
    catalog.

    What it holds is walked (`gc.get_referents`; long containers are not entered) and, as the cyclic
    collector decides, an object is garbage when all its references come from the walked objects and no
    object referenced from elsewhere reaches it. Garbage containers and instance dictionaries are emptied
    in steps, which also breaks any reference cycle among them. Returns what is still referenced from
    elsewhere (a lookup in flight holds the catalog, an adapter kept its matcher): the caller tries again
    later, so that the last holder does not free it all in one go, maybe on the event loop."""
    objects: list[Any] = [box.pop()]
    edges = _walk(objects)
    outside = _outside_references(objects, edges)
    if outside != _outside_references(objects, edges):
        return objects[:1]  # another thread was busy with these objects: try again later
    alive = _reached(outside, edges)
    if alive[0]:
        return objects[:1]  # the catalog itself is still held: nothing is touched
    # Kept for a later try: what is held elsewhere and reaches a long container (a matcher an adapter kept),
    # not a small object shared with the rest of the program.
    held = [objects[index] for index in _heavy([count > 0 for count in outside], objects, edges)]
    del edges
    for index, live in enumerate(alive):
        if not live:
            _empty(objects[index], step)
    while objects:
        del objects[-step:]
    return held


def _walk(objects: list[Any]) -> list[list[int]]:
    """Adds to `objects` what its first object references, transitively; the references, by position."""
    position = {id(objects[0]): 0}
    edges: list[list[int]] = []
    while len(edges) < len(objects):
        targets: list[int] = []
        current = objects[len(edges)]
        edges.append(targets)
        if len(edges) > WALK_LIMIT or _long(current):
            continue
        for child in gc.get_referents(current):
            if isinstance(child, _OPAQUE) or not gc.is_tracked(child):
                continue
            found = position.get(id(child))
            if found is None:
                found = position[id(child)] = len(objects)
                objects.append(child)
            targets.append(found)
    return edges


def _outside_references(objects: list[Any], edges: list[list[int]]) -> list[int]:
    """Per object, its references that come from elsewhere than the walked objects (and this list)."""
    counts = [sys.getrefcount(objects[index]) - 2 for index in range(len(objects))]  # the list, the argument
    for targets in edges:
        for target in targets:
            counts[target] -= 1
    return counts


def _reached(outside: list[int], edges: list[list[int]]) -> list[bool]:
    """Per object, True when an object referenced from elsewhere reaches it."""
    alive = [count > 0 for count in outside]
    pending = [index for index, live in enumerate(alive) if live]
    while pending:
        for target in edges[pending.pop()]:
            if not alive[target]:
                alive[target] = True
                pending.append(target)
    return alive


def _heavy(roots: list[bool], objects: list[Any], edges: list[list[int]]) -> list[int]:
    """The roots that reach a long container."""
    heavy = []
    for root in (index for index, is_root in enumerate(roots) if is_root):
        seen = {root}
        pending = [root]
        while pending:
            current = pending.pop()
            if _long(objects[current]):
                heavy.append(root)
                break
            for target in edges[current]:
                if target not in seen:
                    seen.add(target)
                    pending.append(target)
    return heavy


def _long(item: object) -> bool:
    return isinstance(item, list | dict | set | frozenset | tuple) and len(item) >= LONG_CONTAINER


def _empty(item: object, step: int) -> None:
    """Drop what a garbage object references, one item at a time; a long container that only it held is
    emptied the same way before it goes."""
    if isinstance(item, list):
        while item:
            for _ in range(min(step, len(item))):
                value = item.pop()
                if _long(value) and sys.getrefcount(value) == 2:  # this variable, the argument
                    _empty(value, step)
                del value
    elif isinstance(item, dict):
        while item:
            for _ in range(min(step, len(item))):
                _, value = item.popitem()
                if _long(value) and sys.getrefcount(value) == 2:
                    _empty(value, step)
                del value
    elif isinstance(item, set):
        while item:
            for _ in range(min(step, len(item))):
                item.pop()
    else:
        attributes = getattr(item, "__dict__", None)
        if type(attributes) is dict:
            _empty(attributes, step)


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
        self._reloading = threading.Lock()  # one reload at a time: two would hold three catalogs
        self._retired: list[tuple[float, list[Any]]] = []  # (given up at, [what is still held elsewhere])
        self._retired_lock = threading.Lock()
        self._releaser: threading.Thread | None = None
        with collector_paused():
            self.current, report = build_lookup(self.paths)
            # Frozen out of the collector: the catalog and its index are millions of long-lived objects,
            # and without this every full collection walks them all, pausing a lookup for tens to hundreds
            # of milliseconds months into a run. Reference counting still frees frozen objects.
            gc.freeze()
        self._fingerprint = _fingerprint(self.paths)
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

    def record_ids(self) -> Iterable[str]:
        return self.current.record_ids()

    def _announce(self, report: LoadReport) -> None:
        log_summary(log, logging.WARNING, "problems in the catalog (lines skipped)", report.problems)
        log.info("catalog serving %d records from %s", report.records, ", ".join(report.sources))
        if self._on_loaded is not None:
            self._on_loaded(self.current, report)

    def reload(self) -> bool:
        """Build the catalog again and swap it in; on failure keep serving the old one. True if swapped.
        Runs in a thread: no step of it holds the interpreter long (see the module's docstring)."""
        with self._reloading:
            return self._reload()

    def _reload(self) -> bool:
        try:
            with collector_paused():
                fresh, report = build_lookup(self.paths)
                if report.problems:
                    # Let go while the collector is off: its first young collection would walk it all.
                    refused = [fresh]
                    del fresh
                    self._release(refused, "refused catalog")
                else:
                    gc.freeze()
        except Exception as exc:  # whatever a file makes a reload raise, it is refused
            # A refusal, whatever it is: a CatalogLoadError says why; anything else (a damaged file that
            # got past the reader's checks, no memory left) is named by its class. The old catalog keeps
            # serving and the watcher waits for the next change.
            self._fingerprint = _fingerprint(self.paths)
            if self._on_refused is not None:
                self._on_refused()
            why = str(exc) if isinstance(exc, CatalogLoadError | OSError) else f"{type(exc).__name__}: {exc}"
            log.error("catalog reload failed, still serving the previous catalog: %s", why)
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
        retired = [self.current]
        self.current = fresh
        del fresh
        self._fingerprint = _fingerprint(self.paths)
        self._announce(report)
        self._release(retired, "previous catalog")
        return True

    def _release(self, box: list[Any], what: str) -> None:
        """Free a catalog no longer served, in steps (`release_in_steps`); what is still held elsewhere is
        tried again in the background until its holders let go."""
        started = time.monotonic()
        held = release_in_steps(box)
        if not held:
            return_freed_memory()
            log.info("%s freed in %.2f s", what, time.monotonic() - started)
            return
        log.info("%s still in use: freed once its users let go", what)
        with self._retired_lock:
            self._retired.append((started + RELEASE_PATIENCE_SECONDS, held))
            if self._releaser is None or not self._releaser.is_alive():
                self._releaser = threading.Thread(
                    target=self._release_later, name="panicbot-catalog-release", daemon=True
                )
                self._releaser.start()

    def _release_later(self) -> None:
        wait = RELEASE_RETRY_SECONDS
        while True:
            time.sleep(wait)
            wait = min(wait * 2, 5.0)
            with self._retired_lock:
                if not self._retired:
                    self._releaser = None
                    return
                deadline, held = self._retired.pop(0)
            still: list[Any] = []
            while held:
                box = [held.pop()]
                still.extend(release_in_steps(box))
            if not still:
                return_freed_memory()
                log.info("previous catalog freed")
                wait = RELEASE_RETRY_SECONDS
            elif time.monotonic() < deadline:
                with self._retired_lock:
                    self._retired.append((deadline, still))
            else:
                log.warning(
                    "previous catalog still in use after %.0f s: left to its users", RELEASE_PATIENCE_SECONDS
                )

    def changed_on_disk(self) -> bool:
        return bool(self.paths) and _fingerprint(self.paths) != self._fingerprint

    async def watch(self, interval: float = 5.0) -> None:
        """Reload when a catalog file changes (polled: works on every filesystem, mounts included)."""
        while True:
            await asyncio.sleep(interval)
            try:
                if self.changed_on_disk():
                    log.info("catalog files changed on disk: reloading")
                    await asyncio.to_thread(self.reload)
            except Exception as exc:  # the watcher never dies: the next change is tried
                log.error("catalog watcher: %s: %s; still watching", type(exc).__name__, exc)

    def install_sighup(self, loop: asyncio.AbstractEventLoop) -> None:
        """`kill -HUP` reloads; the build runs in a thread so replies keep flowing meanwhile."""

        def on_sighup() -> None:
            log.info("SIGHUP: reloading the catalog")
            loop.create_task(asyncio.to_thread(self.reload))

        try:
            loop.add_signal_handler(signal.SIGHUP, on_sighup)
        except (NotImplementedError, RuntimeError, AttributeError):  # not on this platform
            log.info("SIGHUP reload is not available here")
