"""The GitHub App's manifest asks for what the adapter uses, no more, and points at its webhook."""

from __future__ import annotations

from pathlib import Path

import yaml

from adapters.github.app import EVENTS_PATH

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "github" / "app.yml"


def test_the_manifest_asks_for_issues_and_metadata_and_the_two_events() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert manifest["default_permissions"] == {"issues": "write", "metadata": "read"}
    assert sorted(manifest["default_events"]) == ["issue_comment", "issues"]
    assert manifest["hook_attributes"]["url"].endswith(EVENTS_PATH)
    assert manifest["hook_attributes"]["active"] is True
    assert manifest["public"] is False
