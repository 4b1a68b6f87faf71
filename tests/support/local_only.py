"""Tests talk to fakes on 127.0.0.1 only: no inherited settings, no proxy in the way."""

from __future__ import annotations

import pytest

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def isolate(monkeypatch: pytest.MonkeyPatch, *settings: str) -> pytest.MonkeyPatch:
    """Unset `settings` and every proxy variable, and keep loopback traffic off any proxy."""
    for name in (*settings, *PROXY_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return monkeypatch
