"""The terminal's card (`panicbot lookup` without --json), on the embedded catalog: what a paste from a
tensor check shows."""

from __future__ import annotations

import io

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
