"""`RedisOutbox`: the outbox (`adapters.outbox`) in Redis, for a deployment with `REDIS_URL`, on the
redis.asyncio client (a slow Redis never holds up the event loop).

`<prefix>:outbox:order` (a sorted set: delivery id by arrival), `:meta` (a hash: lane, holder, lease end,
claims), `:payload` (a hash: what the handler needs) and `:served` (a hash: each lane's last turn). A claim
runs under a short lock (`SET NX PX`) so replicas take turns one at a time; its write, a give-back and a
removal are Lua scripts, so an entry removed by one replica is never brought back by another."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from adapters.outbox import OutboxEntry, Waiting, lane_name, next_turn

# Far longer than a claim takes (a few round trips): a replica that dies holding it frees it this soon.
CLAIM_LOCK_MS = 5_000

_ADD = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
local seq = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[4], seq, ARGV[1])
return 1
"""
# Write a claim's new meta only if the entry is still there (another replica may have finished it).
_TAKE = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""
_RELEASE = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local meta = cjson.decode(raw)
if meta['owner'] ~= ARGV[2] then return 0 end
meta['owner'] = ''
meta['lease_until'] = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(meta))
return 1
"""
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisOutbox:
    """One platform's outbox in Redis, under `<prefix>:outbox:`."""

    def __init__(self, client: Redis, prefix: str, *, clock: Callable[[], float] = time.time) -> None:
        self.client, self._clock = client, clock
        base = f"{prefix.rstrip(':')}:outbox"
        self._order, self._meta, self._payload = f"{base}:order", f"{base}:meta", f"{base}:payload"
        self._served, self._seq, self._lock = f"{base}:served", f"{base}:seq", f"{base}:lock"
        self._turns = f"{base}:turns"

    async def close(self) -> None:
        await self.client.aclose()

    async def add(self, entry: OutboxEntry) -> bool:
        meta = {"group": entry.group, "member": entry.member, "owner": "", "lease_until": 0, "attempts": 0}
        added = await self.client.eval(
            _ADD,
            4,
            self._meta,
            self._payload,
            self._seq,
            self._order,
            entry.key,
            json.dumps(meta),
            json.dumps(entry.payload, separators=(",", ":")),
        )
        return bool(added)

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        token = uuid.uuid4().hex
        if not await self.client.set(self._lock, token, nx=True, px=CLAIM_LOCK_MS):
            return None  # another replica is claiming: the next poll comes soon
        try:
            return await self._claim(owner, lease_seconds)
        finally:
            await self.client.eval(_UNLOCK, 1, self._lock, token)

    async def _claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        now = self._clock()
        order: list[Any] = await self.client.zrange(self._order, 0, -1, withscores=True)
        if not order:
            return None
        metas: dict[Any, Any] = await self.client.hgetall(self._meta)
        served = {
            _text(lane): int(count) for lane, count in (await self.client.hgetall(self._served)).items()
        }
        waiting: list[Waiting] = []
        known: dict[str, dict[str, Any]] = {}
        for raw_key, seq in order:
            key = _text(raw_key)
            meta = _meta(metas.get(raw_key))
            if meta is None:
                continue
            known[key] = meta
            held = float(meta.get("lease_until", 0)) > now
            waiting.append(Waiting(int(seq), key, str(meta["group"]), str(meta["member"]), held))
        turn = next_turn(waiting, served)
        if turn is None:
            return None
        meta = known[turn.key]
        attempts = int(meta.get("attempts", 0))
        meta.update(owner=owner, lease_until=now + lease_seconds, attempts=attempts + 1)
        if not await self.client.eval(_TAKE, 1, self._meta, turn.key, json.dumps(meta)):
            return None
        counter = int(await self.client.incr(self._turns))
        await self.client.hset(
            self._served,
            mapping={lane_name(turn.group): counter, lane_name(turn.group, turn.member): counter},
        )
        raw_payload = await self.client.hget(self._payload, turn.key)
        payload = json.loads(raw_payload) if raw_payload else {}
        return OutboxEntry(
            turn.key, turn.group, turn.member, payload if isinstance(payload, dict) else {}, attempts
        )

    async def done(self, key: str) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(self._order, key)
            pipe.hdel(self._meta, key)
            pipe.hdel(self._payload, key)
            await pipe.execute()
        if not await self.client.zcard(self._order):
            await self.client.delete(self._served)  # nothing waits: every lane starts afresh

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        free_at = self._clock() + delay if delay > 0 else 0
        await self.client.eval(_RELEASE, 1, self._meta, key, owner, repr(float(free_at)))

    async def pending(self) -> list[str]:
        return [_text(key) for key in await self.client.zrange(self._order, 0, -1)]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _meta(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "group" in data and "member" in data else None
