"""The console over HTTP, against the running service: off unless configured, the login and its cookie, the
refusals (no session, forged session, wrong CSRF token, another origin), headers on every response, drafts
checked before they are written, the chart without script."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest

from adapters.serve.main import Service, ServiceSettings
from bot.harvest import record_id
from tests.adapters.console.server import TOKEN, Running, running_console
from tests.support.local_only import isolate


@dataclass
class Reply:
    status: int
    headers: Message
    body: str


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: object, **__: object) -> None:
        return None


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def call(
    url: str, form: dict[str, str] | None = None, cookie: str = "", headers: dict[str, str] | None = None
) -> Reply:
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if form is not None else "GET")
    if cookie:
        request.add_header("Cookie", cookie)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with OPENER.open(request, timeout=10) as response:
            return Reply(response.status, response.headers, response.read().decode())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.headers, exc.read().decode())


@pytest.fixture(scope="module")
def console() -> Iterator[Running]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, "PANICBOT_CATALOG", "DATABASE_URL", "REDIS_URL", "PANICBOT_CONSOLE_TOKEN")
        folder = Path(tempfile.mkdtemp(prefix="console-pages-"))
        try:
            with running_console(folder) as running:
                yield running
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def login(console: Running) -> tuple[str, str]:
    """(the session cookie header, the session's CSRF token)."""
    reply = call(f"{console.base}/console/login", {"token": TOKEN})
    assert reply.status == 303
    cookie = reply.headers["Set-Cookie"].split(";")[0]
    page = call(f"{console.base}/console/records", cookie=cookie)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.body)
    assert csrf is not None
    return cookie, csrf.group(1)


def test_the_console_is_off_unless_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, "PANICBOT_CONSOLE_TOKEN", "PANICBOT_CONSOLE_USERS", "PANICBOT_CATALOG")
    settings = ServiceSettings(
        panicbot_http_port=0,
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        panicbot_catalog_watch_seconds=0,
    )
    routes = {resource.canonical for resource in Service(settings, []).web_app.router.resources()}
    assert not any(route.startswith("/console") for route in routes)
    assert "/healthz" in routes


def test_every_page_needs_a_session(console: Running) -> None:
    for path in (
        "/console/",
        "/console/records",
        "/console/feedback",
        "/console/chart.svg",
        "/console/records/x",
    ):
        reply = call(console.base + path)
        assert reply.status == 302 and reply.headers["Location"] == "/console/login"
    assert call(f"{console.base}/console").headers["Location"] == "/console/"
    assert call(f"{console.base}/console/records", {"q": "x"}).status == 403
    forged = "panicbot_console=eyJ1IjoiYWRtaW4iLCJuIjoieCIsImUiOjk5OTk5OTk5OTl9.AAAA"
    assert call(f"{console.base}/console/", cookie=forged).status == 302


def test_login_sets_a_strict_http_only_cookie(console: Running) -> None:
    wrong = call(f"{console.base}/console/login", {"token": "nope"})
    assert wrong.status == 401 and "not accepted" in wrong.body
    reply = call(f"{console.base}/console/login", {"token": TOKEN})
    assert reply.status == 303 and reply.headers["Location"] == "/console/"
    cookie = reply.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    secure = call(f"{console.base}/console/login", {"token": TOKEN}, headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in secure.headers["Set-Cookie"]
    page = call(f"{console.base}/console/", cookie=cookie.split(";")[0])
    assert page.status == 200 and "Unmatched panics" in page.body


def test_logins_and_posts_from_another_origin_are_refused(console: Running) -> None:
    evil = {"Origin": "https://evil.example"}
    assert call(f"{console.base}/console/login", {"token": TOKEN}, headers=evil).status == 403
    cross = {"Sec-Fetch-Site": "cross-site"}
    assert call(f"{console.base}/console/login", {"token": TOKEN}, headers=cross).status == 403
    cookie, csrf = login(console)
    assert call(f"{console.base}/console/records", {"q": "x", "csrf": csrf}, cookie, evil).status == 403
    assert call(f"{console.base}/console/records", {"q": "x", "csrf": csrf}, cookie).status == 200


def test_a_csrf_token_of_another_session_is_refused(console: Running) -> None:
    cookie, _ = login(console)
    _, other_csrf = login(console)
    assert call(f"{console.base}/console/records", {"q": "x", "csrf": other_csrf}, cookie).status == 403
    assert call(f"{console.base}/console/logout", {"csrf": other_csrf}, cookie).status == 403


def test_security_headers_on_every_response(console: Running) -> None:
    cookie, _ = login(console)
    for path, session in (
        ("/console/login", ""),
        ("/console/", ""),
        ("/console/", cookie),
        ("/console/static/console.css", ""),
    ):
        headers = call(console.base + path, cookie=session).headers
        csp = headers["Content-Security-Policy"]
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert "script-src 'self'" in csp or path.endswith(".css")
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_chart_is_svg_without_script_and_styles_only_itself(console: Running) -> None:
    cookie, _ = login(console)
    reply = call(f"{console.base}/console/chart.svg", cookie=cookie)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("image/svg+xml")
    assert "<script" not in reply.body and "Operation queue overflowed" in reply.body
    assert "&lt;script&gt;" in reply.body  # the hostile group's legend, as text
    csp = reply.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in csp
    style = re.search(r"<style[^>]*>(.*?)</style>", reply.body, re.DOTALL)
    assert style is not None
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp


def test_a_bad_draft_is_refused_and_nothing_is_written(console: Running) -> None:
    cookie, csrf = login(console)
    page = call(f"{console.base}/console/", cookie=cookie)
    fingerprint = re.findall(r"/console/draft/([0-9a-f]{64})", page.body)[0]
    before = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    form = {"csrf": csrf, "errorMessage": "boom {}", "messagePattern": "boom (", "lineNumber": "x"}
    reply = call(f"{console.base}/console/draft/{fingerprint}", form, cookie)
    assert reply.status == 400
    assert "messagePattern: not a regular expression" in reply.body and "lineNumber" in reply.body
    assert (console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else "") == before
    assert call(f"{console.base}/console/draft/{'0' * 64}", cookie=cookie).status == 404
    assert call(f"{console.base}/console/records/no-such-record", cookie=cookie).status == 404


def test_typed_words_are_searched_too(console: Running) -> None:
    cookie, _ = login(console)
    reply = call(f"{console.base}/console/records?q=avg+pool+2d+backward", cookie=cookie)
    assert reply.status == 200 and "avg pool 2d backward" in reply.body and "confidence" in reply.body


def test_a_record_page_names_the_record_s_family(console: Running) -> None:
    cookie, _ = login(console)
    message = "Can send message to checkpointer thread."
    path = "crates/burn-train/src/checkpoint/async_checkpoint.rs"
    reply = call(
        f"{console.base}/console/records/{record_id('tracel-ai/burn', path, message)}", cookie=cookie
    )
    assert reply.status == 200
    assert "shown with the advice of its family <b>follow-on</b>" in reply.body
    assert "General advice for panics of this kind" in reply.body  # in the previews of the card
