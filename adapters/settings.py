"""What every adapter's settings share: the error type, how a bad setting is reported (naming the variable,
never its value), the catalog paths and the database default. Read once at start-up, passed down.

It imports no pydantic_settings (50 ms): `panicbot lookup` needs only the names here; the settings class
every adapter reads the catalog setting with is in `adapters/catalog_settings.py`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_settings import BaseSettings

CATALOG_ENV = "PANICBOT_CATALOG"
DEFAULT_DATABASE_URL = "sqlite:///panicbot.db"
# A stop signal this soon after the first is that one delivered twice (systemd's default KillMode signals
# every process of the unit, `uv run` forwards what its process group also gets): it changes nothing.
SAME_SIGNAL_SECONDS = 1.0

SettingsT = TypeVar("SettingsT", bound="BaseSettings")


class SettingsError(Exception):
    """A missing or malformed setting: the message names the variable and never shows its value."""


class PlatformRefused(SettingsError):
    """A platform refused a credential or a permission (a revoked token, a missing intent): retrying cannot
    help, the operator must fix the setting the message names."""


class PlatformUnreachable(Exception):
    """A platform could not be reached (no network, DNS, a timeout, its own outage): not a bug of ours,
    and maybe gone on the next try."""


def split_catalog_paths(raw: str) -> list[str]:
    """`PANICBOT_CATALOG`'s paths: several separated by `os.pathsep`, blanks ignored."""
    return [part for part in raw.split(os.pathsep) if part.strip()]


def describe_problems(exc: ValidationError) -> str:
    """One line naming each bad variable and why; a model-level check names its variables itself."""
    problems = []
    for error in exc.errors():
        reason = error["msg"].removeprefix("Value error, ")
        if not error["loc"]:
            problems.append(reason)
            continue
        variable = str(error["loc"][0]).upper()
        problems.append(f"{variable} {'is not set' if error['type'] == 'missing' else reason}")
    return "; ".join(problems)


def load_settings(settings_class: type[SettingsT]) -> SettingsT:
    """`settings_class` filled from the environment, or a SettingsError naming the variables."""
    from pydantic import ValidationError  # noqa: PLC0415  # see the module's docstring

    try:
        return settings_class()
    except ValidationError as exc:
        raise SettingsError(describe_problems(exc)) from None
