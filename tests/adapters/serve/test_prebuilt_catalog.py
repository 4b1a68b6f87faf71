"""`panicbot serve` with a prebuilt catalog (`PANICBOT_CATALOG=catalog.pbcat`): served as built, reloaded
when the file is replaced, refused with the reason when stale or damaged, never crashed by a file
overwritten in place."""

from __future__ import annotations

import asyncio
import os
import weakref
from pathlib import Path

import aiohttp
import pytest

from adapters import default_cache
from adapters.serve.live_catalog import CatalogLoadError, LiveLookup
from adapters.serve.main import Service, ServiceError
from bot import prebuilt
from bot.lookup import PanicLookup, result_json
from bot.prebuilt import LazyRecords, PrebuiltError, write_prebuilt
from bot.records import load_catalog
from tests.adapters.serve.test_service import SEEDS, settings, started, stopped
from tests.support.local_only import isolate

PASTES = [
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
    "Can't differentiate deform conv 2d backward.\n",
    "avg pool 2d backward",
    "thread 'main' panicked at src/main.rs:3:5:\nsomething of the user's own\n",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return isolate(monkeypatch, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "PANICBOT_CATALOG", "DISCORD_TOKEN")


def built(tmp_path: Path, lines: int = 3, name: str = "catalog.pbcat") -> Path:
    """A prebuilt catalog of the seeds' last `lines` records (the deform one is the first of 3), written as
    `catalog build` writes it (to a temporary name, then renamed over `name`)."""
    source = tmp_path / f"source-{lines}.jsonl"
    seeds = SEEDS.read_text(encoding="utf-8").splitlines()
    source.write_text("\n".join(seeds[len(seeds) - lines :]) + "\n", encoding="utf-8")
    target = tmp_path / name
    partial = tmp_path / f".{name}.partial"
    write_prebuilt(PanicLookup(load_catalog([source])), partial)
    os.replace(partial, target)
    return target


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_prebuilt_catalog_answers_as_its_sources_do(tmp_path: Path) -> None:
    live = LiveLookup([str(built(tmp_path))])
    from_sources = PanicLookup(load_catalog([SEEDS]))
    assert len(live.matcher) == 3
    for paste in PASTES:
        assert result_json(live.lookup(paste)) == result_json(from_sources.lookup(paste))
    best = live.lookup(PASTES[0]).best
    assert best is not None and live.card(live.lookup(PASTES[0])) is not None


def test_the_service_serves_a_prebuilt_catalog(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = built(tmp_path)

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(path)), [])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/readyz") as response:
                body = await response.json()
                assert response.status == 200 and body["records"] == 3
            async with http.get(f"{base}/metrics") as response:
                text = await response.text()
                assert 'versions="2026-09-12T17:17:11.597Z"' in text  # kept per record in the file
        await stopped(service, task)

    asyncio.run(scenario())


def test_a_replaced_prebuilt_catalog_is_reloaded_and_the_old_one_lets_go_of_its_file(tmp_path: Path) -> None:
    path = built(tmp_path, lines=1)
    live = LiveLookup([str(path)])
    assert len(live.matcher) == 1
    live.lookup(PASTES[0])
    descriptors = open_descriptors()
    for round_ in range(4):
        built(tmp_path, lines=3 if round_ % 2 == 0 else 1)
        assert live.changed_on_disk()
        old = weakref.ref(live.current)
        assert live.reload()
        assert len(live.matcher) == (3 if round_ % 2 == 0 else 1)
        assert old() is None
    # Each retired catalog closed the file it read its records from: no descriptor left behind.
    assert open_descriptors() == descriptors
    assert live.lookup(PASTES[0]).best is None  # the one-record catalog: not the deform record


def test_a_prebuilt_catalog_overwritten_in_place_is_refused_not_crashed_on(tmp_path: Path) -> None:
    path = built(tmp_path, lines=3)
    live = LiveLookup([str(path)])
    other = built(tmp_path, lines=1, name="other.pbcat")
    # `cp other.pbcat catalog.pbcat` writes into the same file: the index in memory no longer fits it.
    with path.open("r+b") as handle:
        handle.write(other.read_bytes())
        handle.truncate()
    records = live.matcher.records
    for position in range(len(records)):  # the last one lies past the file's new end
        with pytest.raises(PrebuiltError, match="rebuild it"):
            records[position]
    del records  # (else the retired catalog is freed later, by the service's releasing thread)
    assert live.changed_on_disk()
    old = weakref.ref(live.current)
    assert live.reload()  # the watcher's next poll serves what the file now holds
    assert len(live.matcher) == 1
    assert old() is None
    assert live.lookup(PASTES[0]).best is None


def test_a_stale_prebuilt_catalog_stops_start_up_with_the_reason(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = built(tmp_path)
    clean_env.setattr(prebuilt, "code_fingerprint", lambda: "another panicbot")
    with pytest.raises(ServiceError, match=r"catalog\.pbcat: .*stale.*rebuild it"):
        Service(settings(panicbot_catalog=str(path)), [])


def test_a_damaged_prebuilt_catalog_keeps_the_previous_one_serving(tmp_path: Path) -> None:
    path = built(tmp_path)
    refused: list[int] = []
    live = LiveLookup([str(path)], on_refused=lambda: refused.append(1))
    damaged = bytearray(path.read_bytes())
    header_end = damaged.index(b"\n", len(prebuilt.MAGIC))
    damaged[header_end + 100] ^= 0xFF  # a byte of the index, which follows the header line
    partial = tmp_path / "damaged.partial"
    partial.write_bytes(bytes(damaged))
    os.replace(partial, path)
    assert not live.reload()
    assert refused == [1] and len(live.matcher) == 3
    assert live.lookup(PASTES[0]).best is not None


def test_a_prebuilt_catalog_is_served_alone(tmp_path: Path) -> None:
    path = built(tmp_path)
    with pytest.raises(CatalogLoadError, match="cannot be combined with other catalog paths"):
        LiveLookup([str(path), str(SEEDS)])


def test_the_embedded_catalog_is_served_from_the_users_prebuilt_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no PANICBOT_CATALOG, the service's first start writes the embedded catalog's prebuilt copy to the
    cache folder (adapters/default_cache.py) and later starts serve it, answering the same."""
    monkeypatch.setenv("PANICBOT_CACHE_DIR", str(tmp_path / "cache"))
    first = LiveLookup([])
    assert len(list((tmp_path / "cache").glob("*.pbcat"))) == 1
    monkeypatch.setattr(default_cache, "default_catalog", lambda: pytest.fail("the JSONL was read"))
    later = LiveLookup([])
    assert isinstance(later.matcher.records, LazyRecords)
    assert len(later.matcher) == len(first.matcher) > 5_000
    for paste in PASTES:
        assert result_json(later.lookup(paste)) == result_json(first.lookup(paste))
    assert later.current.dataset_versions() == first.current.dataset_versions() != []
