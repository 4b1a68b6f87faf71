"""Answers for pastes from other releases and for Rust runtime panics, on the embedded default catalog:
the acceptance figures of the ecosystem catalog and the runtime records, on seeded samples (the full runs
are bench/release_accuracy.py and bench/runtime_accuracy.py)."""

from __future__ import annotations

import pytest

from bot.lookup import PanicLookup
from bot.records import Catalog, default_catalog
from tests.bot.test_rust_runtime import EXPECTED
from tests.support.release_pastes import release_cases
from tests.support.runtime_pastes import runtime_cases


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="module")
def service(catalog: Catalog) -> PanicLookup:
    return PanicLookup(catalog)


def test_pastes_from_old_releases_find_that_release_s_site(catalog: Catalog, service: PanicLookup) -> None:
    """Top-1 by the message and file of that release >= 95 %, >= 80 % posted unasked, none wrongly."""
    cases = release_cases(catalog, seed=7, count=240)
    right = auto = wrong = 0
    for case in cases:
        result = service.lookup(case.text)
        top = result.best.record.id if result.best else None
        right += top in case.accepted_ids
        auto += result.auto_reply
        wrong += result.auto_reply and top not in case.accepted_ids
    assert wrong == 0
    assert right / len(cases) >= 0.95
    assert auto / len(cases) >= 0.80


def test_pastes_from_burn_before_0_13_find_their_site_and_release(
    catalog: Catalog, service: PanicLookup
) -> None:
    """Burn v0.3.0 to v0.12.1 (crates at the top level): top-1 >= 95 %, none wrongly posted, the pasted
    release known (the card's site is in it) >= 95 %. Before those releases were harvested: 69 % top-1, 63 of
    960 posted wrongly, no release known (bench/README.md)."""
    cases = release_cases(catalog, seed=11, count=120, window="pre-0.13")
    assert {case.repo for case in cases} == {"tracel-ai/burn"}
    right = wrong = known = 0
    for case in cases:
        result = service.lookup(case.text)
        top = result.best.record.id if result.best else None
        right += top in case.accepted_ids
        wrong += result.auto_reply and top not in case.accepted_ids
        site = service.site(result)
        known += site is not None and site.in_pasted_release is True and site.version == case.version
    assert wrong == 0
    assert right / len(cases) >= 0.95
    assert known / len(cases) >= 0.95


def test_the_site_names_the_pasted_release(catalog: Catalog, service: PanicLookup) -> None:
    cases = [case for case in release_cases(catalog, seed=3, count=120) if case.fmt != "git-checkout"]
    named = 0
    for case in cases:
        result = service.lookup(case.text)
        site = service.site(result)
        assert site is not None
        named += site.version == case.version and site.file == case.file_path
    assert named / len(cases) >= 0.95


def test_runtime_panics_in_burn_cubecl_and_tch_functions(catalog: Catalog, service: PanicLookup) -> None:
    """The runtime record top-1 >= 95 %, the site (file and function of that release) >= 90 %, no wrong
    auto-reply (a runtime card is posted unasked only when refined by the error type, at a known site)."""
    cases = runtime_cases(catalog, EXPECTED, seed=5, count=200)
    right = site_right = wrong = 0
    for case in cases:
        result = service.lookup(case.text)
        best = result.best
        ok = best is not None and best.record.slug == case.record_slug
        right += ok
        wrong += result.auto_reply and not ok
        site = service.site(result)
        site_right += site is not None and (site.file, site.function) == (case.file_path, case.function)
    assert wrong == 0
    assert right / len(cases) >= 0.95
    assert site_right / len(cases) >= 0.90
