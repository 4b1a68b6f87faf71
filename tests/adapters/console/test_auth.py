"""Credentials, signed sessions and CSRF tokens, without a server."""

from __future__ import annotations

import io

import pytest

from adapters.cli.main import main as panicbot
from adapters.console.auth import Authenticator, hash_token, parse_users
from adapters.settings import SettingsError


def authenticator(**overrides: object) -> Authenticator:
    values: dict[str, object] = {
        "token": "shared-token",
        "users": {},
        "key": b"k" * 32,
        "session_seconds": 60,
    }
    values.update(overrides)
    return Authenticator(**values)  # type: ignore[arg-type]


def test_the_shared_token_and_hashed_users_are_accepted_and_nothing_else() -> None:
    auth = authenticator(users=parse_users(f"alice:{hash_token('alice-secret')}; bob:{hash_token('bob-2')}"))
    assert auth.check("shared-token") == "console"
    assert auth.check("alice-secret") == "alice"
    assert auth.check("bob-2") == "bob"
    assert auth.check("shared-token ") is None
    assert auth.check("") is None
    assert auth.check("alice") is None
    assert authenticator(token=None).check("") is None


def test_a_malformed_user_list_names_the_setting() -> None:
    with pytest.raises(SettingsError, match="PANICBOT_CONSOLE_USERS"):
        parse_users("alice:plaintext-password")
    with pytest.raises(SettingsError):
        parse_users(":$argon2id$x")


def test_a_session_is_signed_expires_and_cannot_be_forged() -> None:
    auth = authenticator()
    cookie = auth.new_session("alice", now=1000.0)
    session = auth.session(cookie, now=1030.0)
    assert session is not None and session.user == "alice"
    assert auth.session(cookie, now=1061.0) is None  # expired
    body, signature = cookie.split(".")
    assert auth.session(body + "." + signature[:-2] + "AA", now=1030.0) is None
    assert auth.session(cookie, now=1030.0) is not None
    other = authenticator(key=b"x" * 32)
    assert other.session(cookie, now=1030.0) is None  # another key: every session ends
    for junk in ("", ".", "abc", "a.b", "%%%.%%%", "x" * 5000):
        assert auth.session(junk) is None


def test_csrf_tokens_belong_to_one_session() -> None:
    auth = authenticator()
    first = auth.session(auth.new_session("alice"))
    second = auth.session(auth.new_session("alice"))
    assert first is not None and second is not None
    assert auth.csrf_ok(first, auth.csrf_token(first))
    assert not auth.csrf_ok(first, auth.csrf_token(second))
    assert not auth.csrf_ok(first, "")
    assert not auth.csrf_ok(first, None)
    assert auth.login_csrf_ok("nonce", auth.login_csrf("nonce"))
    assert not auth.login_csrf_ok("other", auth.login_csrf("nonce"))


def test_hash_token_command_prints_a_hash_the_console_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("my-console-token\n"))
    out = io.StringIO()
    assert panicbot(["console", "--hash-token"], out=out) == 0
    hashed = out.getvalue().strip()
    assert hashed.startswith("$argon2id$")
    assert authenticator(token=None, users=parse_users(f"me:{hashed}")).check("my-console-token") == "me"


def test_console_command_needs_a_credential(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("PANICBOT_CONSOLE_TOKEN", "PANICBOT_CONSOLE_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", "sqlite:///:memory:")
    assert panicbot(["console", "--port", "0"]) == 2
    assert "PANICBOT_CONSOLE_TOKEN" in capsys.readouterr().err
