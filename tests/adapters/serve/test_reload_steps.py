"""A catalog reload never holds the interpreter for long in one go, so the event loop keeps answering while
it runs (bench/reload_latency.py measures /healthz during the reload of 100k records). Structural checks,
no timing: no garbage collection during a reload walks a catalog's objects, the retired catalog dies in
many steps with other threads running between them, and nothing of it is left to the cyclic collector."""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from adapters.serve import live_catalog
from adapters.serve.live_catalog import LONG_CONTAINER, LiveLookup, LoadReport, build_lookup, release_in_steps
from bot import PanicLookup

RECORDS = 4_000


def write_catalog(path: Path, records: int = RECORDS, tag: str = "widget") -> Path:
    """A catalog of distinct records over a few hundred files (the shape of a harvested catalog)."""
    lines = []
    for index in range(records):
        record = {
            "id": f"{tag}{index:012d}",
            "errorMessage": f"{tag} {index} failed to frobnicate the tensor of shape {{:?}} on device {{}}",
            "filePath": f"crates/burn-{tag}-{index % 40}/src/ops/module_{index % 300}.rs",
            "lineNumber": 10 + index % 997,
            "tags": ["rust", "burn", f"burn-{tag}-{index % 40}"],
            "solutions": [f"Check the shape of tensor {index}"] if index % 3 == 0 else [],
        }
        lines.append(json.dumps({"record": record, "datasetVersion": "test"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def heap() -> Iterator[None]:
    """The collector as a test found it, whatever the service froze or paused meanwhile."""
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def catalog_objects(path: Path) -> int:
    """How many objects the collector tracks for one built catalog and its index."""
    gc.collect()
    before = len(gc.get_objects())
    lookup = build_lookup([str(path)])[0]
    made = len(gc.get_objects()) - before
    del lookup
    gc.collect()
    return made


def test_no_collection_during_a_reload_walks_the_catalog(tmp_path: Path, heap: None) -> None:
    """A collection is one call that holds the interpreter for as long as it walks: over a catalog's
    objects, hundreds of milliseconds at 100k records. During a reload, each walks only a few objects."""
    catalog = write_catalog(tmp_path / "catalog.jsonl")
    size = catalog_objects(catalog)
    live = LiveLookup([str(catalog)])
    walked: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            walked.append(
                sum(len(gc.get_objects(generation)) for generation in range(info["generation"] + 1))
            )

    gc.callbacks.append(count)
    try:
        assert live.reload()
        catalog.write_text(catalog.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
        assert not live.reload()  # a refused catalog is let go the same way
    finally:
        gc.callbacks.remove(count)
    assert size > 20_000, size
    assert walked, "the reload collects what the rest of the process left"
    assert max(walked) < size // 4, (max(walked), size)


def test_the_retired_catalog_is_freed_a_record_or_two_per_instruction(
    tmp_path: Path, heap: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freed in one deallocation (a reference dropped, or a collection), a 100k-record catalog holds the
    interpreter 0.2-0.8 s. The interpreter switches threads only between two bytecode instructions: traced
    instruction by instruction once the new catalog is built, no single instruction frees more than a
    record or two of the old one."""
    live = LiveLookup([str(write_catalog(tmp_path / "catalog.jsonl"))])
    # Plain weak references: a callback (a WeakSet's) would run Python code inside the deallocation.
    sample = [weakref.ref(record) for record in live.current.matcher.records[:: RECORDS // 20]]
    drops: list[int] = []
    alive = [len(sample)]

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        now = sum(ref() is not None for ref in sample)
        drops.append(alive[0] - now)
        alive[0] = now
        return trace

    built = live_catalog.build_lookup

    def build_then_trace(paths: Sequence[str]) -> tuple[PanicLookup, LoadReport]:
        result = built(paths)
        caller = sys._getframe(1)
        caller.f_trace, caller.f_trace_opcodes = trace, True
        sys.settrace(trace)
        return result

    monkeypatch.setattr(live_catalog, "build_lookup", build_then_trace)
    try:
        assert live.reload()
    finally:
        sys.settrace(None)
    assert all(ref() is None for ref in sample)
    assert sum(drops) == len(sample) and max(drops) <= 2, f"{max(drops)} of {len(sample)} freed at once"


def test_nothing_of_a_retired_catalog_is_left_to_the_cyclic_collector(tmp_path: Path, heap: None) -> None:
    """The serving catalog is frozen and the collector never runs over it: a reference cycle left in a
    retired one would stay forever. The suggestion index (built on first use) holds one, and is freed."""
    live = LiveLookup([str(write_catalog(tmp_path / "catalog.jsonl"))])
    for _ in range(2):
        assert live.suggest("frobnicate", 3)  # the autocomplete index: a cache bound to its own method
        old = live.current
        dead = [weakref.ref(old), weakref.ref(old.matcher), weakref.ref(old.autocomplete)]
        dead += [weakref.ref(record) for record in old.matcher.records[::400]]
        del old
        gc.disable()
        assert live.reload()
        assert all(ref() is None for ref in dead), "the retired catalog is freed without the collector"
    gc.unfreeze()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        left = [item for item in gc.garbage if type(item).__module__.startswith(("bot.", "adapters."))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not left, left[:5]


def test_a_catalog_still_in_use_is_freed_in_steps_once_let_go(tmp_path: Path, heap: None) -> None:
    """A lookup in flight holds the old catalog, an adapter may keep its matcher: when they let go, it is
    freed by the service's releasing thread, not all at once by the last user (maybe the event loop)."""
    live = LiveLookup([str(write_catalog(tmp_path / "catalog.jsonl"))])
    for held in ("catalog", "matcher"):
        freed_by: list[str] = []
        old = live.current
        kept: Any = old if held == "catalog" else old.matcher
        watched = weakref.ref(kept, lambda _, into=freed_by: into.append(threading.current_thread().name))
        records = weakref.WeakSet(old.matcher.records)
        del old
        assert live.reload()
        assert watched() is not None and len(records) == RECORDS  # in use: untouched
        del kept
        deadline = time.monotonic() + 10
        while watched() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert freed_by == ["panicbot-catalog-release"], (held, freed_by)
        assert len(records) == 0


class Holder:
    def __init__(self, **parts: Any) -> None:
        self.__dict__.update(parts)
        self.cached = lru_cache(maxsize=8)(self.method)  # a reference cycle through a bound method

    def method(self, value: int) -> int:
        return value


class Item:
    def __init__(self, index: int) -> None:
        self.index = index
        self.parts = [index, str(index)]


def test_release_in_steps_frees_what_only_it_holds_and_touches_nothing_shared(heap: None) -> None:
    gc.disable()
    shared_long = list(range(LONG_CONTAINER * 3))  # also referenced from here: left as it is
    shared_small = {"kept": [1, 2, 3]}
    own_long = [Item(index) for index in range(LONG_CONTAINER * 3)]  # a catalog's data: no cycles
    own_table = {index: [index] * 3 for index in range(LONG_CONTAINER * 2)}
    sample = [weakref.ref(item) for item in own_long[::100]]
    root = Holder(shared=shared_long, small=shared_small, own=own_long, table=own_table, nested=[[own_long]])
    watched = weakref.ref(root)
    box: list[Any] = [root]
    del root, own_long, own_table
    held = release_in_steps(box)
    assert box == [] and held == [shared_long]  # long and used elsewhere: to be tried again later
    assert held[0] is shared_long
    del held
    assert watched() is None and all(ref() is None for ref in sample)
    assert shared_long == list(range(LONG_CONTAINER * 3)) and shared_small == {"kept": [1, 2, 3]}


def test_release_in_steps_leaves_a_catalog_in_use_untouched(heap: None) -> None:
    part = {index: [index] for index in range(LONG_CONTAINER * 2)}
    root = Holder(part=part, other=list(range(LONG_CONTAINER * 2)))
    in_use = root  # a lookup in flight
    box: list[Any] = [root]
    del root
    assert release_in_steps(box) == [in_use]
    assert len(in_use.part) == LONG_CONTAINER * 2 and len(in_use.other) == LONG_CONTAINER * 2
    held = release_in_steps([Holder(part=part)])  # the catalog let go, a part of it still in use
    assert held == [part] and len(part) == LONG_CONTAINER * 2
