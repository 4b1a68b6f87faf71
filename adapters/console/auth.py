"""Who may use the console: a shared token or per-user argon2 hashes, HMAC-signed session cookies and the
CSRF token each session's forms carry."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections import deque
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from adapters.settings import SettingsError

COOKIE = "panicbot_console"
_USER_SEPARATORS = re.compile(r"[\s;]+")
_HASHER = PasswordHasher()
# Failed logins per client address per window: past it, a 429 (a guessing script gets nowhere).
LOGIN_FAILURES_ALLOWED = 10
LOGIN_WINDOW_SECONDS = 60.0


def hash_token(token: str) -> str:
    """An argon2id hash for `PANICBOT_CONSOLE_USERS`."""
    return _HASHER.hash(token)


def parse_users(text: str) -> dict[str, str]:
    """`alice:$argon2id$...; bob:$argon2id$...` -> {name: hash}; a malformed entry is a `SettingsError`."""
    users: dict[str, str] = {}
    for entry in _USER_SEPARATORS.split(text.strip()):
        if not entry:
            continue
        name, _, hashed = entry.partition(":")
        if not name or not hashed.startswith("$argon2"):
            raise SettingsError("PANICBOT_CONSOLE_USERS: each entry is name:<argon2 hash>")
        users[name] = hashed
    return users


@dataclass(frozen=True)
class Session:
    user: str
    nonce: str
    expires: float


class Authenticator:
    """Checks credentials and signs sessions. The key signs cookies and CSRF tokens; rotate it to end every
    session."""

    def __init__(
        self, *, token: str | None, users: dict[str, str], key: bytes, session_seconds: float
    ) -> None:
        self._token = token.encode() if token else None
        self._users = users
        self._key = key
        self.session_seconds = session_seconds
        self._failures: dict[str, deque[float]] = {}

    def check(self, presented: str) -> str | None:
        """The user the token belongs to (`console` for the shared token), or None."""
        if not presented:
            return None
        given = presented.encode()
        if self._token is not None and hmac.compare_digest(given, self._token):
            return "console"
        for name, hashed in self._users.items():
            try:
                if _HASHER.verify(hashed, presented):
                    return name
            except (VerificationError, InvalidHashError):
                continue
        return None

    # -- sessions -------------------------------------------------------------------------------------

    def _sign(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self._key, payload, hashlib.sha256).digest()).decode()

    def new_session(self, user: str, now: float | None = None) -> str:
        expires = (now or time.time()) + self.session_seconds
        body = json.dumps({"u": user, "n": secrets.token_urlsafe(16), "e": expires}).encode()
        encoded = base64.urlsafe_b64encode(body).decode()
        return f"{encoded}.{self._sign(body)}"

    def session(self, cookie: str | None, now: float | None = None) -> Session | None:
        if not cookie or "." not in cookie or len(cookie) > 1024:
            return None
        encoded, _, signature = cookie.partition(".")
        try:
            body = base64.urlsafe_b64decode(encoded.encode())
        except ValueError:
            return None
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        try:
            data = json.loads(body)
            session = Session(str(data["u"]), str(data["n"]), float(data["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires > (now or time.time()) else None

    def csrf_token(self, session: Session) -> str:
        return self._sign(f"csrf\n{session.nonce}".encode())

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(str(token), self.csrf_token(session))

    def login_csrf(self, nonce: str) -> str:
        """The login form's token, bound to the nonce of its (pre-session) cookie."""
        return self._sign(f"login\n{nonce}".encode())

    def login_csrf_ok(self, nonce: str, token: str) -> bool:
        return bool(nonce) and bool(token) and hmac.compare_digest(token, self.login_csrf(nonce))

    # -- guessing -------------------------------------------------------------------------------------

    def blocked(self, client: str, now: float | None = None) -> bool:
        moment = now or time.monotonic()
        failures = self._failures.get(client)
        if not failures:
            return False
        while failures and failures[0] < moment - LOGIN_WINDOW_SECONDS:
            failures.popleft()
        return len(failures) >= LOGIN_FAILURES_ALLOWED

    def failed(self, client: str, now: float | None = None) -> None:
        if len(self._failures) > 10_000:  # a flood of addresses must not grow memory without bound
            self._failures.clear()
        self._failures.setdefault(client, deque()).append(now or time.monotonic())
