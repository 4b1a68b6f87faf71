"""How long a draft's preview takes over many stored unmatched panics, on the embedded catalog: the first one
(which reads the releases' API for the example check) and the next, with the memory that costs.

    uv run python -m tests.adapters.console.measure_preview
"""

from __future__ import annotations

import json
import resource
import time
from datetime import UTC, datetime
from pathlib import Path

from adapters.console.draft_preview import GROUPS_TRIED, ApiTables, preview_draft
from adapters.console.drafts import build_record
from adapters.storage.console_queries import UnmatchedGroup
from bot.lookup import PanicLookup
from bot.records import default_catalog

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "burn-panics.jsonl"


def groups_from_fixture(count: int) -> list[UnmatchedGroup]:
    now = datetime.now(UTC)
    made = []
    for number, line in enumerate(FIXTURE.read_text(encoding="utf-8").splitlines()):
        data = json.loads(line)
        record = data.get("record", data)
        message = record["errorMessage"].replace("{}", "7")
        made.append(
            UnmatchedGroup(
                f"{number:064x}",
                message,
                record.get("filePath"),
                1,
                now,
                now,
                "slack",
                None,
                record.get("lineNumber"),
            )
        )
    return (made * (count // len(made) + 1))[:count]


def main() -> None:
    served = PanicLookup(default_catalog())
    groups = groups_from_fixture(GROUPS_TRIED)
    built = build_record(
        {
            "errorMessage": "Operation queue overflowed: {} pending operations on stream {}",
            "messagePattern": "Operation queue overflowed: (.+?) pending operations on stream (.+?)",
            "filePath": "crates/burn-fusion/src/stream/queue/base.rs",
            "lineNumber": "88",
            "repo": "tracel-ai/burn",
            "documentation": "The fusion stream queue holds a bounded number of pending operations.",
            "solutions": "Synchronize the device more often",
            "exampleFix": "let a = 1;",
        }
    )
    assert built.record is not None, built.problems
    api = ApiTables(["default"])
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    preview_draft(built.record, served, groups, api.get)
    first = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    preview = preview_draft(built.record, served, groups, api.get)
    second = time.perf_counter() - started
    print(f"{len(groups)} stored panics, {len(preview.answered)} answered by the draft")
    print(f"first preview {first:.2f} s, next {second:.2f} s")
    print(f"max RSS {memory / 1024:.0f} MB before, {after / 1024:.0f} MB after")


if __name__ == "__main__":
    main()
