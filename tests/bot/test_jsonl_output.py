"""`panicbot lookup --jsonl` writes its lines with orjson (issue 15): the same JSON values as `json.dumps`
wrote before, line for line, and `json` still writes what orjson refuses."""

from __future__ import annotations

import io
import json
import sys

import pytest

from adapters.cli.batch import json_line
from adapters.cli.main import main
from bot.lookup import PanicLookup
from bot.records import default_catalog

PASTES = [
    "thread 'main' panicked at /home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-autodiff-0.19.0/src/ops/module.rs:1502:9:\nCan't differentiate avg pool 2d backward.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "thread 'main' panicked at src/main.rs:3:5:\ncalled `Option::unwrap()` on a `None` value",
    "avg pool 2d backwrd",
    "thread '<unnamed>' panicked at crates/burn-tensor/src/tensor/api/check.rs:1:1:\n"
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape is invalid. \n",
    "héllo wörld — no panic here ✓ \u2028",
    "how do I switch from the ndarray backend to wgpu?",
]


def test_each_jsonl_line_holds_the_json_values_of_before(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"id": n, "text": text} for n, text in enumerate(PASTES)] + [{"id": "x", "text": 5}]
    data = "\n".join(json.dumps(item) for item in items).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    out = io.StringIO()
    assert main(["lookup", "--jsonl"], out=out) == 0
    lines = out.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == len(items) + 1
    service = PanicLookup(default_catalog())
    for item, line in zip(items[: len(PASTES)], lines, strict=False):
        result = service.lookup(str(item["text"]))
        before = json.dumps({"id": item["id"], **service.answer_json(result)}, ensure_ascii=False)
        assert json.loads(line) == json.loads(before)
    assert json.loads(lines[len(PASTES)])["error"] == "line 7: missing string field 'text'"


@pytest.mark.parametrize("value", [{"text": "\ud800 lone surrogate"}, {"n": 2**70}, {"f": 0.1, "s": "é\n"}])
def test_json_line_writes_what_json_wrote(value: dict[str, object]) -> None:
    line = json_line(value)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert json.loads(line) == json.loads(json.dumps(value, ensure_ascii=False))
