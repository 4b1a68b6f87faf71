"""GitHub's REST API as the adapter uses it: app authentication (an RS256 JWT buys an installation token,
cached until shortly before it expires) or a single token, issue comments and their reactions, and GitHub's
rate limits honoured (`Retry-After`, `x-ratelimit-reset`, a minute for a secondary limit that names no time;
content-creating requests spaced out). Never logs a token, the key, or a request or response body."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import aiohttp
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

log = logging.getLogger("panicbot.github")

API_VERSION = "2022-11-28"
USER_AGENT = "panicbot"
REQUEST_TIMEOUT_SECONDS = 10.0
# GitHub refuses a JWT whose exp is more than 10 minutes ahead; iat a minute back absorbs clock drift.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 9 * 60
# An installation token lives one hour: renewed this long before it expires.
TOKEN_RENEW_MARGIN_SECONDS = 5 * 60
# GitHub asks for about a second between content-creating requests (secondary rate limits).
MUTATION_SPACING_SECONDS = 1.0
# A secondary limit without Retry-After or a reset: wait at least a minute, GitHub says.
SECONDARY_LIMIT_WAIT_SECONDS = 60.0
# Waiting longer than this holds a reply too long: given up (the next event or redelivery tries again).
MAX_WAIT_SECONDS = 120.0
MAX_RETRIES = 2
COMMENT_PAGES = 3  # looking for our own comment: at most 300 comments of an issue


class GitHubApiError(Exception):
    """GitHub refused a request; `status` is its HTTP status (0: no answer, `GitHubUnreachable`). The text
    names the route and GitHub's short message, never a token or a body we sent."""

    def __init__(self, status: int, route: str, message: str = "") -> None:
        super().__init__(f"{route}: {status} {message}".strip())
        self.status, self.route, self.message = status, route, message


class GitHubUnreachable(GitHubApiError):
    """No answer from GitHub at all (no connection, DNS, a timeout): not a refusal of anything we sent."""

    def __init__(self, base_url: str, route: str, reason: str) -> None:
        super().__init__(0, route, reason)
        self.base_url = base_url

    def __str__(self) -> str:
        return f"GitHub unreachable at {self.base_url} ({self.route}: {self.message})"


class Auth(Protocol):
    async def token(self, api: GitHubApi, installation: int | None) -> str:
        """A token for requests about `installation`'s repositories."""

    def forget(self, installation: int | None) -> None:
        """The token was refused (401): get a new one next time."""


class TokenAuth:
    """A token for a single repository (`GITHUB_TOKEN`)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self, api: GitHubApi, installation: int | None) -> str:
        return self._token

    def forget(self, installation: int | None) -> None:
        """Nothing to renew: a refused token stays refused."""


@dataclass
class _Cached:
    token: str
    expires_at: float


class AppAuth:
    """A GitHub App: a JWT signed with the app's key buys an installation token, cached until it nears
    its expiry (one per installation; one request at a time per installation)."""

    def __init__(
        self, app_id: int, private_key: RSAPrivateKey, clock: Callable[[], float] = time.time
    ) -> None:
        self.app_id, self._key, self._clock = app_id, private_key, clock
        self._tokens: dict[int, _Cached] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def app_jwt(self) -> str:
        now = int(self._clock())
        claims = {
            "iat": now - JWT_BACKDATE_SECONDS,
            "exp": now + JWT_LIFETIME_SECONDS,
            "iss": str(self.app_id),
        }
        return jwt.encode(claims, self._key, algorithm="RS256")

    async def token(self, api: GitHubApi, installation: int | None) -> str:
        if installation is None:
            raise GitHubApiError(0, "installation token", "the delivery names no installation")
        cached = self._tokens.get(installation)
        if cached is not None and cached.expires_at - TOKEN_RENEW_MARGIN_SECONDS > self._clock():
            return cached.token
        lock = self._locks.setdefault(installation, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation)
            if cached is not None and cached.expires_at - TOKEN_RENEW_MARGIN_SECONDS > self._clock():
                return cached.token  # another reply renewed it while this one waited
            body = await api.call(
                "POST",
                f"/app/installations/{installation}/access_tokens",
                bearer=self.app_jwt(),
                route="access_tokens",
            )
            token, expires = body.get("token"), body.get("expires_at")
            if not isinstance(token, str) or not isinstance(expires, str):
                raise GitHubApiError(200, "access_tokens", "an answer without token or expires_at")
            try:
                expires_at = datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise GitHubApiError(200, "access_tokens", "an unreadable expires_at") from None
            self._tokens[installation] = _Cached(token, expires_at)
            log.info("installation token for installation %s renewed", installation)
            return token

    def forget(self, installation: int | None) -> None:
        if installation is not None:
            self._tokens.pop(installation, None)


def retry_after(status: int, headers: Any, message: str, now: float) -> float | None:
    """How long GitHub asks us to wait before trying again, or None when this is no rate limit."""
    if status not in (403, 429):
        return None
    value = headers.get("Retry-After")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            return SECONDARY_LIMIT_WAIT_SECONDS
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - now)
        except ValueError:
            return SECONDARY_LIMIT_WAIT_SECONDS
    if status == 429 or "rate limit" in message.lower():
        return SECONDARY_LIMIT_WAIT_SECONDS
    return None  # a plain 403: a permission, never retried (GitHub bans clients that hammer)


class GitHubApi:
    """The REST calls the adapter makes, on one aiohttp session, honouring rate limits across calls."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        auth: Auth,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        mutation_spacing: float | None = None,
        max_wait: float = MAX_WAIT_SECONDS,
    ) -> None:
        self.session, self.base_url, self.auth = session, base_url.rstrip("/"), auth
        self._clock, self._sleep = clock, sleep
        # Read when built, not when defined, so a test can shorten it.
        spacing = MUTATION_SPACING_SECONDS if mutation_spacing is None else mutation_spacing
        self._mutation_spacing, self._max_wait = spacing, max_wait
        self._blocked_until = 0.0  # a rate limit holds every request, not only the one that met it
        self._mutations = asyncio.Lock()
        self._last_mutation = -float("inf")

    async def call(
        self,
        method: str,
        path: str,
        *,
        installation: int | None = None,
        bearer: str | None = None,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        route: str = "",
    ) -> Any:
        """The decoded JSON answer (None for 204); GitHubApiError when GitHub refused."""
        route = route or method
        # Comments are content: spaced out. A token request (made inside one) is not, and must not wait.
        if method != "GET" and bearer is None:
            async with self._mutations:
                pause = self._last_mutation + self._mutation_spacing - self._clock()
                if pause > 0:
                    await self._sleep(pause)
                try:
                    return await self._call(method, path, installation, bearer, json, params, route)
                finally:
                    self._last_mutation = self._clock()
        return await self._call(method, path, installation, bearer, json, params, route)

    async def _call(
        self,
        method: str,
        path: str,
        installation: int | None,
        bearer: str | None,
        body: dict[str, Any] | None,
        params: dict[str, str] | None,
        route: str,
    ) -> Any:
        refreshed = False
        for attempt in range(MAX_RETRIES + 1):
            wait = self._blocked_until - self._clock()
            if wait > 0:
                if wait > self._max_wait:
                    raise GitHubApiError(429, route, f"rate limited for {wait:.0f} s more: given up")
                await self._sleep(wait)
            token = bearer or await self.auth.token(self, installation)
            status = 0
            headers = {
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {token}",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": USER_AGENT,
            }
            try:
                async with self.session.request(
                    method, self.base_url + path, headers=headers, json=body, params=params
                ) as response:
                    status = response.status
                    data = await response.json(content_type=None) if status != 204 else None
                    response_headers = response.headers
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                raise GitHubUnreachable(self.base_url, route, exc.__class__.__name__) from None
            except ValueError:  # an answer, but not GitHub's JSON (a proxy's error page, say)
                raise GitHubApiError(status, route, "an answer that is not JSON") from None
            if 200 <= status < 300:
                return data
            message = str(data.get("message", ""))[:200] if isinstance(data, dict) else ""
            if status == 401 and bearer is None and not refreshed:
                self.auth.forget(installation)  # revoked or expired early: one fresh token, once
                refreshed = True
                continue
            pause = retry_after(status, response_headers, message, self._clock())
            if pause is None or attempt == MAX_RETRIES:
                raise GitHubApiError(status, route, message)
            log.warning("GitHub rate limit on %s (%d): waiting %.0f s", route, status, pause)
            self._blocked_until = max(self._blocked_until, self._clock() + pause)
        raise GitHubApiError(401, route, "refused twice")

    # -- the calls the adapter makes ----------------------------------------------------------------------

    async def the_app(self, app_jwt: str) -> dict[str, Any]:
        """`GET /app` with the app's JWT: GitHub's answer checks the App ID and the private key together."""
        app = await self.call("GET", "/app", bearer=app_jwt, route="app")
        return app if isinstance(app, dict) else {}

    async def create_comment(
        self, repo: str, number: int, body: str, installation: int | None
    ) -> dict[str, Any]:
        created = await self.call(
            "POST",
            f"/repos/{repo}/issues/{number}/comments",
            installation=installation,
            json={"body": body},
            route="create comment",
        )
        if not isinstance(created, dict) or not isinstance(created.get("id"), int):
            raise GitHubApiError(201, "create comment", "an answer without the comment's id")
        return created

    async def update_comment(self, repo: str, comment_id: str, body: str, installation: int | None) -> None:
        await self.call(
            "PATCH",
            f"/repos/{repo}/issues/comments/{comment_id}",
            installation=installation,
            json={"body": body},
            route="update comment",
        )

    async def delete_comment(self, repo: str, comment_id: str, installation: int | None) -> None:
        await self.call(
            "DELETE",
            f"/repos/{repo}/issues/comments/{comment_id}",
            installation=installation,
            route="delete comment",
        )

    async def issue_comments(self, repo: str, number: int, installation: int | None) -> list[dict[str, Any]]:
        """The issue's first comments (a few pages), oldest first."""
        comments: list[dict[str, Any]] = []
        for page in range(1, COMMENT_PAGES + 1):
            batch = await self.call(
                "GET",
                f"/repos/{repo}/issues/{number}/comments",
                installation=installation,
                params={"per_page": "100", "page": str(page)},
                route="list comments",
            )
            if not isinstance(batch, list):
                break
            comments.extend(item for item in batch if isinstance(item, dict))
            if len(batch) < 100:
                break
        return comments

    async def comment_reactions(
        self, repo: str, comment_id: str, installation: int | None
    ) -> list[dict[str, Any]]:
        reactions = await self.call(
            "GET",
            f"/repos/{repo}/issues/comments/{comment_id}/reactions",
            installation=installation,
            params={"per_page": "100"},
            route="list reactions",
        )
        return [item for item in reactions if isinstance(item, dict)] if isinstance(reactions, list) else []
