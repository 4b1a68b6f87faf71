"""A local fake of GitHub's REST API on 127.0.0.1: the app itself (`GET /app`) and installation tokens, both
with an RS256 app JWT checked against the app's public key and id, issue comments (create, list, update,
delete) and their reactions.

Records every request and answers the way GitHub does (201/200/204, 401 for a bad token, 404, 422 for a
comment over 65,536 characters, 403 with `Retry-After` for a secondary rate limit), so tests can assert on
exactly what GitHub would have received. Start it inside the test's event loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HOST = "127.0.0.1"
APP_ID = 4242
APP_SLUG = "panicbot"
BOT_LOGIN = f"{APP_SLUG}[bot]"
MAX_COMMENT_CHARS = 65_536
T = TypeVar("T")


def new_private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


@dataclass
class Call:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    status: int = 200
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Limit:
    method: str
    path_part: str
    retry_after: int | None
    times: int
    status: int = 403


class FakeGitHub:
    """GitHub's side of every request the bot makes, on a free port of 127.0.0.1."""

    def __init__(
        self,
        *,
        public_key: rsa.RSAPublicKey | None = None,
        app_id: int = APP_ID,
        static_token: str | None = None,
        token_lifetime: timedelta = timedelta(hours=1),
        port: int = 0,
    ) -> None:
        self.public_key, self.app_id, self.static_token = public_key, app_id, static_token
        self.token_lifetime = token_lifetime
        self.calls: list[Call] = []
        self.problems: list[str] = []
        self.tokens: dict[str, int] = {}  # installation token -> installation
        self.comments: dict[int, dict[str, Any]] = {}
        self.reactions: dict[int, list[dict[str, Any]]] = {}
        self._ids = itertools.count(9001)
        self._limits: list[_Limit] = []
        self._runner: web.AppRunner | None = None
        self.port = port  # 0: any free one

    async def start(self) -> FakeGitHub:
        app = web.Application()
        app.router.add_get("/app", self._app)
        app.router.add_post("/app/installations/{installation}/access_tokens", self._access_token)
        app.router.add_route("*", "/repos/{owner}/{repo}/{rest:.*}", self._repos)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeGitHub:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- what tests configure and read --------------------------------------------------------------------

    def rate_limit(
        self, method: str, path_part: str, *, retry_after: int | None = 1, times: int = 1, status: int = 403
    ) -> None:
        """Answer the next `times` matching requests with a secondary rate limit."""
        self._limits.append(_Limit(method, path_part, retry_after, times, status))

    def react(self, comment_id: int, content: str, *, login: str, user_id: int, bot: bool = False) -> None:
        self.reactions.setdefault(comment_id, []).append(
            {
                "id": next(self._ids),
                "content": content,
                "user": {"login": login, "id": user_id, "type": "Bot" if bot else "User"},
            }
        )

    def made(self, method: str, part: str = "") -> list[Call]:
        return [c for c in self.calls if c.method == method and part in c.path and c.status < 300]

    def app_checks(self) -> list[Call]:
        return [c for c in self.calls if c.method == "GET" and c.path == "/app"]

    def token_requests(self) -> list[Call]:
        return [c for c in self.calls if c.path.endswith("/access_tokens")]

    async def wait_for(self, check: Callable[[], T], *, what: str, timeout: float = 10.0) -> T:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            await asyncio.sleep(0.02)
        raise AssertionError(
            f"timed out waiting for {what}; calls: {[(c.method, c.path) for c in self.calls]}"
        )

    # -- GitHub ------------------------------------------------------------------------------------------

    def _record(self, request: web.Request, body: Any, status: int) -> None:
        self.calls.append(Call(request.method, request.path_qs, body, dict(request.headers), status))

    async def _app(self, request: web.Request) -> web.Response:
        """`GET /app` with the app's JWT. GitHub answers an unknown App ID, or a key that is not that app's,
        with 401 "A JSON web token could not be decoded" (the JWT's `iss` does not match its signature)."""
        auth = request.headers.get("Authorization", "")
        try:
            if self.public_key is None or not auth.startswith("Bearer "):
                raise jwt.InvalidTokenError("no app JWT")
            claims = jwt.decode(
                auth.removeprefix("Bearer "),
                self.public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
            if claims["iss"] != str(self.app_id):
                raise jwt.InvalidTokenError("another app's id")
        except jwt.PyJWTError:
            self._record(request, None, 401)
            return web.json_response({"message": "A JSON web token could not be decoded"}, status=401)
        self._record(request, None, 200)
        return web.json_response({"id": self.app_id, "slug": APP_SLUG, "name": "panicbot"})

    async def _access_token(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        installation = int(request.match_info["installation"])
        if self.public_key is None or not auth.startswith("Bearer "):
            self._record(request, None, 401)
            return web.json_response({"message": "A JSON web token could not be decoded"}, status=401)
        try:
            claims = jwt.decode(
                auth.removeprefix("Bearer "),
                self.public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError as exc:
            self.problems.append(f"a bad app JWT: {exc}")
            self._record(request, None, 401)
            return web.json_response({"message": "A JSON web token could not be decoded"}, status=401)
        if claims["iss"] != str(self.app_id) or claims["exp"] - claims["iat"] > 11 * 60:
            self.problems.append(f"JWT claims GitHub refuses: {claims}")
        token = f"ghs_fake{installation}x{len(self.tokens) + 1:04d}"
        self.tokens[token] = installation
        expires = (datetime.now(UTC) + self.token_lifetime).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._record(request, None, 201)
        return web.json_response({"token": token, "expires_at": expires}, status=201)

    def _authorised(self, request: web.Request) -> bool:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").removeprefix("token ")
        return token in self.tokens or (self.static_token is not None and token == self.static_token)

    def _limited(self, request: web.Request) -> _Limit | None:
        for limit in self._limits:
            if limit.times > 0 and limit.method == request.method and limit.path_part in request.path:
                limit.times -= 1
                return limit
        return None

    async def _repos(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        if not self._authorised(request):
            self._record(request, body, 401)
            return web.json_response({"message": "Bad credentials"}, status=401)
        limit = self._limited(request)
        if limit is not None:
            self._record(request, body, limit.status)
            headers = {"Retry-After": str(limit.retry_after)} if limit.retry_after is not None else {}
            return web.json_response(
                {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
                status=limit.status,
                headers=headers,
            )
        repo = f"{request.match_info['owner']}/{request.match_info['repo']}"
        parts = request.match_info["rest"].split("/")
        status, answer = self._route(request.method, repo, parts, body)
        self._record(request, body, status)
        if status == 204:
            return web.Response(status=204)
        return web.json_response(answer, status=status)

    def _route(self, method: str, repo: str, parts: list[str], body: Any) -> tuple[int, Any]:
        # issues/{n}/comments
        if len(parts) == 3 and parts[0] == "issues" and parts[2] == "comments" and parts[1].isdigit():
            number = int(parts[1])
            if method == "GET":
                listed = [c for c in self.comments.values() if c["repo"] == repo and c["issue"] == number]
                return 200, listed
            if method == "POST":
                text = (body or {}).get("body")
                if not isinstance(text, str) or not text:
                    return 422, {"message": "Validation Failed"}
                if len(text) > MAX_COMMENT_CHARS:
                    self.problems.append(f"a comment of {len(text)} characters")
                    return 422, {
                        "message": "Validation Failed: body is too long (maximum is 65536 characters)"
                    }
                comment_id = next(self._ids)
                comment = {
                    "id": comment_id,
                    "repo": repo,
                    "issue": number,
                    "body": text,
                    "user": {"login": BOT_LOGIN, "id": 1, "type": "Bot"},
                }
                self.comments[comment_id] = comment
                return 201, comment
        # issues/comments/{id}[/reactions]
        if len(parts) >= 3 and parts[0] == "issues" and parts[1] == "comments" and parts[2].isdigit():
            comment_id = int(parts[2])
            comment = self.comments.get(comment_id)
            if comment is None or comment["repo"] != repo:
                return 404, {"message": "Not Found"}
            if len(parts) == 4 and parts[3] == "reactions" and method == "GET":
                return 200, self.reactions.get(comment_id, [])
            if len(parts) == 3 and method == "PATCH":
                text = (body or {}).get("body")
                if not isinstance(text, str) or len(text) > MAX_COMMENT_CHARS:
                    return 422, {"message": "Validation Failed"}
                comment["body"] = text
                return 200, comment
            if len(parts) == 3 and method == "DELETE":
                del self.comments[comment_id]
                return 204, None
        return 404, {"message": "Not Found"}
