"""The real service (`Service`, no chat platform, console on) on 127.0.0.1 in a background thread, over a
seeded store: what the browser tests and the page tests talk to."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from adapters.serve.main import Service, ServiceSettings
from tests.adapters.console.seed import Seeded, seed_store

TOKEN = "console-test-token-9f2c"


@dataclass(frozen=True)
class Running:
    base: str
    drafts: Path
    seeded: Seeded
    service: Service


@contextmanager
def running_console(folder: Path, **overrides: object) -> Iterator[Running]:
    database = folder / "panicbot.db"
    drafts = folder / "drafts.jsonl"
    values: dict[str, object] = {
        "panicbot_http_host": "127.0.0.1",
        "panicbot_http_port": 0,
        "panicbot_catalog_watch_seconds": 0,
        "panicbot_shutdown_grace_seconds": 1,
        "panicbot_shutdown_drain_seconds": 0,  # no load balancer here (ignored where the setting is absent)
        "panicbot_log_format": "text",
        "database_url": f"sqlite:///{database}",
        "panicbot_console_token": TOKEN,
        "panicbot_console_drafts": str(drafts),
        **overrides,
    }
    settings = ServiceSettings(**values)  # type: ignore[arg-type]
    service = Service(settings, [])
    seeded = seed_store(database, service.live.current)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(service.run(),), daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if service.started.is_set():
                break
            threading.Event().wait(0.05)
        assert service.bound is not None, "the service did not start"
        host, port = service.bound[:2]
        yield Running(f"http://{host}:{port}", drafts, seeded, service)
    finally:
        loop.call_soon_threadsafe(service.stop)
        thread.join(timeout=15)
        loop.close()
