"""The one-minute measurement on a seeded store: the maintainer's round (what needs a record most, draft it so
`catalog lint` takes it, check how a record's card looks on each platform) through the console, timed in
Chromium with every action counted, against the same round with the CLI, every command timed and every
character typed counted.

    uv run python -m tests.adapters.console.measure_minute
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from bot.harvest import record_id
from tests.adapters.console.server import TOKEN, running_console
from tests.adapters.console.test_browser import AVG_POOL_PASTE, CHROMIUM, CHROMIUM_ARGS

DOCUMENTATION = "The fusion stream queue holds at most 4096 pending operations."
# What a maintainer types by hand without the console: the id (sha256 of repo, file, message), the pattern
# with its metacharacters escaped, the slug, and the catalog line around them.
HAND_RECORD = {
    "record": {
        "id": "4f0d3c44c0b0c1c7",  # replaced by the real id below
        "repo": "tracel-ai/burn",
        "slug": "operation-queue-overflowed-pending-operations-on-stream",
        "errorMessage": "Operation queue overflowed: {} pending operations on stream {}",
        "messagePattern": "Operation queue overflowed: (.+?) pending operations on stream (.+?)",
        "errorType": "panic",
        "filePath": "crates/burn-fusion/src/stream/queue/base.rs",
        "documentation": DOCUMENTATION,
        "schemaVersion": 2,
    },
    "datasetVersion": "draft",
}
ID_COMMAND = (
    "python3 -c 'import hashlib;print(hashlib.sha256(b\"tracel-ai/burn\\ncrates/burn-fusion/src/stream/queue/"
    "base.rs\\nOperation queue overflowed: {} pending operations on stream {}\").hexdigest()[:16])'"
)


def console_round(folder: Path) -> dict[str, float | int]:
    actions = 0
    with running_console(folder) as console, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        started = time.monotonic()
        page.goto(f"{console.base}/console/")
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        actions += 3  # open, type the token, log in
        page.wait_for_url(f"{console.base}/console/")
        page.locator("#unmatched-table tbody tr").first.locator("a.draft-link").click()
        page.fill("#f-documentation", DOCUMENTATION)
        page.click("#draft-submit")
        actions += 3  # draft the top row, write what it means, save
        page.locator("#drafted-id").wait_for()
        page.click("#nav-records")
        page.fill("#q", AVG_POOL_PASTE)
        page.click("#search-submit")
        page.locator("tr.match a.record-link").first.click()
        actions += 4  # records, paste, look up, open the best match
        page.locator("#preview-github").wait_for()
        seconds = time.monotonic() - started
        browser.close()
        typed = len(TOKEN) + len(DOCUMENTATION) + len(AVG_POOL_PASTE)
        assert console.drafts.exists()
    return {"machine_seconds": round(seconds, 1), "actions": actions, "typed_characters": typed}


def cli_round(folder: Path) -> dict[str, float | int]:
    database = folder / "panicbot.db"
    commands = [
        f"uv run panicbot report --database-url sqlite:///{database}",
        ID_COMMAND,
        f"uv run panicbot catalog lint {folder / 'hand.jsonl'}",
        f"uv run panicbot lookup < {folder / 'paste.txt'}",
        "uv run panicbot card 8d1d2fa6df3880bd --format slack",
        "uv run panicbot card 8d1d2fa6df3880bd --format discord",
        "uv run panicbot card 8d1d2fa6df3880bd --format text",
    ]
    HAND_RECORD["record"]["id"] = record_id(  # type: ignore[index]
        "tracel-ai/burn",
        "crates/burn-fusion/src/stream/queue/base.rs",
        "Operation queue overflowed: {} pending operations on stream {}",
    )
    (folder / "hand.jsonl").write_text(json.dumps(HAND_RECORD) + "\n", encoding="utf-8")
    (folder / "paste.txt").write_text(AVG_POOL_PASTE, encoding="utf-8")
    started = time.monotonic()
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=Path.cwd(), capture_output=True, check=False)
        assert done.returncode == 0, (command, done.stderr[-500:])
    seconds = time.monotonic() - started
    typed = sum(len(c) for c in commands) + len(json.dumps(HAND_RECORD))
    return {
        "machine_seconds": round(seconds, 1),
        "commands": len(commands),
        "typed_characters": typed,
        "shell_words": sum(len(shlex.split(c.replace("<", ""))) for c in commands),
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as web, tempfile.TemporaryDirectory() as shell:
        print("console:", console_round(Path(web)))
        with running_console(Path(shell)):
            pass  # the same seeded store for the CLI round
        print("cli:", cli_round(Path(shell)))
