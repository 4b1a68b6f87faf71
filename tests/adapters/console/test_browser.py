"""The console in a real browser: Debian's chromium, headless, driven by Playwright against the running
service. Log in, search a paste, open a record and its three previews, draft a record from an unmatched
panic and find it in the drafts file; hostile pastes stay inert; requests without the session or with a wrong
CSRF token are refused. Screenshots of every page go to the folder printed at the start."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.cli.main import main as panicbot
from bot.records import load_catalog
from tests.adapters.console.seed import HOSTILE_MESSAGE
from tests.adapters.console.server import TOKEN, Running, running_console
from tests.support.local_only import isolate

CHROMIUM = os.environ.get("PANICBOT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AVG_POOL_PASTE = (
    "thread 'main' panicked at /home/dev/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-autodiff-0.19.0/src/ops/module.rs:1502:9:\nCan't differentiate avg pool 2d backward.\n"
)

sync_api = pytest.importorskip("playwright.sync_api")


def _chromium_or_skip() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium); CI installs it")


@pytest.fixture(scope="module")
def screenshots(request: pytest.FixtureRequest) -> Path:
    folder = Path(os.environ.get("PANICBOT_CONSOLE_SCREENSHOTS") or tempfile.mkdtemp(prefix="console-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nconsole screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def console() -> Iterator[Running]:
    _chromium_or_skip()
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, "PANICBOT_CATALOG", "DATABASE_URL", "REDIS_URL", "PANICBOT_CONSOLE_TOKEN")
        folder = Path(tempfile.mkdtemp(prefix="console-browser-"))
        try:
            with running_console(folder) as running:
                yield running
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(console: Running) -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1500, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    try:
        yield page
    finally:
        page.close()


def _login(page: Any, console: Running) -> None:
    page.goto(f"{console.base}/console/")
    if "/console/login" in page.url:
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        page.wait_for_url(f"{console.base}/console/")


def test_log_in_search_open_a_record_and_draft_one(console: Running, page: Any, screenshots: Path) -> None:
    started = time.monotonic()
    page.goto(f"{console.base}/console/")
    assert page.url == f"{console.base}/console/login"  # no session: the login page
    page.screenshot(path=str(screenshots / "1-login.png"))
    page.fill("#token", "a wrong token")
    page.click("#login-submit")
    page.locator("#login-error").wait_for()
    page.fill("#token", TOKEN)
    page.click("#login-submit")
    page.wait_for_url(f"{console.base}/console/")

    # Unmatched panics: the groups, most seen first, with the chart.
    rows = page.locator("#unmatched-table tbody tr")
    assert rows.count() == 6
    assert "Operation queue overflowed" in rows.first.inner_text()
    assert rows.first.locator("td").first.inner_text() == "41"
    chart = page.locator("#unmatched-chart")
    assert chart.evaluate("img => img.complete && img.naturalWidth > 0")
    page.screenshot(path=str(screenshots / "2-unmatched.png"), full_page=True)
    page.fill("#filter", "checkpoint")  # the script filters the rows
    assert page.locator("#unmatched-table tbody tr:not(.hidden)").count() == 1
    page.fill("#filter", "")

    # Records: a paste, its ranked matches with reasons and confidence.
    page.click("#nav-records")
    page.fill("#q", AVG_POOL_PASTE)
    page.click("#search-submit")
    assert page.locator("#status").inner_text() == "matched"
    first = page.locator("tr.match").first
    assert "avg pool 2d backward" in first.inner_text()
    assert "pattern" in first.locator(".reasons").inner_text()
    page.screenshot(path=str(screenshots / "3-search.png"), full_page=True)

    # The record: three previews side by side, limits, lint, votes, matches, releases.
    first.locator("a.record-link").click()
    for name, text in (("slack", "What it means"), ("discord", "When it happens"), ("github", "Example fix")):
        preview = page.locator(f"#preview-{name}")
        assert preview.is_visible()
        assert text in preview.locator(".surface").inner_text()
    assert "Fits Slack's limits" in page.locator("#preview-slack .limits").inner_text()
    assert "Fits Discord's limits" in page.locator("#preview-discord .limits").inner_text()
    assert "17" in page.locator("#match-count").inner_text()
    assert "down 2" in page.locator("#votes").inner_text()
    assert page.locator("#sites tbody tr").count() > 3
    boxes = [page.locator(f"#preview-{n}").bounding_box() for n in ("slack", "discord", "github")]
    assert boxes[0]["y"] == boxes[1]["y"] == boxes[2]["y"]  # side by side
    page.screenshot(path=str(screenshots / "4-record.png"), full_page=True)

    # Feedback.
    page.click("#nav-feedback")
    assert "avg pool 2d backward" in page.locator("#downvoted").inner_text()
    assert page.locator("#never-matched li").count() > 10
    page.screenshot(path=str(screenshots / "5-feedback.png"), full_page=True)

    # Draft a record from the most seen unmatched panic.
    page.click("#nav-unmatched")
    page.locator("#unmatched-table tbody tr").first.locator("a.draft-link").click()
    assert (
        page.input_value("#f-errorMessage")
        == "Operation queue overflowed: {} pending operations on stream {}"
    )
    assert page.input_value("#f-messagePattern") == (
        "Operation queue overflowed: (.+?) pending operations on stream (.+?)"
    )
    assert page.input_value("#f-filePath") == "crates/burn-fusion/src/stream/queue/base.rs"
    assert page.input_value("#f-repo") == "tracel-ai/burn"
    page.fill("#f-documentation", "The fusion stream queue holds at most 4096 pending operations.")
    page.fill("#f-solutions", "Call sync() on the device more often\nRaise the queue size")
    page.fill("#f-lineNumber", "88")
    page.screenshot(path=str(screenshots / "6-draft.png"), full_page=True)
    # Preview first: the card three ways, the lint, the stored panics it would answer; nothing written.
    written_before = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    page.click("#draft-preview")
    assert "Fits Slack's limits" in page.locator("#preview-slack .limits").inner_text()
    assert "Fits Discord's limits" in page.locator("#preview-discord .limits").inner_text()
    assert "Call sync() on the device more often" in page.locator("#preview-slack .surface").inner_text()
    assert "Operation queue overflowed: 4096" in page.locator("#answered").inner_text()
    assert page.input_value("#f-lineNumber") == "88"  # the form comes back as it was filled
    assert (console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else "") == written_before
    page.screenshot(path=str(screenshots / "6b-draft-preview.png"), full_page=True)
    page.click("#draft-submit")
    drafted_id = page.locator("#drafted-id").inner_text()
    page.screenshot(path=str(screenshots / "7-drafted.png"), full_page=True)

    lines = console.drafts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[-1])["record"]
    assert record["id"] == drafted_id
    assert record["solutions"] == ["Call sync() on the device more often", "Raise the queue size"]
    assert record["lineNumber"] == 88
    catalog = load_catalog([console.drafts])  # what `catalog lint` and `catalog merge` read
    assert not catalog.errors and catalog.entries[0].record.id == drafted_id
    assert panicbot(["catalog", "validate", str(console.drafts)]) == 0
    assert page.dialogs == []
    assert time.monotonic() - started < 45


def test_hostile_pastes_stay_inert(console: Running, page: Any, screenshots: Path) -> None:
    _login(page, console)
    assert page.title() == "Unmatched panics · panicbot"  # the hostile scripts would set it to "pwned"
    hostile = page.locator("#unmatched-table pre.paste", has_text="onerror")
    assert hostile.inner_text() == HOSTILE_MESSAGE  # shown as text
    assert page.locator("img[src='x']").count() == 0 and page.locator("main script").count() == 0
    page.locator("#unmatched-table tr.group", has_text="onerror").locator("a.draft-link").click()
    assert page.locator("#draft-source").inner_text() == HOSTILE_MESSAGE
    assert "<script>" in page.input_value("#f-errorMessage")

    page.click("#nav-records")
    paste = f"thread 'main' panicked at src/lib.rs:1:1:\n{HOSTILE_MESSAGE}\n<svg onload=alert(1)>"
    page.fill("#q", paste)
    page.click("#search-submit")
    assert page.input_value("#q") == paste
    page.locator("#results details summary").click()
    assert HOSTILE_MESSAGE in page.locator("#results details").inner_text()
    assert page.locator("img[src='x']").count() == 0 and page.locator("main svg").count() == 0
    page.screenshot(path=str(screenshots / "8-hostile-search.png"), full_page=True)
    assert page.title() == "Records · panicbot"
    assert page.dialogs == []


def _post(url: str, data: dict[str, str], cookie: str | None = None) -> int:
    body = "&".join(f"{k}={urllib.request.quote(v)}" for k, v in data.items()).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_no_session_or_a_wrong_csrf_token_is_refused(
    console: Running, page: Any, browser: Any, screenshots: Path
) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    urllib.request.install_opener(opener)
    assert _post(f"{console.base}/console/records", {"q": "x", "csrf": "x"}) == 403
    assert _post(f"{console.base}/console/logout", {}) == 403

    _login(page, console)
    cookie = next(c for c in browser.cookies() if c["name"] == "panicbot_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    session = f"panicbot_console={cookie['value']}"
    assert _post(f"{console.base}/console/records", {"q": "x", "csrf": "forged"}, session) == 403
    assert _post(f"{console.base}/console/records", {"q": "x"}, session) == 403

    # In the browser: a form whose CSRF token was tampered with is refused, and nothing is drafted.
    before = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    page.goto(f"{console.base}/console/")
    page.locator("#unmatched-table tbody tr").nth(1).locator("a.draft-link").click()
    page.evaluate("document.querySelector('#draft-form input[name=csrf]').value = 'forged'")
    page.click("#draft-submit")
    assert "wrong CSRF token" in page.content()
    page.screenshot(path=str(screenshots / "9-csrf-refused.png"))
    after = console.drafts.read_text(encoding="utf-8") if console.drafts.exists() else ""
    assert after == before
