"""Replicas started together on a fresh database: how many come up.

Each round makes a fresh database (a new SQLite file under /tmp, or a new, uniquely named PostgreSQL
database, dropped afterwards), starts N `panicbot serve slack --http` processes on it through
`tests/support/gated_start.py` (each imports everything first, then all begin their start-up, migrations
included, within milliseconds of each other), and counts those whose `/healthz` answers 200 within 120 s;
a replica that exits says why. Slack's Web API is a closed local port (nothing leaves 127.0.0.1). Then it
stops them (SIGTERM) and checks the schema: one `alembic_version` row. `--ungated` starts them with no
gate, seconds apart by import jitter, as two `serve` commands started by hand would be.

    uv run --no-sync python bench/replicas_start.py --database sqlite --rounds 3
    uv run --no-sync python bench/replicas_start.py --database postgresql --rounds 3
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def healthy(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return connection.recv(12) == b"HTTP/1.1 200"
    except OSError:
        return False


def one_round(url: str, replicas: int, gated: bool) -> tuple[int, list[str], int]:
    """(replicas up, why the others exited, alembic_version rows)."""
    variables = ("SLACK_", "DISCORD_", "GITHUB_", "PANICBOT_", "REDIS_URL", "HTTP_PROXY", "HTTPS_PROXY")
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith(variables)}
    environ.update(
        NO_PROXY="127.0.0.1",
        SLACK_BOT_TOKEN="xoxb-1-bench-token",
        SLACK_SIGNING_SECRET="bench-signing-secret-0123456789ab",
        SLACK_API_URL=f"http://127.0.0.1:{free_port()}/api/",
        DATABASE_URL=url,
        PANICBOT_CATALOG=str(ROOT / "tests" / "fixtures" / "seeds.jsonl"),
        PANICBOT_HTTP_HOST="127.0.0.1",
        PANICBOT_LOG_FORMAT="text",
        PANICBOT_CATALOG_WATCH_SECONDS="0",
        PANICBOT_SHUTDOWN_DRAIN_SECONDS="0",
    )
    go = Path(tempfile.mkdtemp(prefix="panicbot-bench-")) / "go"
    ports = [free_port() for _ in range(replicas)]
    serve = ["serve", "slack", "--http", "--port"]
    starter = ["-m", "tests.support.gated_start", str(go)] if gated else ["-m", "adapters.cli.main"]
    processes = [
        subprocess.Popen(
            [sys.executable, *starter, *serve, str(port)],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        for port in ports
    ]
    up: set[int] = set()
    exits: list[str] = []
    try:
        if gated:
            for process in processes:
                assert process.stdout is not None
                process.stdout.readline()  # "waiting": imported, at the gate
            go.touch()
        deadline = time.monotonic() + 120
        running = set(range(replicas))
        while running - up and time.monotonic() < deadline:
            for index in sorted(running - up):
                if processes[index].poll() is not None:
                    running.discard(index)
                elif healthy(ports[index]):
                    up.add(index)
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                _, stderr = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                _, stderr = process.communicate()
            if process.returncode != 0:
                exits.append(f"exit {process.returncode}: {stderr.decode().strip().splitlines()[-1:]}")
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = len(connection.execute(text("SELECT version_num FROM alembic_version")).all())
    finally:
        engine.dispose()
    return len(up), exits, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ungated", action="store_true")
    args = parser.parse_args()
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    for round_number in range(1, args.rounds + 1):
        name = f"panicbot_bench_{uuid.uuid4().hex[:12]}"
        if args.database == "sqlite":
            url = f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-bench-')}/panicbot.db"
        else:
            with admin.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
            url = admin.url.set(database=name).render_as_string(hide_password=False)
        try:
            up, exits, rows = one_round(url, args.replicas, gated=not args.ungated)
        finally:
            if args.database == "postgresql":
                with admin.connect() as connection:
                    connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        print(
            f"{args.database} round {round_number}: {up}/{args.replicas} up, alembic_version rows: {rows}"
            + (f"; {'; '.join(exits)}" if exits else ""),
            flush=True,
        )
    admin.dispose()


if __name__ == "__main__":
    main()
