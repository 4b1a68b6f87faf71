"""Console sessions logged out, shared by every replica (Redis with `REDIS_URL`, else the service's database):
a logout on one replica ends the session on all of them, not only in the process that served it."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any, Protocol

from adapters.storage.store import SqlStore

REDIS_PREFIX = "panicbot:console:revoked"


class Revocations(Protocol):
    async def revoke(self, nonce: str, expires: float) -> None:
        """The session `nonce` is logged out until `expires` (Unix time); raises when it cannot be kept."""

    async def revoked(self, nonce: str) -> bool:
        """True when the session `nonce` was logged out on any replica; raises when that cannot be read."""


class StoreRevocations:
    """In the service's database (`console_revoked`), off the event loop."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def revoke(self, nonce: str, expires: float) -> None:
        await asyncio.to_thread(self.store.revoke_session, nonce, datetime.fromtimestamp(expires, UTC))

    async def revoked(self, nonce: str) -> bool:
        return await asyncio.to_thread(self.store.session_revoked, nonce)


class RedisRevocations:
    """One key per logged-out session, expiring with it: `panicbot:console:revoked:<nonce>`."""

    def __init__(self, client: Any, prefix: str = REDIS_PREFIX) -> None:
        self.client, self.prefix = client, prefix.rstrip(":")

    async def revoke(self, nonce: str, expires: float) -> None:
        await self.client.set(f"{self.prefix}:{nonce}", "1", exat=max(int(expires) + 1, int(time.time()) + 1))

    async def revoked(self, nonce: str) -> bool:
        return bool(await self.client.exists(f"{self.prefix}:{nonce}"))

    async def close(self) -> None:
        await self.client.aclose()
