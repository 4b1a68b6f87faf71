"""Who may use the console: a shared token or per-user argon2 hashes, HMAC-signed session cookies (revoked
on logout, all ended by a new key) and the CSRF token each session's forms carry; failed logins slowed per
client address, the address read through trusted proxies only."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from adapters.settings import SettingsError

COOKIE = "panicbot_console"
_USER_SEPARATORS = re.compile(r"[\s;]+")
_HASHER = PasswordHasher()
# Failed logins per client address: the first few are free, then each one doubles the wait before that
# address may try again (1 s, 2 s, 4 s ... at most a minute); a login forgets them. Only that address waits:
# no failure anywhere ever stops a right token from another one.
FREE_FAILURES = 3
MAX_WAIT_SECONDS = 60.0
FORGET_AFTER_SECONDS = 15 * 60.0
ADDRESSES_KEPT = 10_000

Network = IPv4Network | IPv6Network


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
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._revoked: dict[str, float] = {}  # session nonce -> when it would have expired

    def check(self, presented: str) -> str | None:
        """The user the token belongs to (`console` for the shared token), or None."""
        return self.check_shared(presented) or self.check_users(presented)

    def check_shared(self, presented: str) -> str | None:
        """`console` for the shared token: one constant-time comparison, cheap enough for the event loop."""
        if not presented or self._token is None:
            return None
        return "console" if hmac.compare_digest(presented.encode(), self._token) else None

    @property
    def has_users(self) -> bool:
        return bool(self._users)

    def check_users(self, presented: str) -> str | None:
        """The user whose argon2 hash the token verifies against (slow by design: off the event loop)."""
        if not presented:
            return None
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
        if session.nonce in self._revoked:
            return None
        return session if session.expires > (now or time.time()) else None

    def revoke(self, session: Session, now: float | None = None) -> None:
        """End the session now (logout): its cookie is refused from here on, though its signature holds. Kept
        until it would have expired anyway. In this process: the console also records it where every replica
        looks (`adapters.console.revocations`)."""
        moment = now or time.time()
        for nonce in [n for n, expires in self._revoked.items() if expires <= moment]:
            del self._revoked[nonce]
        self._revoked[session.nonce] = session.expires

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

    def wait_seconds(self, client: str, now: float | None = None) -> float:
        """How long `client` must wait before its next login attempt (0: it may try now)."""
        moment = now or time.monotonic()
        count, last = self._failures.get(client, (0, 0.0))
        if count <= FREE_FAILURES - 1 or moment - last > FORGET_AFTER_SECONDS:
            return 0.0
        wait = min(2.0 ** (count - FREE_FAILURES), MAX_WAIT_SECONDS)
        return max(0.0, last + wait - moment)

    def blocked(self, client: str, now: float | None = None) -> bool:
        return self.wait_seconds(client, now) > 0

    def failed(self, client: str, now: float | None = None) -> None:
        moment = now or time.monotonic()
        count, last = self._failures.pop(client, (0, moment))
        if moment - last > FORGET_AFTER_SECONDS:
            count = 0
        self._failures[client] = (count + 1, moment)
        # A flood of addresses must not grow memory without bound: the longest quiet address goes first
        # (never all at once, which would forgive the address that is guessing right now).
        while len(self._failures) > ADDRESSES_KEPT:
            self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)


def parse_networks(text: str) -> tuple[Network, ...]:
    """`10.0.0.1, 10.1.0.0/16, fd00::/8` -> networks; a bad entry is a ValueError naming it."""
    networks = []
    for part in text.replace(";", ",").split(","):
        entry = part.strip()
        if not entry:
            continue
        try:
            networks.append(ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or CIDR network") from None
    return tuple(networks)


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The address a request comes from. `X-Forwarded-For` is read only when the peer is a trusted proxy,
    from the right: each hop a trusted proxy appended is believed, and the first untrusted one is the client
    (what a client wrote there itself is further left, and never reached)."""
    if not peer:
        return "?"
    address = peer
    if not forwarded_for or not _trusted(address, trusted):
        return address
    for hop in reversed(forwarded_for.split(",")):
        try:
            parsed = ip_address(hop.strip())
        except ValueError:
            return address  # garbage from a proxy: the last address known for sure
        address = str(parsed)
        if not _trusted(address, trusted):
            return address
    return address


def _trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        parsed = ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in trusted)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
