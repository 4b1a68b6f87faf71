"""The Redis the tests share (127.0.0.1:6379, started by CI): a client that answers, or a failure under CI and
a skip elsewhere; and key prefixes of a test's own, deleted afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import NoReturn

import pytest
import redis

REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_missing(url: str = REDIS_URL) -> NoReturn:
    """No Redis answers: a failure when CI is set (CI provides one), else a skip."""
    reason = f"no Redis answering at {url} (start redis-server; CI provides one)"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)


def answering_redis(url: str = REDIS_URL) -> redis.Redis:
    """A synchronous client of the Redis at `url` that answered a ping (see `redis_missing` otherwise)."""
    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        client.ping()
    except redis.RedisError:
        client.close()
        redis_missing(url)
    return client


def new_prefix() -> str:
    """A key prefix no other test (or concurrent CI job) uses."""
    return f"panicbot-test:{uuid.uuid4().hex}"


def delete_prefix(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)


def prefix_of_its_own(client: redis.Redis) -> Iterator[str]:
    """A fixture's body: a new prefix, its keys deleted afterwards."""
    prefix = new_prefix()
    yield prefix
    delete_prefix(client, prefix)
