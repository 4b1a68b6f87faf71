"""Network failures and platform refusals are not bugs: their own message and exit code (69 unreachable, 77
refused), never "internal error ... please report it" (70); a bad --port or a channel name where an id is
expected is refused with a message naming the setting."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from adapters import platforms
from adapters.cli.main import EXIT_USAGE, main
from adapters.settings import SettingsError
from adapters.slack.settings import load_slack_settings
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.github.fake_github import APP_ID, FakeGitHub
from tests.adapters.github.test_app import KEY, KEY_PEM
from tests.adapters.github.test_app import SECRET as GITHUB_SECRET
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import BOT_TOKEN, SIGNING_SECRET
from tests.support.local_only import isolate

VARIABLES = (
    "DISCORD_TOKEN",
    "DISCORD_API_URL",
    "DISCORD_HELP_CHANNEL_IDS",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "SLACK_AUTO_REPLY_CHANNELS",
    "PANICBOT_CATALOG",
    "PANICBOT_HTTP_PORT",
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_APP_ID",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_FILE",
    "GITHUB_TOKEN",
    "GITHUB_API_URL",
)
DISCORD_TOKEN = "discord-test-token"
ROOT = Path(__file__).resolve().parents[3]
SEEDS = ROOT / "tests" / "fixtures" / "seeds.jsonl"
EXIT_UNAVAILABLE, EXIT_REFUSED = 69, 77  # README, "Running it as a service"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    isolate(monkeypatch, *VARIABLES)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-test-')}/panicbot.db")
    monkeypatch.setenv("PANICBOT_SHUTDOWN_DRAIN_SECONDS", "0")
    monkeypatch.setenv("PANICBOT_HTTP_HOST", "127.0.0.1")
    return monkeypatch


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv, out=io.StringIO())
    return code, capsys.readouterr().err


def test_sync_commands_without_network_is_unavailable_not_a_bug(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    env.setenv("DISCORD_API_URL", f"http://127.0.0.1:{closed_port()}/api/v10")
    code, err = run(["discord", "sync-commands"], capsys)
    assert code == EXIT_UNAVAILABLE, err  # before: 70, "internal error ... please report it"
    assert "internal error" not in err and "report" not in err
    assert "Discord is not reachable" in err and len(err.strip().splitlines()) == 1
    assert DISCORD_TOKEN not in err


def test_sync_commands_with_a_refused_token_is_refused(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> tuple[int, str]:
        async with FakeDiscord("the-token-discord-knows") as fake:
            env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
            env.setenv("DISCORD_API_URL", fake.api_url)
            return await asyncio.to_thread(run, ["discord", "sync-commands"], capsys)

    code, err = asyncio.run(scenario())
    assert code == EXIT_REFUSED, err  # before: 2, a usage error
    assert "DISCORD_TOKEN" in err and DISCORD_TOKEN not in err


def test_serve_with_a_refused_slack_token_exits_refused_naming_it(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setattr(platforms, "RETRY_FIRST_SECONDS", 0.05, raising=False)

    async def scenario() -> tuple[int, str]:
        async with FakeSlack("xoxb-the-token-slack-knows") as fake:
            env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
            env.setenv("SLACK_API_URL", fake.api_url)
            argv = ["serve", "slack", "--http", "--port", "0"]
            return await asyncio.wait_for(asyncio.to_thread(run, argv, capsys), timeout=30)

    code, err = asyncio.run(scenario())
    assert code == EXIT_REFUSED, err
    assert "SLACK_BOT_TOKEN" in err and "invalid_auth" in err and BOT_TOKEN not in err


def test_serve_github_with_a_refused_app_id_exits_refused_naming_it(env: pytest.MonkeyPatch) -> None:
    async def scenario() -> tuple[int | None, str]:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            environ = {
                **os.environ,
                "GITHUB_WEBHOOK_SECRET": GITHUB_SECRET,
                "GITHUB_APP_ID": str(APP_ID + 1),  # mistyped
                "GITHUB_PRIVATE_KEY": KEY_PEM,
                "GITHUB_API_URL": fake.api_url,
                "PANICBOT_CATALOG": str(SEEDS),
            }
            process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "adapters.cli.main", "serve", "github", "--port", "0"),
                cwd=ROOT,
                env=environ,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its worker processes go with it, and the pipe closes
            )
            try:
                _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
            except TimeoutError:  # before: ready, and serving until this timeout
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
                return None, "still serving after 30 s"
            return process.returncode, stderr.decode()

    code, err = asyncio.run(scenario())
    assert code == EXIT_REFUSED, err
    [line] = [line for line in err.splitlines() if line.startswith("panicbot: ")]  # the rest: JSON logs
    assert "GITHUB_APP_ID" in line
    assert GITHUB_SECRET not in err and "PRIVATE KEY" not in err


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(
    port: str, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "slack", "--http", "--port", port], out=io.StringIO())
    err = capsys.readouterr().err
    assert exit_.value.code == EXIT_USAGE  # before: 70, an OverflowError "please report it"
    assert "--port" in err and "internal error" not in err


@pytest.mark.parametrize("channels", ["#general", "general", "C0123456789,#random"])
def test_slack_channel_names_where_ids_are_expected_are_refused_naming_the_setting(
    channels: str, env: pytest.MonkeyPatch
) -> None:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    env.setenv("SLACK_AUTO_REPLY_CHANNELS", channels)
    with pytest.raises(SettingsError) as refused:  # before: accepted, and never auto-replied anywhere
        load_slack_settings(http_mode=True)
    assert "SLACK_AUTO_REPLY_CHANNELS must be channel ids" in str(refused.value)
    assert "#" not in str(refused.value)


def test_serve_refuses_discord_channel_ids_that_are_not_numbers(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    env.setenv("DISCORD_HELP_CHANNEL_IDS", "help,#rust")
    code, err = run(["serve", "discord", "--port", "0"], capsys)
    assert code == EXIT_USAGE, err
    assert "DISCORD_HELP_CHANNEL_IDS" in err and "#rust" not in err
