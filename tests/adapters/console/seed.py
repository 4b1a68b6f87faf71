"""A seeded store for the console's tests and its one-minute measurement: unmatched panics seen over two
weeks (one of them hostile), matches and votes, through `SqlStore`'s own API.

`uv run python -m tests.adapters.console.seed DATABASE_FILE` writes one for a manual look."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adapters.storage import SqlStore, upgrade_database
from bot.lookup import PanicLookup

START = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)
REGISTRY = "/home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f"
HOSTILE_MESSAGE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
HOSTILE = f"thread 'main' panicked at src/main.rs:3:5:\n{HOSTILE_MESSAGE}\n"
# (paste, sightings, first day, last day, platform)
UNMATCHED = (
    (
        f"thread 'main' panicked at {REGISTRY}/burn-fusion-0.21.0/src/stream/queue/base.rs:88:13:\n"
        "Operation queue overflowed: 4096 pending operations on stream 3\n",
        41,
        0,
        13,
        "slack",
    ),
    (
        f"thread 'tokio-runtime-worker' panicked at {REGISTRY}/burn-cubecl-0.20.1/src/kernel/conv/im2col.rs:"
        "211:9:\nim2col workspace of 536870912 bytes exceeds the device limit\n",
        23,
        2,
        12,
        "discord",
    ),
    (
        f"thread 'main' panicked at {REGISTRY}/burn-train-0.19.1/src/checkpoint/file.rs:54:18:\n"
        "Checkpoint epoch 12 was written by a newer recorder version\n",
        12,
        4,
        9,
        "slack",
    ),
    (
        "thread 'main' panicked at crates/burn-core/src/module/param/base.rs:140:9:\n"
        "Parameter 7 was loaded on device Cuda(1) but the module lives on Cuda(0)\n",
        7,
        6,
        13,
        "github",
    ),
    (HOSTILE, 3, 8, 11, "discord"),
    (
        "thread 'main' panicked at examples/mnist/src/training.rs:77:41:\n"
        "dataset item 1532 has 783 pixels, expected 784\n",
        2,
        10,
        10,
        "slack",
    ),
)
MATCHED = (
    (
        f"thread 'main' panicked at {REGISTRY}/burn-autodiff-0.19.0/src/ops/module.rs:1502:9:\n"
        "Can't differentiate avg pool 2d backward.\n",
        17,
    ),
    ("deform conv backward", 0),  # a typed query: counted as a match, never kept as a panic
)


@dataclass
class Clock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Seeded:
    url: str
    downvoted: str
    matched: str


def seed_store(path: Path, lookup: PanicLookup) -> Seeded:
    url = f"sqlite:///{path}"
    upgrade_database(url)
    clock = Clock()
    store = SqlStore(url, clock=clock)
    try:
        for paste, count, first_day, last_day, platform in UNMATCHED:
            result = lookup.lookup(paste)
            assert result.status == "no_known_record", paste
            for sighting in range(count):
                day = first_day + (last_day - first_day) * sighting / max(count - 1, 1)
                clock.now = START + timedelta(days=day, minutes=sighting)
                store.record_lookup(result, platform)
        matched = ""
        for paste, count in MATCHED:
            result = lookup.lookup(paste)
            assert result.best is not None
            matched = matched or result.best.record.id
            for sighting in range(count):
                clock.now = START + timedelta(days=sighting % 14, hours=sighting)
                store.record_lookup(result, "slack")
        for user, vote in (("U1", "down"), ("U2", "down"), ("U3", "up")):
            store.record_vote(record_id=matched, user_id=user, vote=vote, platform="slack", place="C1/1.0")
    finally:
        store.close()
    return Seeded(url=url, downvoted=matched, matched=matched)


if __name__ == "__main__":
    from bot.records import default_catalog

    seeded = seed_store(Path(sys.argv[1]).resolve(), PanicLookup(default_catalog()))
    print(seeded.url)
