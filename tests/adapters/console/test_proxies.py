"""The client's address behind proxies, and what it decides: failed logins slow down per address, a flood
from many addresses never stops the right token, and a logout ends the session on the server."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters.console.auth import FREE_FAILURES, Authenticator, client_address, parse_networks
from adapters.console.settings import ConsoleSettings
from tests.adapters.console.server import TOKEN, Running, running_console
from tests.adapters.console.test_pages import call
from tests.support.local_only import isolate

TRUSTED = parse_networks("127.0.0.1, 10.0.0.0/8")


def test_x_forwarded_for_is_read_only_from_trusted_proxies() -> None:
    # A trusted proxy appended the client: believed.
    assert client_address("127.0.0.1", "203.0.113.7", TRUSTED) == "203.0.113.7"
    # An untrusted peer may write anything: ignored.
    assert client_address("198.51.100.9", "203.0.113.7", TRUSTED) == "198.51.100.9"
    # What the client wrote itself is left of the hops trusted proxies added: never reached.
    assert client_address("127.0.0.1", "1.1.1.1, 203.0.113.7, 10.2.3.4", TRUSTED) == "203.0.113.7"
    assert client_address("127.0.0.1", "10.9.9.9, 10.2.3.4", TRUSTED) == "10.9.9.9"  # all proxies
    assert client_address("127.0.0.1", "garbage", TRUSTED) == "127.0.0.1"
    assert client_address("127.0.0.1", None, TRUSTED) == "127.0.0.1"
    assert client_address("127.0.0.1", "203.0.113.7", ()) == "127.0.0.1"  # no proxy trusted: the peer
    assert client_address("::1", "2001:db8::5", parse_networks("::1")) == "2001:db8::5"


def test_the_trusted_proxies_setting_names_a_bad_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANICBOT_TRUSTED_PROXIES", "10.0.0.1, 10.1.0.0/16")
    assert [str(n) for n in ConsoleSettings().trusted_proxies] == ["10.0.0.1/32", "10.1.0.0/16"]
    monkeypatch.setenv("PANICBOT_TRUSTED_PROXIES", "10.0.0.1, proxy.internal")
    with pytest.raises(ValidationError, match=r"'proxy\.internal' is not an IP address"):
        ConsoleSettings()


def test_failed_logins_slow_down_per_address_and_a_login_forgets_them() -> None:
    auth = Authenticator(token="t", users={}, key=b"k" * 32, session_seconds=60)
    for attempt in range(FREE_FAILURES):
        assert auth.wait_seconds("a", now=100.0 + attempt) == 0
        auth.failed("a", now=100.0 + attempt)
    waits = []
    now = 110.0
    for _ in range(8):
        auth.failed("a", now=now)
        waits.append(auth.wait_seconds("a", now=now))
        now += waits[-1]
    assert waits == [2, 4, 8, 16, 32, 60, 60, 60]  # doubling, at most a minute
    assert auth.wait_seconds("b", now=now) == 0  # only that address waits
    assert auth.wait_seconds("a", now=now + 16 * 60) == 0  # forgotten after a quiet quarter of an hour
    auth.succeeded("a")
    assert auth.wait_seconds("a", now=now) == 0


def test_a_revoked_session_and_a_new_key_end_sessions() -> None:
    auth = Authenticator(token="t", users={}, key=b"k" * 32, session_seconds=60)
    cookie, other = auth.new_session("alice"), auth.new_session("bob")
    session = auth.session(cookie)
    assert session is not None
    auth.revoke(session)
    assert auth.session(cookie) is None and auth.session(other) is not None
    rotated = Authenticator(token="t", users={}, key=b"n" * 32, session_seconds=60)
    assert rotated.session(other) is None


@pytest.fixture(scope="module")
def proxied() -> Iterator[Running]:
    """The console behind a proxy on 127.0.0.1 (the test client's address)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, "PANICBOT_CATALOG", "DATABASE_URL", "REDIS_URL", "PANICBOT_CONSOLE_TOKEN")
        folder = Path(tempfile.mkdtemp(prefix="console-proxied-"))
        try:
            with running_console(folder, panicbot_trusted_proxies="127.0.0.1") as running:
                yield running
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _login(running: Running, token: str, forwarded: str) -> int:
    reply = call(f"{running.base}/console/login", {"token": token}, headers={"X-Forwarded-For": forwarded})
    return reply.status


def test_behind_a_trusted_proxy_each_client_is_slowed_alone(proxied: Running) -> None:
    for _ in range(FREE_FAILURES):
        assert _login(proxied, "wrong", "203.0.113.1") == 401
    blocked = call(
        f"{proxied.base}/console/login", {"token": TOKEN}, headers={"X-Forwarded-For": "203.0.113.1"}
    )
    assert blocked.status == 429 and int(blocked.headers["Retry-After"]) >= 1
    # Another client behind the same proxy is not held back by the first one's failures.
    assert _login(proxied, TOKEN, "203.0.113.2") == 303
    # A flood of bad logins from many addresses: no global lockout, the right token still logs in.
    for host in range(60):
        for _ in range(FREE_FAILURES + 1):
            _login(proxied, "wrong", f"198.51.100.{host}")
    assert _login(proxied, TOKEN, "192.0.2.77") == 303


def test_an_untrusted_peer_cannot_pick_its_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, "PANICBOT_CATALOG", "DATABASE_URL", "REDIS_URL", "PANICBOT_CONSOLE_TOKEN")
    # The test client (127.0.0.1) is not one of the trusted proxies here.
    with running_console(tmp_path, panicbot_trusted_proxies="10.0.0.0/8") as untrusted:
        for attempt in range(FREE_FAILURES):
            # A new X-Forwarded-For each time: ignored, every failure counts against the peer itself.
            assert _login(untrusted, "wrong", f"203.0.113.{100 + attempt}") == 401
        assert _login(untrusted, TOKEN, "203.0.113.250") == 429


def test_logout_ends_the_session_on_the_server(proxied: Running) -> None:
    reply = call(f"{proxied.base}/console/login", {"token": TOKEN}, headers={"X-Forwarded-For": "192.0.2.1"})
    cookie = reply.headers["Set-Cookie"].split(";")[0]
    page = call(f"{proxied.base}/console/records", cookie=cookie)
    assert page.status == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.body)
    assert csrf is not None
    assert call(f"{proxied.base}/console/logout", {"csrf": csrf.group(1)}, cookie).status == 303
    # The same cookie, replayed (a copy kept before the browser dropped it): no longer a session.
    replay = call(f"{proxied.base}/console/records", cookie=cookie)
    assert replay.status == 302 and replay.headers["Location"] == "/console/login"
    assert call(f"{proxied.base}/console/records", {"q": "x", "csrf": csrf.group(1)}, cookie).status == 403
