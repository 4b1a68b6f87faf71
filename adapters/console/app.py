"""The console's HTTP side: an aiohttp sub-application under `/console/`, server-rendered with Jinja2.

Every page but the login needs a signed session cookie; every form of a session carries its CSRF token, and a
POST from another origin is refused; every response carries a strict CSP (no inline code) and no framing.
Pastes are hostile: templates escape everything, and markup comes only from `markup.py`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
from aiohttp import web

from adapters.console import chart as charts
from adapters.console.auth import (
    COOKIE,
    Authenticator,
    Network,
    Session,
    client_address,
    parse_users,
    retry_after,
)
from adapters.console.draft_preview import (
    GROUPS_TRIED,
    ApiTables,
    catalog_paths_of,
    draft_findings,
    preview_draft,
)
from adapters.console.drafts import (
    FIELDS,
    DraftWriteError,
    append_draft,
    build_record,
    prefill,
    release_of,
    set_aside_damaged_tail,
)
from adapters.console.previews import previews
from adapters.console.revocations import Revocations, StoreRevocations
from adapters.console.settings import ConsoleSettings
from adapters.storage import SqlStore
from adapters.storage import console_queries as queries
from bot.lint import lint_catalog
from bot.lookup import PanicLookup
from bot.records import Catalog

log = logging.getLogger("panicbot.console")

HERE = Path(__file__).resolve().parent
PREFIX = "/console"
LOGIN_COOKIE = "panicbot_console_login"
SEARCH_MAX_CHARS = 256 * 1024
SEARCH_RESULTS = 10
UNMATCHED_SHOWN = 200
NEVER_MATCHED_SHOWN = 100
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: with it Chromium sends `Origin: null` on form posts, and the origin check needs it.
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Cache-Control": "no-store",
}
PUBLIC = ("/login", "/static/")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CONSOLE_KEY = web.AppKey("console", object)
SESSION_KEY = web.RequestKey("session", Session)


@dataclass
class Console:
    auth: Authenticator
    lookups: Callable[[], PanicLookup]
    store: SqlStore
    drafts: Path
    templates: jinja2.Environment
    api: ApiTables
    trusted_proxies: tuple[Network, ...] = ()
    # Sessions logged out on any replica (None: this process's logouts only, as `Authenticator` keeps them).
    revocations: Revocations | None = None

    def client(self, request: web.Request) -> str:
        """The client's address: the peer's, or through trusted proxies their `X-Forwarded-For`."""
        return client_address(request.remote, request.headers.get("X-Forwarded-For"), self.trusted_proxies)

    def render(self, request: web.Request, name: str, status: int = 200, **values: Any) -> web.Response:
        session = request.get(SESSION_KEY)
        page = self.templates.get_template(name).render(
            session=session,
            csrf=self.auth.csrf_token(session) if session else "",
            prefix=PREFIX,
            **values,
        )
        return web.Response(text=page, status=status, content_type="text/html", charset="utf-8")


def _console(request: web.Request) -> Console:
    console = request.app[CONSOLE_KEY]
    assert isinstance(console, Console)
    return console


def _same_origin(request: web.Request) -> bool:
    """False when the browser says the request comes from another site (Origin, Sec-Fetch-Site)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == request.host.lower()


def _secure(request: web.Request) -> bool:
    return request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        for name, value in SECURITY_HEADERS.items():
            exc.headers.setdefault(name, value)
        raise
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


@web.middleware
async def error_page(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An unexpected error is the console's own page (500): no traceback, a request id that is in the log
    with the traceback, so a maintainer can quote it and an operator find it."""
    try:
        return await handler(request)
    except (web.HTTPException, asyncio.CancelledError):
        raise
    except Exception:
        request_id = secrets.token_hex(8)
        log.exception(
            "console error (request id %s) on %s %s",
            request_id,
            request.method,
            request.path,
            extra={"request_id": request_id},
        )
        try:
            response = _console(request).render(request, "error.html", status=500, request_id=request_id)
        except Exception:  # the page itself failed: still no traceback, still the id
            log.exception("console error page failed (request id %s)", request_id)
            response = web.Response(
                status=500, text=f"panicbot console: unexpected error (request id {request_id})\n"
            )
        response.headers["X-Request-Id"] = request_id
        return response


@web.middleware
async def require_session(request: web.Request, handler: Handler) -> web.StreamResponse:
    """No session: GET goes to the login page, anything else is refused. A POST needs its CSRF token."""
    relative = request.path[len(PREFIX) :] or "/"
    if relative.startswith(PUBLIC):
        return await handler(request)
    console = _console(request)
    session = console.auth.session(request.cookies.get(COOKIE))
    if session is not None and console.revocations is not None:
        try:
            if await console.revocations.revoked(session.nonce):
                session = None  # logged out on another replica
        except Exception as exc:
            # Unknown whether it was logged out: refused, never let through.
            log.error("console sessions logged out cannot be read (%s)", exc.__class__.__name__)
            raise web.HTTPServiceUnavailable(
                text="the console cannot check sessions right now; try again in a minute"
            ) from None
    if session is None:
        if request.method in ("GET", "HEAD"):
            raise web.HTTPFound(f"{PREFIX}/login")
        raise web.HTTPForbidden(text="no session: log in at /console/login")
    request[SESSION_KEY] = session
    if request.method not in ("GET", "HEAD"):
        if not _same_origin(request):
            raise web.HTTPForbidden(text="cross-origin request refused")
        form = await request.post()
        if not console.auth.csrf_ok(session, _field(form, "csrf")):
            raise web.HTTPForbidden(text="missing or wrong CSRF token")
    return await handler(request)


def _field(form: Any, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


# -- access ------------------------------------------------------------------------------------------------


async def login_page(request: web.Request, *, status: int = 200, error: bool = False) -> web.Response:
    """The form, with a CSRF token bound to a fresh pre-session cookie."""
    console = _console(request)
    nonce = secrets.token_urlsafe(16)
    response = console.render(
        request, "login.html", status=status, error=error, login_csrf=console.auth.login_csrf(nonce)
    )
    response.set_cookie(
        LOGIN_COOKIE, nonce, path=PREFIX, httponly=True, samesite="Strict", secure=_secure(request)
    )
    return response


async def login(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    client = console.client(request)
    if not _same_origin(request):
        raise web.HTTPForbidden(text="cross-origin login refused")
    wait = console.auth.wait_seconds(client)
    if wait > 0:
        raise web.HTTPTooManyRequests(
            text=f"too many failed logins from your address: try again in {retry_after(wait)} s",
            headers={"Retry-After": retry_after(wait)},
        )
    form = await request.post()
    given_csrf = _field(form, "csrf")
    nonce = request.cookies.get(LOGIN_COOKIE)
    # The browser's form carries a token bound to the login cookie; a script posting only the token has
    # neither (and the origin checks above hold for both).
    if (given_csrf or nonce) and not console.auth.login_csrf_ok(nonce or "", given_csrf):
        raise web.HTTPForbidden(text="missing or wrong CSRF token")
    token = _field(form, "token")
    # The shared token is one constant-time comparison, on the loop: a flood of wrong tokens queueing for
    # the argon2 threads never holds the right one back.
    user = console.auth.check_shared(token)
    if user is None and console.auth.has_users:
        user = await asyncio.to_thread(console.auth.check_users, token)
    if user is None:
        console.auth.failed(client)
        log.info("console login refused", extra={"client": client})
        return await login_page(request, status=401, error=True)
    console.auth.succeeded(client)
    log.info("console login", extra={"user": user, "client": client})
    response = web.HTTPSeeOther(f"{PREFIX}/")
    response.set_cookie(
        COOKIE,
        console.auth.new_session(user),
        path=PREFIX,
        httponly=True,
        samesite="Strict",
        secure=_secure(request),
        max_age=int(console.auth.session_seconds),
    )
    response.del_cookie(LOGIN_COOKIE, path=PREFIX)
    raise response


async def logout(request: web.Request) -> web.StreamResponse:
    """Ends the session on the server too: its cookie, replayed, no longer works."""
    session = request.get(SESSION_KEY)
    if session is not None:
        console = _console(request)
        console.auth.revoke(session)
        if console.revocations is not None:
            try:
                await console.revocations.revoke(session.nonce, session.expires)
            except Exception as exc:
                # Ended here, not on the other replicas: the user is told and may try again.
                log.error(
                    "console logout not shared (%s)", exc.__class__.__name__, extra={"user": session.user}
                )
                raise web.HTTPServiceUnavailable(
                    text="logged out on this server only: the session store is not answering; try again"
                ) from None
        log.info("console logout", extra={"user": session.user})
    response = web.HTTPSeeOther(f"{PREFIX}/login")
    response.del_cookie(COOKIE, path=PREFIX)
    raise response


# -- unmatched panics and drafts ----------------------------------------------------------------------------


async def unmatched(request: web.Request) -> web.Response:
    console = _console(request)
    groups = await asyncio.to_thread(queries.unmatched_groups, console.store, UNMATCHED_SHOWN)
    rows = [(group, release_of(group.raw_path)) for group in groups]
    return console.render(request, "unmatched.html", rows=rows, total=sum(g.count for g in groups))


async def unmatched_chart(request: web.Request) -> web.Response:
    console = _console(request)
    groups = await asyncio.to_thread(queries.unmatched_groups, console.store, charts.TOP_GROUPS)
    svg = await asyncio.to_thread(charts.unmatched_chart, groups)
    csp = "default-src 'none'; style-src " + (" ".join(charts.style_hashes(svg)) or "'none'")
    return web.Response(
        text=svg, content_type="image/svg+xml", charset="utf-8", headers={"Content-Security-Policy": csp}
    )


async def draft_form(request: web.Request) -> web.Response:
    console = _console(request)
    group = await asyncio.to_thread(queries.unmatched_group, console.store, request.match_info["fingerprint"])
    if group is None:
        raise web.HTTPNotFound(text="no such unmatched panic (pruned?)")
    return _draft_page(request, group, prefill(group, console.lookups().releases))


async def _draft_request(request: web.Request) -> tuple[Any, dict[str, str]]:
    console = _console(request)
    group = await asyncio.to_thread(queries.unmatched_group, console.store, request.match_info["fingerprint"])
    form = await request.post()
    return group, {name: _field(form, name) for name in FIELDS}


def _draft_page(request: web.Request, group: Any, values: dict[str, str], **shown: Any) -> web.Response:
    """The draft form of an unmatched panic's group, filled with `values`, and what else it shows."""
    return _console(request).render(
        request,
        "draft.html",
        fingerprint=request.match_info["fingerprint"],
        group=group,
        values=values,
        fields=FIELDS,
        **shown,
    )


def _draft_refused(request: web.Request, group: Any, values: dict[str, str], problems: Any) -> web.Response:
    return _draft_page(request, group, values, status=400, problems=problems)


async def draft_preview(request: web.Request) -> web.Response:
    """The draft as it would be saved, shown before it is: its card three ways, its lint findings in the
    served catalog, and the stored unmatched panics it would answer. Nothing is written."""
    console = _console(request)
    group, values = await _draft_request(request)
    # Off the event loop: RE2 compiles the pattern, and the checks below read every stored group.
    result = await asyncio.to_thread(build_record, values)
    if result.record is None:
        return _draft_refused(request, group, values, result.problems)
    groups = await asyncio.to_thread(queries.unmatched_groups, console.store, GROUPS_TRIED)
    shown = await asyncio.to_thread(preview_draft, result.record, console.lookups(), groups, console.api.get)
    return _draft_page(request, group, values, preview=shown)


async def draft_save(request: web.Request) -> web.Response:
    console = _console(request)
    group, values = await _draft_request(request)
    result = await asyncio.to_thread(build_record, values)
    if result.record is None:
        return _draft_refused(request, group, values, result.problems)
    findings = await asyncio.to_thread(draft_findings, result.record, console.lookups(), console.api.get)
    try:
        line = await asyncio.to_thread(append_draft, console.drafts, result.record)
    except DraftWriteError as exc:
        log.error("console draft not written", extra={"record": result.record.id, "reason": str(exc)})
        kept = [f"{exc}: nothing of it was kept; your text is still in the form"]
        return _draft_page(request, group, values, status=503, problems=kept)
    log.info("console draft written", extra={"record": result.record.id})
    return console.render(
        request,
        "drafted.html",
        record=result.record,
        findings=findings,
        drafts=str(console.drafts),
        line=line,
    )


# -- records ------------------------------------------------------------------------------------------------


async def records(request: web.Request) -> web.Response:
    console = _console(request)
    query = ""
    if request.method == "POST":
        form = await request.post()
        query = _field(form, "q")[:SEARCH_MAX_CHARS]
    else:
        query = request.query.get("q", "")[:SEARCH_MAX_CHARS]
    lookup = console.lookups()
    result = site = None
    if query.strip():
        result = await asyncio.to_thread(lookup.lookup, query, SEARCH_RESULTS)
        site = lookup.site(result) if result.best is not None else None
    return console.render(
        request, "records.html", query=query, result=result, site=site, records=len(lookup.matcher)
    )


async def record_page(request: web.Request) -> web.Response:
    console = _console(request)
    lookup = console.lookups()
    record_id = request.match_info["record_id"]
    record = lookup.record(record_id)
    card = lookup.card_for_record(record_id, 1.0)
    if record is None or card is None:
        raise web.HTTPNotFound(text="no record with that id in the catalog")
    entries = [entry for entry in lookup.catalog.entries if entry.record.id == record_id]
    findings = lint_catalog(Catalog(entries=entries)) if entries else []
    counts = await asyncio.to_thread(queries.record_counts, console.store, [record_id])
    return console.render(
        request,
        "record.html",
        record=record,
        card=card,
        previews=previews(card),
        findings=findings,
        counts=counts.get(record_id, queries.RecordCounts(record_id)),
        sites=lookup.releases.sites_of(record_id),
        under_review=lookup.is_under_review(record_id),
    )


# -- feedback -----------------------------------------------------------------------------------------------


async def feedback(request: web.Request) -> web.Response:
    console = _console(request)
    lookup = console.lookups()
    down = await asyncio.to_thread(queries.most_downvoted, console.store)
    top = await asyncio.to_thread(queries.most_matched, console.store)
    matched = await asyncio.to_thread(queries.matched_ids, console.store)
    # Analysed records first: a record with an analysis nobody meets is the surprising one. Off the event
    # loop, and reading only the records shown (a prebuilt catalog's records are read from disk).
    never, never_total = await asyncio.to_thread(lookup.unmatched, matched, NEVER_MATCHED_SHOWN)
    return console.render(
        request,
        "feedback.html",
        down=[(item, lookup.record(item.record_id)) for item in down],
        top=[(item, lookup.record(item.record_id)) for item in top],
        never=never,
        never_total=never_total,
        catalog_size=len(lookup.matcher),
    )


# -- assembly -----------------------------------------------------------------------------------------------


def _templates() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every value is escaped unless markup.py built it
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["when"] = lambda moment: moment.strftime("%Y-%m-%d %H:%M") if moment else "-"
    environment.filters["percent"] = lambda value: f"{value * 100:.0f} %"
    return environment


def authenticator(settings: ConsoleSettings) -> Authenticator:
    users = (
        parse_users(settings.panicbot_console_users.get_secret_value())
        if settings.panicbot_console_users
        else {}
    )
    token = settings.panicbot_console_token.get_secret_value() if settings.panicbot_console_token else None
    key = (
        settings.panicbot_console_secret.get_secret_value().encode()
        if settings.panicbot_console_secret
        else secrets.token_bytes(32)
    )
    return Authenticator(
        token=token, users=users, key=key, session_seconds=settings.panicbot_console_session_hours * 3600
    )


def build_console_app(
    settings: ConsoleSettings,
    lookups: Callable[[], PanicLookup],
    store: SqlStore,
    revocations: Revocations | None = None,
) -> web.Application:
    """The sub-application (mount it at `/console`); raises `SettingsError` on a malformed user list.
    `revocations`: where logouts are shared with the other replicas (default: the database of `store`)."""
    app = web.Application(middlewares=[security_headers, error_page, require_session])
    drafts = Path(settings.panicbot_console_drafts)
    set_aside_damaged_tail(drafts)  # logged with its line number; the next draft starts a line of its own
    app[CONSOLE_KEY] = Console(
        auth=authenticator(settings),
        lookups=lookups,
        store=store,
        drafts=drafts,
        templates=_templates(),
        api=ApiTables(catalog_paths_of(settings)),
        trusted_proxies=settings.trusted_proxies,
        revocations=revocations if revocations is not None else StoreRevocations(store),
    )
    app.router.add_get("/login", login_page)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/", unmatched)
    app.router.add_get("/chart.svg", unmatched_chart)
    app.router.add_get("/draft/{fingerprint:[0-9a-f]{64}}", draft_form)
    app.router.add_post("/draft/{fingerprint:[0-9a-f]{64}}", draft_save)
    app.router.add_post("/draft/{fingerprint:[0-9a-f]{64}}/preview", draft_preview)
    app.router.add_get("/records", records)
    app.router.add_post("/records", records)
    app.router.add_get("/records/{record_id}", record_page)
    app.router.add_get("/feedback", feedback)
    app.router.add_static("/static", HERE / "static")
    return app


def mount_console(
    web_app: web.Application,
    settings: ConsoleSettings,
    lookups: Callable[[], PanicLookup],
    store: SqlStore,
    revocations: Revocations | None = None,
) -> None:
    """`/console/` on the service's port; `/console` redirects there."""
    console = build_console_app(settings, lookups, store, revocations)

    async def to_console(_: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"{PREFIX}/")

    web_app.router.add_get(PREFIX, to_console)
    web_app.add_subapp(PREFIX, console)
