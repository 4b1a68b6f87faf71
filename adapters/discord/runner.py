"""Starting panicbot on Discord: `run_discord` (the gateway, until stopped) and `sync_commands` (on demand).

The CLI builds the settings and the catalog once and calls these. A problem only the operator can fix (the
token, the portal's intents) stops start-up with a `StartupError` that says what to do, not a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import aiohttp
import discord
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.bot import DiscordState, build_client, owe_through
from adapters.discord.settings import DiscordSettings, load_discord_settings
from adapters.platforms import Host, ServeOptions, until_reachable
from adapters.settings import PlatformRefused, PlatformUnreachable
from bot import Catalog, Lookup, PanicLookup

log = logging.getLogger("panicbot.discord")

# discord.py's loggers whose DEBUG lines carry whole payloads (pastes) and webhook URLs (interaction tokens).
DISCORD_LOGGERS = (
    "discord.client",
    "discord.gateway",
    "discord.http",
    "discord.shard",
    "discord.state",
    "discord.webhook.async_",
)
_TOKEN_IN_URL = re.compile(r"(/(?:interactions|webhooks)/\d+/)[^/?\s'\"]+")


def _reason(exc: BaseException) -> str:
    """An exception as one short line (a network error's text can span lines)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


class StartupError(PlatformRefused):
    """Discord refused to start the bot for a reason the operator must fix; the message says how."""


def intent_help(application_id: int | None) -> str:
    page = f"https://discord.com/developers/applications/{application_id or '<application id>'}/bot"
    return (
        "Discord refused the Message Content intent (gateway close code 4014). panicbot needs it to read "
        "pastes in the help channels (DISCORD_HELP_CHANNEL_IDS). Turn it on: open "
        f"{page}, under Privileged Gateway Intents switch on MESSAGE CONTENT INTENT, save, and start "
        "panicbot again (or leave DISCORD_HELP_CHANNEL_IDS empty to run without auto-reply)."
    )


TOKEN_HELP = (
    "Discord refused DISCORD_TOKEN (401 Unauthorized): copy the bot token again from the developer portal "
    "(Bot, Reset Token) and set it without the 'Bot ' prefix."
)


def _summary(value: Any) -> Any:
    """A payload as its shape, a URL without its token: what a debug log may keep."""
    if isinstance(value, dict):
        if "op" in value:
            return f"<gateway op {value.get('op')} {value.get('t') or ''} seq {value.get('s')}>"
        return f"<JSON object of {len(json.dumps(value, default=str))} characters>"
    if isinstance(value, list):
        return f"<JSON array of {len(value)} items>"
    if isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text.lstrip().startswith(("{", "[")):
            return f"<JSON of {len(text)} characters>"
        return _TOKEN_IN_URL.sub(r"\1[token]", text)
    if value.__class__.__name__ in {"URL", "FormData"}:
        return _TOKEN_IN_URL.sub(r"\1[token]", str(value))
    return value


class ScrubPayloads(logging.Filter):
    """Keeps pastes and interaction tokens out of discord.py's debug logs (it logs every event and body)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_summary(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: _summary(arg) for key, arg in record.args.items()}
        return True


class OneLineReconnects(logging.Filter):
    """discord.py logs a traceback with every attempt to reconnect the gateway ("Attempting a reconnect in
    1.23s"): one line per attempt instead, as for every platform, with the reason at its end."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and "reconnect" in str(record.msg).lower():
            record.msg, record.args = f"{record.getMessage()} ({_reason(error)})", ()
            record.exc_info, record.exc_text = None, None
        return True


def quiet_discord_logs() -> None:
    for name in DISCORD_LOGGERS:
        logger = logging.getLogger(name)
        for kind in (ScrubPayloads, OneLineReconnects):
            if not any(isinstance(existing, kind) for existing in logger.filters):
                logger.addFilter(kind())


@contextlib.contextmanager
def discord_api(url: str) -> Iterator[None]:
    """discord.py's REST base (and so interaction callbacks and webhooks) set to `url` for a while.

    Both are class attributes: they are put back afterwards, so one process can run a bot, then another.
    """
    base, gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = url
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = base, gateway


# What says Discord cannot be reached (rather than refused): no connection, a timeout, its 5xx outage (after
# discord.py's own retries), the gateway's address not given.
UNREACHABLE = (
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    discord.DiscordServerError,
    discord.GatewayNotFound,
)


async def _logged_in(
    settings: DiscordSettings, service: Lookup, state: DiscordState | None, token: str
) -> discord.Client:
    """A client logged in over REST (and its setup hook run), or `PlatformUnreachable`; a refused token is a
    `StartupError`. A client that failed is closed: each attempt gets a new one."""
    client = build_client(settings, service, state)
    try:
        await client.login(token)
    except discord.LoginFailure:
        await client.close()
        log.error("%s", TOKEN_HELP)
        raise StartupError(TOKEN_HELP) from None
    except UNREACHABLE as exc:
        await client.close()
        raise PlatformUnreachable(
            f"Discord is not reachable at {settings.discord_api_url} ({_reason(exc)})"
        ) from None
    except BaseException:
        await client.close()
        raise
    return client


async def run_discord(settings: DiscordSettings, service: Lookup, state: DiscordState | None = None) -> None:
    """Connect (all configured shards) and answer until cancelled or closed. Commands are not synced here:
    Discord allows 200 command creates a day per guild, so that is `sync_commands`' job, on demand.

    While Discord cannot be reached the login is retried as every platform's start is (`until_reachable`);
    once logged in, discord.py reconnects the gateway by itself."""
    quiet_discord_logs()
    with discord_api(settings.discord_api_url):
        help_channels = len(settings.discord_help_channel_ids)
        log.info(
            "connecting to Discord (%s; auto-reply in %d channel%s; %d records)",
            f"shards {settings.discord_shard_ids or 'all'} of {settings.discord_shard_count}"
            if settings.sharded
            else "one connection",
            help_channels,
            "" if help_channels == 1 else "s",
            len(service.matcher.records),
        )
        token = settings.discord_token.get_secret_value()
        client = await until_reachable(lambda: _logged_in(settings, service, state, token), log)
        try:
            await client.connect()
        except discord.PrivilegedIntentsRequired:
            message = intent_help(client.application_id)
            log.error("%s", message)
            raise StartupError(message) from None
        finally:
            await client.close()


async def sync_commands(settings: DiscordSettings) -> list[str]:
    """Register `/panic` and "Explain this panic" globally (one bulk overwrite); the names registered.

    Logs in over REST only: no gateway connection, no catalog needed (only the commands' shapes).
    """
    quiet_discord_logs()
    with discord_api(settings.discord_api_url):
        client = build_client(settings, PanicLookup(Catalog()), DiscordState())
        try:
            async with client:
                try:
                    await client.login(settings.discord_token.get_secret_value())
                except discord.LoginFailure:
                    raise StartupError(TOKEN_HELP) from None
                synced = await client.tree.sync()
        except discord.Forbidden as exc:
            raise StartupError(
                f"Discord refused the command sync ({exc.status} {exc.text or 'Forbidden'}): invite the bot "
                "with the applications.commands scope (README, Discord step 2)"
            ) from None
        except (aiohttp.ClientError, OSError, TimeoutError, discord.DiscordServerError) as exc:
            raise PlatformUnreachable(
                f"Discord is not reachable at {settings.discord_api_url} ({_reason(exc)})"
            ) from None
    names = [command.name for command in synced]
    log.info("synced %d application commands: %s", len(names), ", ".join(names))
    return names


class DiscordPlatform:
    """Discord inside `panicbot serve`: the gateway connection is the adapter's whole life."""

    name = "discord"

    def load_settings(self, options: ServeOptions) -> DiscordSettings:
        return load_discord_settings()

    async def start(self, host: Host, settings: DiscordSettings, options: ServeOptions) -> DiscordState:
        cooldown_seconds = settings.discord_auto_reply_cooldown_seconds
        shared = await host.shared_state("panicbot:discord", cooldown_seconds)
        state = DiscordState(
            cooldown_seconds=cooldown_seconds,
            feedback=host.feedback,
            observer=host.observer,
            cooldown=shared.get("cooldown"),
            rate_limit=shared.get("rate_limit"),
        )
        # Follow-ups owed after an ack wait in the outbox (the worker starts once logged in).
        worker = owe_through(state, host.outbox(self.name)).worker

        async def drain(grace: float) -> None:
            # Before the connection closes (it takes the HTTP session with it): replies in flight finish
            # first; owed follow-ups not started stay in the outbox (logged by id) for the next start.
            await asyncio.gather(worker.stop(grace), state.drain(grace))

        host.on_stop(drain, before_close=True)
        host.ready_when(self.name, lambda: state.connected)
        host.run_for_life(run_discord(settings, host.live, state), "Discord")
        return state


PLATFORM = DiscordPlatform()
