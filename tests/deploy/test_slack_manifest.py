"""The Slack app manifest names what the adapter listens for, so one paste creates a working app."""

from __future__ import annotations

from pathlib import Path

import yaml

from adapters.slack.app import COMMAND, SHORTCUT_CALLBACK_ID
from adapters.slack.server import EVENTS_PATH

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "slack" / "manifest.yml"


def test_manifest_matches_the_adapter() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    features = manifest["features"]
    assert [c["command"] for c in features["slash_commands"]] == [COMMAND]
    shortcuts = [(s["type"], s["callback_id"]) for s in features["shortcuts"]]
    assert shortcuts == [("message", SHORTCUT_CALLBACK_ID)]
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) >= {"app_mention", "message.channels"}
    assert settings["interactivity"]["is_enabled"] is True
    for url in (
        settings["interactivity"]["request_url"],
        settings["event_subscriptions"]["request_url"],
        features["slash_commands"][0]["url"],
    ):
        assert url.endswith(EVENTS_PATH)
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "channels:history", "chat:write", "commands"} <= scopes
    # A resumed delivery reads the conversation for its earlier post: a Share in a DM or group DM too.
    assert {"groups:history", "im:history", "mpim:history"} <= scopes
