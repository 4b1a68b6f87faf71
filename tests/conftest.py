"""Settings every test shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def cache_outside_the_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`panicbot lookup` on the embedded catalog writes a prebuilt copy to the user's cache folder
    (adapters/default_cache.py): in tests, and the processes they start, it goes to a folder of the
    session instead of the real home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PANICBOT_CACHE_DIR", str(tmp_path_factory.mktemp("panicbot-cache")))
        yield
