"""The terminal's card and table (`panicbot lookup` without --json), on the embedded catalog: what a paste
from a tensor check shows, the note of a release the catalog lacks, the alternatives best first."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from adapters.cli.render import print_result
from bot.lookup import PanicLookup
from bot.records import default_catalog

REGISTRY = "/home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
RESHAPE_BLOCK = (
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: [2, 3], target shape: [4, 2]. \n"
)


@pytest.fixture(scope="module")
def service() -> PanicLookup:
    return PanicLookup(default_catalog())


def paste(location: str, message: str) -> str:
    return f"thread 'main' panicked at {location}:\n{message}\n{NOTE}\n"


def shown(service: PanicLookup, text: str) -> str:
    out = io.StringIO()
    print_result(service, service.lookup(text), Console(file=out, width=300, highlight=False))
    return out.getvalue()


def test_a_tensor_check_shows_its_reason_as_title_and_the_pasted_values(service: PanicLookup) -> None:
    text = shown(
        service, paste(f"{REGISTRY}/burn-tensor-0.19.0/src/tensor/api/check.rs:1495:17", RESHAPE_BLOCK)
    )
    title = text.splitlines()[1].strip("│ ")
    assert title == "Reshape: the given shape doesn't have the same number of elements as the current tensor"
    assert "Details: Current shape: [2, 3], target shape: [4, 2]." in text


def test_a_release_the_catalog_lacks_is_said_when_no_record_is_known(service: PanicLookup) -> None:
    # A message no harvested release words this way: no record, but the paste names its release.
    reworded = RESHAPE_BLOCK.replace("target shape", "new shape")
    # burn-tensor 0.2.3: older than the first Burn tag harvested (v0.3.0).
    old = paste(f"{REGISTRY}/burn-tensor-0.2.3/src/tensor/api/check.rs:643:13", reworded)
    result = service.lookup(old)
    assert service.card(result) is None
    text = shown(service, old)
    assert "No known record" in text
    assert "burn-tensor 0.2.3 is not in the catalog" in " ".join(text.split())


def test_the_alternatives_are_listed_best_first(service: PanicLookup) -> None:
    text = paste(f"{REGISTRY}/burn-ndarray-0.20.0-pre.2/src/tensor.rs:66:18", "Unsupported dtype: F32")
    result = service.lookup(text)
    card = service.card(result)
    others = [m.confidence for m in result.matches if card is None or m.record.id != card.record_id]
    assert others != sorted(others, reverse=True)  # what the lookup ranks is not by confidence alone
    table = shown(service, text).split("Alternatives", 1)[1]
    percents = [int(n) for n in re.findall(r"│\s+(\d+)%\s+│", table)]
    assert len(percents) == len(others)
    assert percents == sorted(percents, reverse=True)
