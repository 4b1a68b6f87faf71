"""`python -m tests.support.gated_start GO_FILE ARGS...`: `panicbot ARGS`, started once GO_FILE exists.

The process imports what `panicbot serve` needs (SQLAlchemy, Alembic, the service, the Slack platform)
first, then says `waiting` on stdout and waits for the go file: replicas a test starts this way run their
start-up within a few milliseconds of each other, as an orchestrator starting them together would make
them, instead of seconds apart by import jitter (which hid the migration race most of the time)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import adapters.serve.main  # noqa: F401  (the service, SQLAlchemy and Alembic, imported before the go)
from adapters.cli.main import main
from adapters.platforms import platform

POLL_SECONDS = 0.001


def wait_for(go: Path) -> None:
    while not go.exists():
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    go, *arguments = sys.argv[1:]
    for name in ("slack", "discord", "github"):
        if name in arguments:
            platform(name)  # its SDK imported now, not after the go
    print("waiting", flush=True)
    wait_for(Path(go))
    sys.exit(main(arguments))
