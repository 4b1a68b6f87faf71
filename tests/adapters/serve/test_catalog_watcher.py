"""The catalog watcher never dies: whatever a reload raises is a refusal (one log line, counted in
reloads_total{refused}, the previous catalog still serving), and the next change is picked up. Each
damaged kind of `.pbcat` (and a FIFO, a device) renamed over the watched file, then a good one."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sized
from pathlib import Path

import aiohttp
import pytest

from adapters.serve import live_catalog
from adapters.serve.live_catalog import LiveLookup
from adapters.serve.main import Service
from bot.prebuilt import PrebuiltError
from tests.adapters.serve.test_service import settings, started, stopped
from tests.support.damaged_pbcat import FOUND_AT_LOOKUP, damaged_kinds, small_prebuilt_bytes
from tests.support.local_only import isolate

POLL = 0.02


def renamed_over(target: Path, make: Callable[[Path], object]) -> None:
    """What `make` writes at a temporary name, renamed over `target` (as `catalog build` and deploy tools
    replace a file)."""
    partial = target.with_name(f".{target.name}.partial")
    make(partial)
    os.replace(partial, target)


async def until(condition: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    for _ in range(int(seconds / POLL)):
        if condition():
            return
        await asyncio.sleep(POLL)
    raise AssertionError(f"not seen after {seconds} s: {what}")


async def grown(items: Sized, beyond: int, what: str) -> None:
    await until(lambda: len(items) > beyond, what)


def test_every_damaged_kind_is_refused_and_the_next_good_file_is_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good, pastes = small_prebuilt_bytes(tmp_path)
    path = tmp_path / "catalog.pbcat"
    path.write_bytes(good)
    refused: list[int] = []
    loaded: list[int] = []  # a count: holding the catalogs would keep the retired ones alive
    live = LiveLookup(
        [str(path)], on_loaded=lambda lookup, _: loaded.append(1), on_refused=lambda: refused.append(1)
    )
    want = live.current.answer_json(live.lookup(pastes[0]))
    kinds: dict[str, Callable[[Path], object]] = {
        name: (lambda partial, data=data: partial.write_bytes(data))
        for name, data in damaged_kinds(good).items()
    }
    kinds["a FIFO"] = os.mkfifo
    kinds["/dev/zero"] = lambda partial: partial.symlink_to("/dev/zero")

    async def scenario() -> None:
        watcher = asyncio.create_task(live.watch(interval=POLL))
        try:
            for name, make in kinds.items():
                before_refused, before_loaded = len(refused), len(loaded)
                serving = live.current
                renamed_over(path, make)
                if name in FOUND_AT_LOOKUP:
                    # Loaded (nothing at load shows it), then each lookup that meets it is refused.
                    await grown(loaded, before_loaded, f"{name} loaded")
                    with pytest.raises(PrebuiltError, match="rebuild it with"):
                        live.current.answer_json(live.lookup(pastes[0]))
                    before_loaded += 1
                else:
                    await grown(refused, before_refused, f"{name} refused")
                    assert live.current is serving and len(loaded) == before_loaded, name
                    assert live.current.answer_json(live.lookup(pastes[0])) == want, name
                assert not watcher.done(), f"the watcher died on {name}"
                renamed_over(path, lambda partial: partial.write_bytes(good))
                await grown(loaded, before_loaded, f"the good file after {name}")
                assert live.current is not serving
                assert live.current.answer_json(live.lookup(pastes[0])) == want
        finally:
            watcher.cancel()

    with caplog.at_level(logging.ERROR, logger="panicbot.catalog"):
        asyncio.run(scenario())
    # Each damaged kind refused once, by the reload (those only a lookup meets, by that lookup).
    assert len(refused) == len(kinds) - len(FOUND_AT_LOOKUP)
    failures = [record.getMessage() for record in caplog.records if "reload failed" in record.getMessage()]
    assert len(failures) == len(refused)
    assert all("\n" not in message and str(path) in message for message in failures)


def test_an_unexpected_error_of_a_reload_is_a_refusal_and_the_watcher_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only the errors the reader knows: a MemoryError (or any bug) in a reload was the end of the
    watcher, silently, and no later change was picked up."""
    good, pastes = small_prebuilt_bytes(tmp_path)
    path = tmp_path / "catalog.pbcat"
    path.write_bytes(good)
    refused: list[int] = []
    loaded: list[int] = []  # a count: holding the catalogs would keep the retired ones alive
    live = LiveLookup(
        [str(path)], on_loaded=lambda lookup, _: loaded.append(1), on_refused=lambda: refused.append(1)
    )
    real = live_catalog.build_lookup
    failing = {"on": True}

    def build_lookup(paths: list[str]) -> object:
        if failing["on"]:
            raise MemoryError("no memory left for the index")
        return real(paths)

    monkeypatch.setattr(live_catalog, "build_lookup", build_lookup)

    async def scenario() -> None:
        watcher = asyncio.create_task(live.watch(interval=POLL))
        try:
            serving = live.current
            renamed_over(path, lambda partial: partial.write_bytes(good))
            await until(lambda: refused == [1], "the reload refused")
            assert not watcher.done() and live.current is serving
            assert live.lookup(pastes[0]).best is not None  # still serving
            failing["on"] = False
            renamed_over(path, lambda partial: partial.write_bytes(good))
            await until(lambda: len(loaded) == 2, "the next change picked up")
            assert live.current is not serving
        finally:
            watcher.cancel()

    with caplog.at_level(logging.ERROR, logger="panicbot.catalog"):
        asyncio.run(scenario())
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == [
        "catalog reload failed, still serving the previous catalog: MemoryError: no memory left for the index"
    ]


def test_the_watcher_survives_an_error_of_its_own_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    good, _ = small_prebuilt_bytes(tmp_path)
    path = tmp_path / "catalog.pbcat"
    path.write_bytes(good)
    loaded: list[int] = []  # a count: holding the catalogs would keep the retired ones alive
    live = LiveLookup([str(path)], on_loaded=lambda lookup, _: loaded.append(1))
    polls = {"count": 0}
    real = LiveLookup.changed_on_disk

    def changed_on_disk(self: LiveLookup) -> bool:
        polls["count"] += 1
        if polls["count"] <= 2:
            raise OSError("stale NFS handle")
        return real(self)

    monkeypatch.setattr(LiveLookup, "changed_on_disk", changed_on_disk)

    async def scenario() -> None:
        watcher = asyncio.create_task(live.watch(interval=POLL))
        try:
            await until(lambda: polls["count"] > 2, "polls after the errors")
            renamed_over(path, lambda partial: partial.write_bytes(good))
            await until(lambda: len(loaded) == 2, "the change picked up")
        finally:
            watcher.cancel()

    with caplog.at_level(logging.ERROR, logger="panicbot.catalog"):
        asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("catalog watcher:")] == [
        "catalog watcher: OSError: stale NFS handle; still watching"
    ] * 2


def test_the_service_counts_each_refused_reload_and_serves_the_next_good_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`panicbot serve` watching a .pbcat: a damaged file and an unexpected error of a reload are each one
    more `panicbot_catalog_reloads_total{outcome="refused"}`, /readyz still answers with the old catalog,
    and a good file after them is loaded."""
    isolate(monkeypatch, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "PANICBOT_CATALOG", "DISCORD_TOKEN")
    good, _ = small_prebuilt_bytes(tmp_path)
    kinds = damaged_kinds(good)
    path = tmp_path / "catalog.pbcat"
    path.write_bytes(good)
    real = live_catalog.build_lookup
    failing = {"on": False}

    def build_lookup(paths: list[str]) -> object:
        if failing["on"]:
            raise MemoryError("no memory left for the index")
        return real(paths)

    monkeypatch.setattr(live_catalog, "build_lookup", build_lookup)

    async def metric(http: aiohttp.ClientSession, base: str, outcome: str) -> float:
        async with http.get(f"{base}/metrics") as response:
            text = await response.text()
        line = f'panicbot_catalog_reloads_total{{outcome="{outcome}"}} '
        return next((float(row.removeprefix(line)) for row in text.splitlines() if row.startswith(line)), 0.0)

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(path), panicbot_catalog_watch_seconds=POLL), [])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/readyz") as response:
                records = (await response.json())["records"]
            renamed_over(path, lambda partial: partial.write_bytes(kinds["pickle frame of 2**50"]))
            await wait_for_metric(http, base, "refused", 1.0)
            failing["on"] = True
            renamed_over(path, lambda partial: partial.write_bytes(good))
            await wait_for_metric(http, base, "refused", 2.0)
            async with http.get(f"{base}/readyz") as response:
                assert response.status == 200 and (await response.json())["records"] == records > 0
            failing["on"] = False
            loaded = await metric(http, base, "loaded")
            renamed_over(path, lambda partial: partial.write_bytes(good))
            await wait_for_metric(http, base, "loaded", loaded + 1)
        await stopped(service, task)

    async def wait_for_metric(http: aiohttp.ClientSession, base: str, outcome: str, value: float) -> None:
        for _ in range(int(20 / POLL)):
            if await metric(http, base, outcome) >= value:
                return
            await asyncio.sleep(POLL)
        raise AssertionError(f"reloads_total{{{outcome}}} never reached {value}")

    asyncio.run(scenario())
