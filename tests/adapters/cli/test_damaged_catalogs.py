"""Every damaged catalog is one line on stderr and exit 2, never exit 70 ("please report it") nor a hang:
`lookup --catalog X` and `serve` with PANICBOT_CATALOG=X, for each damaged kind of `.pbcat`, and for a
catalog path (`.pbcat` or `.jsonl`) that is a FIFO, a device or a socket."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.cli.main import EXIT_USAGE
from tests.adapters.cli.test_main import run
from tests.support.damaged_pbcat import FOUND_AT_LOOKUP, KIND_NAMES, damaged_kinds, small_prebuilt_bytes

PASTE = (
    b"thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
    b"Can't differentiate deform conv 2d backward.\n"
)


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    good, _ = small_prebuilt_bytes(tmp_path_factory.mktemp("small"))
    return damaged_kinds(good)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err
    return err.strip()


def test_the_kinds_are_the_supports(kinds: dict[str, bytes]) -> None:
    assert sorted(KIND_NAMES) == sorted(kinds)


@pytest.mark.parametrize("name", KIND_NAMES)
def test_lookup_with_a_damaged_prebuilt_catalog_is_one_line_and_exit_2(
    name: str,
    kinds: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = damaged_file(tmp_path, kinds[name])
    code, out = run(monkeypatch, ["lookup", "--json", "--catalog", str(path)], PASTE)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_line(capsys)
    assert line.startswith(f"panicbot: {path}: ") and line.endswith(
        "rebuild it with `panicbot catalog build`"
    )


@pytest.mark.parametrize("name", sorted(set(KIND_NAMES) - FOUND_AT_LOOKUP))
def test_serve_with_a_damaged_prebuilt_catalog_is_one_line_and_exit_2(
    name: str,
    kinds: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = damaged_file(tmp_path, kinds[name])
    serve_refuses(path, monkeypatch, capsys)


def damaged_file(folder: Path, content: bytes) -> Path:
    path = folder / "catalog.pbcat"
    path.write_bytes(content)
    return path


def serve_refuses(path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """`panicbot serve slack --http` with PANICBOT_CATALOG=path: refused at start-up (Slack is never asked:
    its address is a closed local port)."""
    monkeypatch.setenv("PANICBOT_CATALOG", str(path))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9/api/")
    code, out = finished(lambda: run(monkeypatch, ["serve", "slack", "--http", "--port", "0"]))
    assert (code, out) == (EXIT_USAGE, "")
    line = one_line(capsys)
    assert line.startswith(f"panicbot: PANICBOT_CATALOG cannot be served: {path}: "), line
    return line


def finished(call: Callable[[], tuple[int, str]], seconds: float = 30.0) -> tuple[int, str]:
    """What `call` returned, or a failed test when it had not returned after `seconds` (a blocked read)."""
    outcome: list[tuple[int, str]] = []
    thread = threading.Thread(target=lambda: outcome.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds} s"
    return outcome[0]


@pytest.fixture(params=["a FIFO", "a character device", "a socket"])
def not_a_file(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(kind, folder) where catalog.pbcat and catalog.jsonl are that kind of thing."""
    servers = []
    for name in ("catalog.pbcat", "catalog.jsonl"):
        path = tmp_path / name
        if request.param == "a FIFO":
            os.mkfifo(path)
        elif request.param == "a character device":
            path.symlink_to("/dev/zero")
        else:
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            servers.append(server)
    yield request.param, str(tmp_path)
    for server in servers:
        server.close()


@pytest.mark.parametrize("name", ["catalog.pbcat", "catalog.jsonl"])
def test_a_catalog_path_that_is_not_a_file_is_refused_unread(
    name: str,
    not_a_file: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kind, folder = not_a_file
    path = Path(folder) / name
    code, out = finished(lambda: run(monkeypatch, ["lookup", "--catalog", str(path)], PASTE))
    assert (code, out) == (EXIT_USAGE, "")
    line = one_line(capsys)
    assert line.startswith(f"panicbot: {path}: not a regular file ({kind})"), line
    served = serve_refuses(path, monkeypatch, capsys)
    assert f"not a regular file ({kind})" in served
