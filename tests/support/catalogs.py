"""Catalogs the tests pin behaviour to. The adapters' tests were written against the three seed records: they
keep that small, analysed catalog whatever the embedded default grows into (ecosystem, runtime records)."""

from __future__ import annotations

from pathlib import Path

from bot.records import Catalog, load_catalog

SEEDS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "seeds.jsonl"


def seeds_catalog() -> Catalog:
    """The three analysed seed records, as the embedded default held them before the ecosystem catalog."""
    catalog = load_catalog([SEEDS_FILE])
    assert not catalog.errors, catalog.errors
    return catalog
