"""What one `panicbot lookup --jsonl` line costs beyond loading, part by part (ms per paste, best of 3).

    PYTHONPATH=. uv run python bench/jsonl_cost.py

500 pastes of tests/support/pastes.py (seed 0) on the embedded catalog: the lookup, `result_json` with the
site, the line written by `json.dumps` (before issue 15) and by `adapters.cli.batch.json_line` (orjson).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.cli.batch import json_line  # noqa: E402
from bot.lookup import PanicLookup  # noqa: E402
from bot.records import default_catalog  # noqa: E402
from tests.support.pastes import all_cases, shared_data_dir  # noqa: E402


def main() -> None:
    cases = [case.text for case in all_cases(shared_data_dir(), seed=0, per_format=40)][:500]
    service = PanicLookup(default_catalog())
    for text in cases[:50]:
        service.lookup(text)
    clock = time.perf_counter
    best: dict[str, float] = {}
    for _ in range(3):
        spent = dict.fromkeys(("lookup", "answer_json (site + card)", "json.dumps", "orjson json_line"), 0.0)
        for number, text in enumerate(cases):
            a = clock()
            result = service.lookup(text)
            b = clock()
            reply = {"id": number, **service.answer_json(result)}
            c = clock()
            json.dumps(reply, ensure_ascii=False)
            d = clock()
            json_line(reply)
            e = clock()
            for key, value in zip(spent, (b - a, c - b, d - c, e - d), strict=True):
                spent[key] += value
        for key, value in spent.items():
            best[key] = min(best.get(key, float("inf")), value / len(cases) * 1e3)
    print(
        f"{len(cases)} pastes, ms per paste (best of 3): "
        + ", ".join(f"{k} {v:.4f}" for k, v in best.items())
    )


if __name__ == "__main__":
    main()
