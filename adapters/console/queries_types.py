"""What the console's pages need of a stored group, so page code can be tested without a database."""

from __future__ import annotations

from typing import Protocol


class GroupLike(Protocol):
    @property
    def message(self) -> str: ...
    @property
    def path(self) -> str | None: ...
    @property
    def raw_path(self) -> str | None: ...
    @property
    def line(self) -> int | None: ...
