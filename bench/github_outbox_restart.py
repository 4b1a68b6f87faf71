"""Acknowledged GitHub mentions across a rolling deploy: N `@panicbot` comments acknowledged by
`panicbot serve github` (the local fake GitHub of the tests), a SIGTERM once some are answered, a restart
on the same outbox, and how many mentions end up answered, and how many twice.

    uv run python bench/github_outbox_restart.py                      # 300 mentions, SQLite outbox
    uv run python bench/github_outbox_restart.py --redis redis://127.0.0.1:6379/0
    uv run python bench/github_outbox_restart.py --spacing 1 --grace 10   # GitHub's pace (about 6 min)

Time is scaled down by default: a comment every `--spacing` seconds (GitHub asks for one a second) and
`--grace` seconds for the reply in hand at the stop (the service's default is 10)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.adapters.github.outbox_restart import restart_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=300)
    parser.add_argument("--stop-after", type=int, default=71, help="answers before the SIGTERM")
    parser.add_argument("--spacing", type=float, default=0.05, help="seconds between comments")
    parser.add_argument("--grace", type=float, default=1.0, help="seconds the stop gives the reply in hand")
    parser.add_argument("--redis", default=None, help="keep the outbox in this Redis instead of SQLite")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message).160s")
    with pytest.MonkeyPatch.context() as env:
        figures = asyncio.run(
            restart_scenario(
                env,
                mentions=args.mentions,
                stop_after=args.stop_after,
                spacing=args.spacing,
                grace=args.grace,
                redis_url=args.redis,
            )
        )
    print(
        f"outbox {'redis' if args.redis else 'sqlite'}, "
        f"a comment every {args.spacing:g} s, grace {args.grace:g} s: "
        f"answered before SIGTERM {figures.answered_before_stop}, kept in the outbox {figures.kept_at_stop}; "
        f"after the restart answered {figures.answered}/{figures.mentions}, duplicates {figures.duplicates} "
        f"({figures.seconds:.1f} s)"
    )


if __name__ == "__main__":
    main()
