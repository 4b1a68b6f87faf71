"""`panicbot`: look up pastes from a terminal, check catalogs, and start the bot's main job.

This is the terminal adapter: it reads stdin, files and the environment, and hands text to the core.
"""

from __future__ import annotations

import argparse
import functools
import gc
import io
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from adapters.cli.prebuilt_commands import PrebuiltUsageError, is_prebuilt_path, refuse_prebuilt
from adapters.settings import (
    CATALOG_ENV,
    DEFAULT_DATABASE_URL,
    SAME_SIGNAL_SECONDS,
    SettingsError,
    split_catalog_paths,
)

if TYPE_CHECKING:
    from rich.console import Console

    from bot.lookup import PanicLookup
    from bot.records import Catalog

# What a command needs is imported when it runs (the imports marked PLC0415 below): `lookup` starts without
# rich's renderers, the chat platforms (aiohttp), the harvester or the ecosystem build. The core too (half a
# second): importing this module is quick, so `serve` catches SIGTERM from its first moments.

MAX_INPUT_BYTES = 10 * 1024 * 1024
EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70
# Not bugs of ours (sysexits.h): a platform that cannot be reached, and one that refuses a credential.
EXIT_UNAVAILABLE, EXIT_REFUSED = 69, 77

DEMO_PASTE = (
    "thread 'main' panicked at /home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-autodiff-0.19.0/src/ops/module.rs:1333:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)


class UsageError(Exception):
    """A problem with what the user asked for: printed as one line, exit code 2."""


class StoppedDuringStartUp(BaseException):
    """SIGTERM while a service starts, before its event loop takes the signal over: start-up ends where it
    is (a BaseException, like KeyboardInterrupt, so no `except Exception` on the way swallows it)."""


_stop_signal_at: float | None = None  # when (time.monotonic) the process got the signal stopping it


def _is_a_copy() -> bool:
    """The same signal often comes twice within milliseconds (systemd signals every process of the unit,
    `uv run` forwards what its process group also got): one this soon after the first changes nothing."""
    return _stop_signal_at is not None and time.monotonic() - _stop_signal_at < SAME_SIGNAL_SECONDS


def _stop_start_up(signum: int, _frame: object) -> None:
    global _stop_signal_at  # noqa: PLW0603  (a signal handler's only memory)
    if _is_a_copy():
        return
    _stop_signal_at = time.monotonic()
    raise StoppedDuringStartUp(signal.Signals(signum).name)


def _ignore_stop_signals() -> None:
    """The service has stopped and the process is ending: closing, the event loop gave SIGTERM its default
    action back, so a copy of the signal that stopped it, still on its way, would kill it (exit -15). Ignored,
    not handled: Python resets its own handlers to the default while the interpreter finalizes."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _unraisable(unraisable: Any) -> None:
    """A StoppedDuringStartUp raised inside a weakref or gc callback is swallowed by Python, which would print
    its traceback: the stop is kept by `_stop_signal_at` and done once the service's loop runs."""
    if isinstance(unraisable.exc_value, StoppedDuringStartUp):
        return
    sys.__unraisablehook__(unraisable)


def _catch_sigterm() -> Any:
    """SIGTERM ends start-up cleanly from now on (the service's loop takes it over once it runs); the
    handler that was there before, or None when signals cannot be set here (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _stop_start_up)


def _say_stopped_during_start_up(signame: str) -> None:
    """The one line a service stopped during start-up leaves, in the service's log format."""
    import logging  # noqa: PLC0415

    from adapters.serve.logs import configure_logging  # noqa: PLC0415

    fmt = os.environ.get("PANICBOT_LOG_FORMAT", "json").strip().lower()
    configure_logging(fmt if fmt in ("json", "text") else "json")
    logging.getLogger("panicbot.service").info("stopped during start-up (%s)", signame)


def port_number(text: str) -> int:
    """`--port`: a TCP port, 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535)")
    return port


def platform_exit(error: BaseException | None) -> int:
    """The exit code for a platform connection that ended: refused, unreachable, or closed."""
    from adapters.settings import PlatformRefused, PlatformUnreachable  # noqa: PLC0415

    if isinstance(error, PlatformRefused):
        return EXIT_REFUSED
    if isinstance(error, PlatformUnreachable | OSError | TimeoutError):
        return EXIT_UNAVAILABLE
    return EXIT_NOT_FOUND


def catalog_paths(cli_paths: Sequence[str] | None, environ: dict[str, str]) -> list[str]:
    if cli_paths:
        return list(cli_paths)
    return split_catalog_paths(environ.get(CATALOG_ENV, ""))


def open_catalog(paths: Sequence[str], err: Console) -> Catalog:
    """The catalog at `paths` (the embedded data set when none); bad lines are reported, not fatal."""
    from bot.records import default_catalog, load_catalog  # noqa: PLC0415
    from bot.regular_files import first_irregular_path  # noqa: PLC0415

    if not paths:
        return default_catalog()
    irregular = first_irregular_path(paths)
    if irregular is not None:
        raise UsageError(irregular)
    catalog = load_catalog(paths)
    for problem in catalog.errors[:20]:
        err.print(f"[yellow]catalog:[/] {problem}", markup=True, highlight=False)
    for duplicate in catalog.duplicates[:20]:
        err.print(f"[yellow]catalog:[/] {duplicate}", markup=True, highlight=False)
    if len(catalog.errors) > 20:
        err.print(f"[yellow]catalog:[/] ... and {len(catalog.errors) - 20} more problems", markup=True)
    if not catalog.entries:
        raise UsageError(f"no usable record in {', '.join(paths)}")
    return catalog


def open_lookup(paths: Sequence[str], err: Console) -> PanicLookup:
    """The lookup of `paths`: a prebuilt catalog file (`.pbcat`, alone) is loaded as built; no paths, the
    embedded catalog, prebuilt once in the user's cache folder (`adapters/default_cache.py`); else the
    catalogs are read and indexed (see `open_catalog`)."""
    if any(is_prebuilt_path(path) for path in paths):
        from adapters.cli.prebuilt_commands import open_prebuilt  # noqa: PLC0415

        return open_prebuilt(paths)
    if not paths:
        from adapters.default_cache import open_default_lookup  # noqa: PLC0415

        return open_default_lookup(os.environ)
    from bot.lookup import PanicLookup  # noqa: PLC0415

    return PanicLookup(open_catalog(paths, err))


def open_worker_lookup(paths: tuple[str, ...]) -> PanicLookup:
    """The catalog of a batch worker that could not be forked from the command's process."""
    from rich.console import Console  # noqa: PLC0415

    return open_lookup(paths, Console(file=sys.stderr))


def read_input_bytes(stream: TextIO) -> str:
    """Decode what the user piped in; invalid UTF-8 is replaced, never a crash."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        return stream.read(MAX_INPUT_BYTES)
    data: bytes = buffer.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        print(
            f"panicbot: input is over {MAX_INPUT_BYTES // (1024 * 1024)} MB; only its start is read",
            file=sys.stderr,
        )
        data = data[:MAX_INPUT_BYTES]
    return data.decode("utf-8", errors="replace")


def _text_lines(stream: TextIO) -> TextIO:
    """Stdin as text where invalid UTF-8 is replaced instead of raising mid-batch."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        return stream
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")


def _looks_binary(text: str) -> bool:
    sample = text[:4096]
    if not sample:
        return False
    odd = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t\x1b"))
    return odd / len(sample) > 0.3


def command_lookup(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    paths = catalog_paths(args.catalog, dict(os.environ))
    if args.jobs < 0:
        raise UsageError("--jobs takes a number of processes (0: one per processor)")
    if args.jobs != 1 and not args.jsonl:
        raise UsageError("--jobs is for batches: give it with --jsonl")
    service = open_lookup(paths, err)
    if args.jsonl:
        from adapters.cli.batch import BatchWorkerError, default_jobs, lookup_jsonl  # noqa: PLC0415

        jobs = args.jobs or default_jobs()
        opener = functools.partial(open_worker_lookup, tuple(paths))
        try:
            lookup_jsonl(service, _text_lines(sys.stdin), out, args.limit, jobs=jobs, opener=opener)
        except BatchWorkerError as exc:
            err.print(f"panicbot: {exc}", markup=False)
            return EXIT_INTERNAL
        return EXIT_OK
    text = " ".join(args.text) if args.text else read_input_bytes(sys.stdin)
    if not text.strip():
        raise UsageError("nothing to look up: paste a panic on stdin or give words as arguments")
    if _looks_binary(text):
        err.print("[yellow]panicbot:[/] the input does not look like text; looking it up anyway", markup=True)
    result = service.lookup(text, limit=args.limit)
    if args.json:
        out.write(json.dumps(service.answer_json(result), ensure_ascii=False) + "\n")
    else:
        from rich.console import Console  # noqa: PLC0415

        from adapters.cli.render import print_result  # noqa: PLC0415

        print_result(service, result, Console(file=out, highlight=False, soft_wrap=False))
    return EXIT_OK if result.best else EXIT_NOT_FOUND


def command_catalog(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    from rich.console import Console  # noqa: PLC0415

    from adapters.cli.catalog_commands import run_lint, run_stats, run_validate  # noqa: PLC0415
    from adapters.cli.dataset_tools import run_merge  # noqa: PLC0415
    from adapters.cli.ecosystem_build import (  # noqa: PLC0415
        SOURCES_FILE,
        run_build,
        run_history,
        run_sources,
    )

    if args.catalog_command == "build":
        from adapters.cli.prebuilt_commands import run_prebuilt_build  # noqa: PLC0415

        return run_prebuilt_build(args.sources, Path(args.output), out, sys.stderr)
    if args.catalog_command in ("validate", "lint", "stats"):
        refuse_prebuilt(args.paths, f"catalog {args.catalog_command}")
    console = Console(file=out, highlight=False)
    if args.catalog_command == "validate":
        return run_validate(args.paths, console)
    if args.catalog_command == "lint":
        return run_lint(args.paths, console, as_json=args.json)
    if args.catalog_command == "harvest":
        return _harvest(args, out)
    if args.catalog_command == "merge":
        return run_merge([Path(p) for p in args.analysed], Path(args.baseline), Path(args.output))
    if args.catalog_command == "ecosystem":
        mirrors = Path(args.mirrors) if args.mirrors else None
        if args.ecosystem_command == "sources":
            return run_sources(Path(args.output or SOURCES_FILE), mirrors, args.git_dir or [])
        if args.ecosystem_command == "history":
            return run_history(Path(args.data or SOURCES_FILE.parent), mirrors, args.git_dir or [])
        out_dir = Path(args.output) if args.output else SOURCES_FILE.parent
        return run_build(Path(args.sources or SOURCES_FILE), out_dir, mirrors, args.git_dir or [])
    return run_stats(args.paths, console)


def _harvest(args: argparse.Namespace, out: TextIO) -> int:
    from adapters.cli.dataset_tools import run_harvest  # noqa: PLC0415

    version = args.dataset_version or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    if args.output in (None, "-"):
        return run_harvest(Path(args.src), args.repo, args.sha, out, version)
    target = Path(args.output)
    partial = target.with_name(target.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        code = run_harvest(Path(args.src), args.repo, args.sha, handle, version)
    if code == 0:
        partial.replace(target)  # never a half-written catalog under the real name
    else:
        partial.unlink(missing_ok=True)
    return code


def command_serve(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    """The bot's main job: every adapter whose credentials are set (or the one asked for) in one process;
    with none set, it says which variables to set and shows a demo lookup in the terminal."""
    # Imported here: the service loads the chat SDKs, which `lookup` should not wait for.
    import asyncio  # noqa: PLC0415

    from adapters.platforms import VARIABLES, configured_platforms  # noqa: PLC0415
    from adapters.serve.logs import configure_logging  # noqa: PLC0415
    from adapters.serve.main import Service, ServiceError, load_service_settings  # noqa: PLC0415

    platforms = [args.platform] if args.platform else configured_platforms(os.environ)
    if not platforms:
        variables = " or ".join(VARIABLES.values())
        err.print(f"panicbot: no chat credentials set ({variables}); running the terminal demo", markup=False)
        return run_demo(out, err)
    try:
        settings = load_service_settings()
        if args.port is not None:
            settings.panicbot_http_port = args.port
        if args.host is not None:
            settings.panicbot_http_host = args.host
        service = Service(settings, platforms, slack_http=args.http)
        service.stop_requested = lambda: _stop_signal_at is not None
        configure_logging(settings.panicbot_log_format)  # only once start-up checks have passed
        try:
            asyncio.run(service.run())
        finally:
            _ignore_stop_signals()
    except ServiceError as exc:
        raise UsageError(str(exc)) from None
    if service.failure:
        err.print(f"panicbot: {service.failure}", markup=False)
        return platform_exit(service.failure_error)
    return EXIT_OK


def command_console(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    """The maintainers' console alone (no chat platform), on 127.0.0.1 unless told otherwise; or, with
    `--hash-token`, the argon2 hash of a token read on stdin, for PANICBOT_CONSOLE_USERS."""
    import asyncio  # noqa: PLC0415

    from adapters.console.auth import hash_token  # noqa: PLC0415
    from adapters.serve.logs import configure_logging  # noqa: PLC0415
    from adapters.serve.main import Service, ServiceError, load_service_settings  # noqa: PLC0415

    if args.hash_token:
        token = sys.stdin.readline().strip()
        if not token:
            raise UsageError("--hash-token reads the token on stdin")
        out.write(hash_token(token) + "\n")
        return EXIT_OK
    try:
        settings = load_service_settings()
        settings.panicbot_http_host = args.host or os.environ.get("PANICBOT_HTTP_HOST") or "127.0.0.1"
        if args.port is not None:
            settings.panicbot_http_port = args.port
        if not settings.console_enabled:
            raise UsageError("set PANICBOT_CONSOLE_TOKEN (or PANICBOT_CONSOLE_USERS) to turn the console on")
        refuse_missing_database(settings.database_url.get_secret_value())  # it shows one; it makes none
        service = Service(settings, [])
        configure_logging(settings.panicbot_log_format)
        err.print(
            f"panicbot console on http://{settings.panicbot_http_host}:{settings.panicbot_http_port}/console/",
            markup=False,
        )
        try:
            asyncio.run(service.run())
        finally:
            _ignore_stop_signals()
    except ServiceError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def run_demo(out: TextIO, err: Console) -> int:
    from rich.console import Console  # noqa: PLC0415

    from adapters.cli.render import print_result  # noqa: PLC0415

    paths = catalog_paths(None, dict(os.environ))
    service = open_lookup(paths, err)
    console = Console(file=out, highlight=False)
    console.print(
        f"[bold]panicbot[/] demo: no Slack or Discord credentials set; {len(service.matcher)} records loaded "
        f"({'embedded default data set' if not paths else ', '.join(paths)}).\n"
        "Looking up this paste:\n",
        markup=True,
    )
    console.print(DEMO_PASTE, markup=False, style="dim")
    console.print()
    print_result(service, service.lookup(DEMO_PASTE), console)
    console.print("\nTry your own: [bold]uv run panicbot lookup < paste.txt[/]", markup=True)
    return EXIT_OK


def command_card(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    from adapters.cli.card_preview import run_card_preview  # noqa: PLC0415  (loads the chat SDKs)

    service = open_lookup(catalog_paths(args.catalog, dict(os.environ)), err)
    return run_card_preview(service, args.record_id, args.format, out, sys.stderr)


def command_report(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    """What the data set needs next, from what the running bot stored."""
    from adapters.cli.report import run_report  # noqa: PLC0415  (loads SQLAlchemy)
    from adapters.storage import SqlStore, StorageError, upgrade_database  # noqa: PLC0415

    url = args.database_url or os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    paths = catalog_paths(args.catalog, dict(os.environ))
    refuse_prebuilt(paths, args.command)
    refuse_missing_database(url)  # a mistyped path would be an empty database, and a report of nothing
    catalog = open_catalog(paths, err)
    try:
        upgrade_database(url)
        store = SqlStore(url)
    except StorageError as exc:
        raise UsageError(f"DATABASE_URL: {exc}") from None
    with store:
        if args.command == "prune":
            removed = store.prune(args.days)
            out.write(f"removed {removed} rows last seen more than {args.days} days ago\n")
            return EXIT_OK
        return run_report(store, [r.id for r in catalog.records], out, as_json=args.json, limit=args.limit)


def refuse_missing_database(url: str) -> None:
    """A UsageError for a SQLite URL whose file does not exist: commands that read what the service stored
    never create a database (the service does, at its start)."""
    from adapters.storage import missing_sqlite_file  # noqa: PLC0415  (loads SQLAlchemy)

    missing = missing_sqlite_file(url)
    if missing is not None:
        raise UsageError(f"DATABASE_URL: no database at {missing}")


def command_discord(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    """`panicbot discord sync-commands`: register /panic and "Explain this panic" (on demand only: Discord
    limits command writes per day)."""
    import asyncio  # noqa: PLC0415

    from adapters.discord.runner import sync_commands  # noqa: PLC0415
    from adapters.discord.settings import load_discord_settings  # noqa: PLC0415
    from adapters.settings import PlatformRefused, PlatformUnreachable  # noqa: PLC0415

    try:
        settings = load_discord_settings()
        names = asyncio.run(sync_commands(settings))
    except (PlatformRefused, PlatformUnreachable) as exc:
        err.print(f"panicbot: cannot sync Discord commands: {exc}", markup=False)
        return EXIT_REFUSED if isinstance(exc, PlatformRefused) else EXIT_UNAVAILABLE
    except SettingsError as exc:
        raise UsageError(f"cannot sync Discord commands: {exc}") from None
    out.write(f"registered {len(names)} command(s): {', '.join(names)}\n")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="panicbot", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    lookup = commands.add_parser("lookup", help="explain a pasted panic (stdin) or typed words (arguments)")
    lookup.add_argument("text", nargs="*", help="words to look up; without them the paste is read from stdin")
    lookup.add_argument(
        "--catalog",
        action="append",
        metavar="PATH",
        help=f"a JSONL/JSON catalog or a folder of them (repeatable; default ${CATALOG_ENV}, else embedded)",
    )
    output = lookup.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON object")
    output.add_argument("--jsonl", action="store_true", help='batch: stdin lines {"id","text"} -> JSON lines')
    lookup.add_argument("--limit", type=int, default=5, help="how many matches to list (default 5)")
    lookup.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="with --jsonl: N processes answer the batch, in input order (0: one per processor; default 1)",
    )

    catalog = commands.add_parser("catalog", help="check a catalog")
    catalog_commands = catalog.add_subparsers(dest="catalog_command", required=True)
    for name, text in (
        ("validate", "report every bad record; exit 1 if any"),
        ("stats", "summarise"),
        ("lint", "flag wrong records (patterns, analysis of another error, links); exit 1 on errors"),
    ):
        sub = catalog_commands.add_parser(name, help=text)
        if name in ("stats", "lint"):
            sub.add_argument("paths", nargs="*", metavar="PATH", help="default: the embedded catalog")
        else:
            sub.add_argument("paths", nargs="+", metavar="PATH")
        if name == "lint":
            sub.add_argument("--json", action="store_true", help="print one JSON object")
    build = catalog_commands.add_parser(
        "build", help="a prebuilt catalog file (.pbcat) that `lookup --catalog` loads fast"
    )
    build.add_argument(
        "sources", nargs="+", metavar="SRC", help="JSONL/JSON catalogs or folders (or default)"
    )
    build.add_argument("-o", "--output", required=True, metavar="OUT.pbcat")
    harvest = catalog_commands.add_parser(
        "harvest", help="baseline records for every panic site with a literal message in a Rust tree"
    )
    harvest.add_argument("src", metavar="SRC", help="a Rust source tree (or one .rs file)")
    harvest.add_argument("--repo", required=True, metavar="OWNER/NAME")
    harvest.add_argument("--sha", required=True, help="the commit the tree is at (for the GitHub links)")
    harvest.add_argument("-o", "--output", metavar="OUT", help="JSONL file to write (default: stdout)")
    harvest.add_argument("--dataset-version", help="datasetVersion to stamp (default: now, UTC)")
    merge = catalog_commands.add_parser(
        "merge", help="analysed records, with baseline records filling the sites they do not cover"
    )
    merge.add_argument("analysed", nargs="+", metavar="ANALYSED")
    merge.add_argument("--baseline", required=True, metavar="HARVESTED")
    merge.add_argument("-o", "--output", required=True, metavar="OUT")
    ecosystem = catalog_commands.add_parser(
        "ecosystem", help="the embedded ecosystem catalog: its release list, and the catalog rebuilt from it"
    )
    ecosystem_commands = ecosystem.add_subparsers(dest="ecosystem_command", required=True)
    eco_sources = ecosystem_commands.add_parser(
        "sources", help="resolve the releases to harvest (tags, dependency versions) to commits"
    )
    eco_build = ecosystem_commands.add_parser("build", help="harvest every source and write the catalog")
    eco_build.add_argument("--sources", help="the sources file (default: embedded)")
    eco_history = ecosystem_commands.add_parser(
        "history",
        help="rewrite only the history table (removals, condition changes) of a built catalog from git",
    )
    eco_history.add_argument("--data", metavar="DIR", help="the built catalog's folder (default: bot/data/)")
    for sub in (eco_sources, eco_build, eco_history):
        sub.add_argument("--mirrors", metavar="DIR", help="git directories as DIR/OWNER+NAME/repo")
        sub.add_argument(
            "--git-dir", action="append", metavar="OWNER/NAME=PATH", help="one repository's git dir"
        )
    eco_sources.add_argument(
        "-o", "--output", metavar="FILE", help="default: bot/data/ecosystem-sources.toml"
    )
    eco_build.add_argument("-o", "--output", metavar="DIR", help="default: bot/data/")

    card = commands.add_parser("card", help="preview a record's card as a platform receives it")
    card.add_argument("record_id")
    card.add_argument("--catalog", action="append", metavar="PATH", help="catalog (default: as for lookup)")
    card.add_argument("--format", choices=("text", "json", "slack", "discord"), default="text")

    report = commands.add_parser(
        "report", help="what the data set needs next: frequent unmatched panics, most 👎, never matched"
    )
    report.add_argument("--catalog", action="append", metavar="PATH", help="catalog (default: as for lookup)")
    report.add_argument("--json", action="store_true", help="print one JSON object")
    report.add_argument("--limit", type=int, default=10, help="rows per list (default 10)")
    report.add_argument("--database-url", help="default $DATABASE_URL, else sqlite:///panicbot.db")
    prune = commands.add_parser("prune", help="forget unmatched panics and match counts older than --days")
    prune.add_argument("--days", type=int, required=True)
    prune.add_argument("--database-url", help="default $DATABASE_URL, else sqlite:///panicbot.db")
    prune.set_defaults(catalog=None)

    discord_commands = commands.add_parser("discord", help="Discord administration")
    discord_sub = discord_commands.add_subparsers(dest="discord_command", required=True)
    discord_sub.add_parser("sync-commands", help="register /panic and the message command with Discord")

    serve = commands.add_parser(
        "serve", help="run the bot (a terminal demo when no chat credentials are set)"
    )
    # A metavar: argparse would otherwise list the choices while building the parser.
    serve.add_argument("platform", nargs="?", choices=_PlatformNames(), metavar="PLATFORM")
    serve.add_argument(
        "--http", action="store_true", help="Slack over HTTP (POST /slack/events) instead of Socket Mode"
    )
    serve.add_argument(
        "--host", help="address of the HTTP endpoints (default $PANICBOT_HTTP_HOST or 0.0.0.0)"
    )
    serve.add_argument(
        "--port",
        type=port_number,
        help="port of /healthz, /readyz, /metrics and, with --http, /slack/events "
        "(default $PANICBOT_HTTP_PORT or 8080)",
    )
    console = commands.add_parser(
        "console", help="the maintainers' web console alone, on 127.0.0.1 (PANICBOT_CONSOLE_TOKEN)"
    )
    console.add_argument("--host", help="address (default $PANICBOT_HTTP_HOST or 127.0.0.1)")
    console.add_argument("--port", type=int, help="port (default $PANICBOT_HTTP_PORT or 8080)")
    console.add_argument(
        "--hash-token", action="store_true", help="print the argon2 hash of a token read on stdin"
    )
    return parser


class _PlatformNames:
    """`serve`'s choices, read from the platform registry only when argparse checks or lists them (the
    registry loads aiohttp, which `lookup` does without)."""

    def __contains__(self, name: object) -> bool:
        from adapters.platforms import NAMES  # noqa: PLC0415

        return name in NAMES

    def __iter__(self) -> Iterator[str]:
        from adapters.platforms import NAMES  # noqa: PLC0415

        return iter(NAMES)


class _ErrorConsole:
    """stderr's rich Console, made when something is first printed there: `lookup --json` never loads
    rich. It has the one method the commands call on `err`."""

    def __init__(self) -> None:
        self._console: Console | None = None

    def print(self, *objects: Any, **options: Any) -> None:
        if self._console is None:
            from rich.console import Console  # noqa: PLC0415

            self._console = Console(file=sys.stderr, highlight=False, soft_wrap=True)
        self._console.print(*objects, **options)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = cast("Console", _ErrorConsole())
    handlers = {
        "lookup": command_lookup,
        "catalog": command_catalog,
        "card": command_card,
        "report": command_report,
        "prune": command_report,
        "discord": command_discord,
        "serve": command_serve,
        "console": command_console,
    }
    # A service may be stopped at any moment of its start-up (from reading its arguments, which loads the
    # platform registry, to its event loop taking signals over): one line and exit 0, never the default
    # action's silent 143. The command is the first argument (the parser has no option before it).
    words = sys.argv[1:] if argv is None else list(argv)
    global _stop_signal_at  # noqa: PLW0603
    _stop_signal_at = None
    before = _catch_sigterm() if words[:1] in (["serve"], ["console"]) else None
    if before is not None:
        sys.unraisablehook = _unraisable
    before_sigint = signal.getsignal(signal.SIGINT)
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "limit", 5) < 1:
            err.print("panicbot: --limit must be 1 or more")
            return EXIT_USAGE
        return handlers[args.command](args, out, err)
    except StoppedDuringStartUp as stopped:
        _say_stopped_during_start_up(str(stopped))
        return EXIT_OK
    except (UsageError, PrebuiltUsageError) as exc:
        err.print(f"panicbot: {exc}", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug of ours: one clear line, not a traceback, and a distinct exit code
        prebuilt = sys.modules.get("bot.prebuilt")
        if prebuilt is not None and isinstance(exc, prebuilt.PrebuiltError):
            # A record of a prebuilt file found corrupt when it is first read (the index was checked at load).
            err.print(f"panicbot: {exc}", markup=False)
            return EXIT_USAGE
        err.print(
            f"panicbot: internal error ({exc.__class__.__name__}: {exc}); please report it", markup=False
        )
        return EXIT_INTERNAL
    finally:
        if before is not None and argv is None:
            _ignore_stop_signals()  # the process ends now, stopped by a signal that may come twice
        elif before is not None:  # a caller in this process gets its handlers back
            signal.signal(signal.SIGTERM, before)
            if before_sigint is not None:
                signal.signal(signal.SIGINT, before_sigint)
        if argv is None:
            # The process's own arguments: it ends now. Its last full garbage collection would walk every
            # object of the catalog and its index (50 ms of a 0.5 s `lookup`); frozen, they are only freed.
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
