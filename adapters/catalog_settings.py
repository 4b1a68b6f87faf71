"""The catalog setting every adapter reads (`PANICBOT_CATALOG`), as a pydantic-settings class."""

from __future__ import annotations

from pydantic_settings import BaseSettings

from adapters.settings import split_catalog_paths


class CatalogSettings(BaseSettings):
    """The catalog setting every adapter reads (`PANICBOT_CATALOG`)."""

    panicbot_catalog: str = ""

    @property
    def catalog_paths(self) -> list[str]:
        return split_catalog_paths(self.panicbot_catalog)
