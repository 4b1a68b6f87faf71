"""The console over HTTP, against the running service: off unless configured, the login and its cookie, the
refusals (no session, forged session, wrong CSRF token, another origin), headers on every response, drafts
checked before they are written, the chart without script."""

from __future__ import annotations

import base64
import errno
import hashlib
import html
import logging
import os
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
    assert "messagePattern: RE2 cannot compile it" in reply.body and "lineNumber" in reply.body
    assert (console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else "") == before
    assert call(f"{console.base}/console/draft/{'0' * 64}", cookie=cookie).status == 404
    assert call(f"{console.base}/console/records/no-such-record", cookie=cookie).status == 404


def test_typed_words_are_searched_too(console: Running) -> None:
    cookie, _ = login(console)
    reply = call(f"{console.base}/console/records?q=avg+pool+2d+backward", cookie=cookie)
    assert reply.status == 200 and "avg pool 2d backward" in reply.body and "confidence" in reply.body


def test_a_record_page_names_the_record_s_family(console: Running) -> None:
    cookie, _ = login(console)
    message = "worker reaper thread disconnected unexpectedly"  # a follow-on with no analysis of its own
    path = "crates/burn-train/src/learner/supervised/strategies/ddp/strategy.rs"
    reply = call(
        f"{console.base}/console/records/{record_id('tracel-ai/burn', path, message)}", cookie=cookie
    )
    assert reply.status == 200
    assert "shown with the advice of its family <b>follow-on</b>" in reply.body
    assert "General advice for panics of this kind" in reply.body  # in the previews of the card


def _fingerprint_of(console: Running, cookie: str, message: str) -> str:
    page = call(f"{console.base}/console/", cookie=cookie)
    for fingerprint in dict.fromkeys(re.findall(r"/console/draft/([0-9a-f]{64})", page.body)):
        form = call(f"{console.base}/console/draft/{fingerprint}", cookie=cookie)
        if message in form.body:
            return fingerprint
    raise AssertionError(f"no unmatched group for {message!r}")


def _form_values(body: str) -> dict[str, str]:
    """The draft form's pre-filled values, as the browser would post them back."""
    values = {}
    for name, value in re.findall(r'<input type="text" name="(\w+)" id="f-\w+" value="([^"]*)">', body):
        values[name] = html.unescape(value)
    for name, value in re.findall(
        r'<textarea name="(\w+)" id="f-\w+" rows="\d+">(.*?)</textarea>', body, re.S
    ):
        values[name] = html.unescape(value)
    return values


QUEUE = "Operation queue overflowed"


def test_a_draft_is_previewed_before_it_is_written(console: Running) -> None:
    cookie, csrf = login(console)
    fingerprint = _fingerprint_of(console, cookie, QUEUE)
    form_page = call(f"{console.base}/console/draft/{fingerprint}", cookie=cookie)
    assert f'formaction="/console/draft/{fingerprint}/preview"' in form_page.body
    values = _form_values(form_page.body)
    assert values["errorMessage"] == "Operation queue overflowed: {} pending operations on stream {}"
    values.update(
        csrf=csrf,
        documentation="burn-fusion queues operations per stream and panics when the queue outgrows its cap.",
        solutions="Synchronize the stream more often.",
        exampleFix="fn main() { let x = ; }",
    )
    before = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    reply = call(f"{console.base}/console/draft/{fingerprint}/preview", values, cookie)
    assert reply.status == 200, reply.body[:2000]
    assert "Preview: the record as it would be written" in reply.body
    for name in ("slack", "discord", "github"):
        assert f'id="preview-{name}"' in reply.body
    limits = re.findall(r"<p class=\"limits (\w+)\">([^<]*)</p>", reply.body)
    assert limits[:2] == [("ok", "Fits Slack's limits"), ("ok", "Fits Discord's limits")], limits
    assert "Synchronize the stream more often." in reply.body  # the card shows the draft's own text
    # Its own lint findings, in the served catalog's context, and no finding of another record.
    lint = re.search(r'<ul class="findings" id="lint">(.*?)</ul>', reply.body, re.S)
    assert lint is not None and "example-syntax" in lint.group(1)
    assert "no-example-fix" not in lint.group(1)
    # The stored unmatched panics it would answer: this one, not the others.
    answered = re.search(r'<table class="rows" id="answered">(.*?)</table>', reply.body, re.S)
    assert answered is not None
    assert "Operation queue overflowed: 4096 pending operations on stream 3" in answered.group(1)
    assert "im2col" not in answered.group(1) and "Checkpoint epoch" not in answered.group(1)
    assert "(1 of 6 stored)" in reply.body
    after = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    assert after == before  # a preview writes nothing


def test_a_pattern_that_matches_more_answers_more_and_a_bad_one_is_a_clear_400(console: Running) -> None:
    cookie, csrf = login(console)
    fingerprint = _fingerprint_of(console, cookie, QUEUE)
    values = _form_values(call(f"{console.base}/console/draft/{fingerprint}", cookie=cookie).body)
    wide = dict(values, csrf=csrf, messagePattern="(.+?) (?:overflowed|exceeds the device limit)(.*)")
    reply = call(f"{console.base}/console/draft/{fingerprint}/preview", wide, cookie)
    assert reply.status == 200
    answered = re.search(r'<table class="rows" id="answered">(.*?)</table>', reply.body, re.S)
    assert answered is not None
    assert QUEUE in answered.group(1)
    lint = re.search(r'id="lint">(.*?)</(?:ul|p)>', reply.body, re.S)
    assert lint is not None and "pattern-regex" in lint.group(1)
    for pattern, reason in (
        (r"(\w+) overflowed \1", "RE2 cannot compile it"),  # a backreference
        ("(?=Operation) queue", "RE2 cannot compile it"),  # a lookahead
        ("((a{1000}){1000}){1000}", "RE2 cannot compile it"),  # a program far too large
    ):
        bad = dict(values, csrf=csrf, messagePattern=pattern)
        refused = call(f"{console.base}/console/draft/{fingerprint}/preview", bad, cookie)
        assert refused.status == 400 and reason in refused.body, pattern
        assert "Preview: the record" not in refused.body
    empty = dict(values, csrf=csrf, errorMessage="")
    refused = call(f"{console.base}/console/draft/{fingerprint}/preview", empty, cookie)
    assert refused.status == 400 and "errorMessage: required" in refused.body
    huge = dict(values, csrf=csrf, documentation="x" * 30_000)
    refused = call(f"{console.base}/console/draft/{fingerprint}/preview", huge, cookie)
    assert refused.status == 400 and "documentation: at most 20,000 characters" in refused.body


def test_a_full_disk_keeps_the_form_and_writes_nothing(
    console: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.console import drafts

    cookie, csrf = login(console)
    fingerprint = _fingerprint_of(console, cookie, QUEUE)
    values = _form_values(call(f"{console.base}/console/draft/{fingerprint}", cookie=cookie).body)
    before = console.drafts.read_bytes() if console.drafts.exists() else b""

    def full(descriptor: int, data: memoryview) -> int:
        os.write(descriptor, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(drafts, "_write_chunk", full)
    reply = call(f"{console.base}/console/draft/{fingerprint}", dict(values, csrf=csrf), cookie)
    assert reply.status == 503
    assert "the draft was not written (the disk is full)" in reply.body
    assert "Operation queue overflowed: {} pending operations on stream {}" in reply.body  # the form, kept
    assert (console.drafts.read_bytes() if console.drafts.exists() else b"") == before


def test_an_unexpected_error_is_the_console_s_own_page_with_a_logged_request_id(
    console: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from adapters.storage import console_queries

    cookie, _ = login(console)

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("database said something secret-ish")

    monkeypatch.setattr(console_queries, "unmatched_groups", broken)
    with caplog.at_level(logging.ERROR, logger="panicbot.console"):
        reply = call(f"{console.base}/console/", cookie=cookie)
    assert reply.status == 500
    assert "Something went wrong" in reply.body and "Server got itself in trouble" not in reply.body
    assert "Traceback" not in reply.body and "secret-ish" not in reply.body
    request_id = re.search(r'<code id="request-id">([0-9a-f]{16})</code>', reply.body)
    assert request_id is not None and reply.headers["X-Request-Id"] == request_id.group(1)
    logged = [r for r in caplog.records if request_id.group(1) in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the traceback is in the log, under the id
    assert reply.headers["Content-Security-Policy"].startswith("default-src 'none'")
