"""What each replica process of a migration test runs: wait for the others, then `upgrade_database`.

A module of its own, light to import: a spawned process imports only this (and the storage package), not
the test module with its chat SDKs."""

from __future__ import annotations

from typing import Any

from adapters.storage import upgrade_database
from adapters.storage.migrate import Migration

_start_together: Any = None  # in each replica process: the barrier its migration waits on


def join(barrier: Any) -> None:
    """A process pool's initializer: the barrier shared by every replica."""
    global _start_together  # noqa: PLW0603  (an initializer can only leave it here)
    _start_together = barrier


def migrate_with_the_others(url: str) -> Migration:
    _start_together.wait(timeout=60)
    return upgrade_database(url)
