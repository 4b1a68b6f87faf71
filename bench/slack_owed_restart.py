"""Acknowledged `/panic` commands across a rolling deploy: N commands acknowledged by
`panicbot serve slack --http` (the local fake Slack of the tests), a SIGTERM once some are answered, a
restart on the same outbox, and how many response_urls got their answer, and how many twice; with the ack
times of the commands (each stores its answer in the outbox before the ack).

    uv run python bench/slack_owed_restart.py                       # 300 commands, SQLite outbox
    uv run python bench/slack_owed_restart.py --redis redis://127.0.0.1:6379/0
    uv run python bench/slack_owed_restart.py --events              # 300 mentions and pastes instead

With `--events`, Events API deliveries (mentions, and every sixth a paste in an auto-reply channel of its
own) are answered with chat.postMessage; Slack takes `--delay` seconds to answer a post it has made, and a
stop with less `--grace` than that cuts the posts in hand short (each is then found by its metadata after
the restart, never posted twice).

Time is scaled down: Slack answers a response_url post in `--delay` seconds, the stop gives the answers in
hand `--grace` seconds (the service's default is 10)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.adapters.slack.owed_restart import events_restart_scenario, restart_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=300, help="commands (or, --events, events) sent")
    parser.add_argument("--stop-after", type=int, default=50, help="answers before the SIGTERM")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds Slack takes per response_url post")
    parser.add_argument("--users", type=int, default=12, help="users asking (each one's answers in order)")
    parser.add_argument("--grace", type=float, default=1.0, help="seconds the stop gives the answers in hand")
    parser.add_argument("--redis", default=None, help="keep the outbox in this Redis instead of SQLite")
    parser.add_argument("--events", action="store_true", help="mentions and pastes instead of /panic")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message).160s")
    if args.events:
        events(args)
        return
    with pytest.MonkeyPatch.context() as env:
        figures = asyncio.run(
            restart_scenario(
                env,
                commands=args.commands,
                stop_after=args.stop_after,
                delay=args.delay,
                users=args.users,
                grace=args.grace,
                redis_url=args.redis,
            )
        )
    print(
        f"outbox {'redis' if args.redis else 'sqlite'}, Slack answering in {args.delay:g} s, "
        f"grace {args.grace:g} s: ack p50 {figures.ack_ms_p50:.1f} ms, p99 {figures.ack_ms_p99:.1f} ms; "
        f"answered before SIGTERM {figures.answered_before_stop}, kept in the outbox {figures.kept_at_stop}; "
        f"after the restart answered {figures.answered}/{figures.commands} ({figures.cards} cards), "
        f"duplicates {figures.duplicates}, log lines naming a response_url {figures.logged_urls} "
        f"({figures.seconds:.1f} s)"
    )


def events(args: argparse.Namespace) -> None:
    grace = 0.1 if args.grace == 1.0 else args.grace  # the default cuts the posts in hand short
    with pytest.MonkeyPatch.context() as env:
        figures = asyncio.run(
            events_restart_scenario(
                env,
                events=args.commands,
                stop_after=args.stop_after,
                delay=args.delay,
                users=args.users,
                grace=grace,
                redis_url=args.redis,
            )
        )
    print(
        f"events, outbox {'redis' if args.redis else 'sqlite'}, Slack answering posts in {args.delay:g} s, "
        f"grace {grace:g} s: ack p50 {figures.ack_ms_p50:.1f} ms, p99 {figures.ack_ms_p99:.1f} ms; "
        f"posted before SIGTERM {figures.answered_before_stop}, kept in the outbox {figures.kept_at_stop} "
        f"({figures.cut_short} of them posted but cut short); after the restart answered "
        f"{figures.answered}/{figures.events} ({figures.cards} cards), duplicates {figures.duplicates} "
        f"({figures.seconds:.1f} s)"
    )


if __name__ == "__main__":
    main()
