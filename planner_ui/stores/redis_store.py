"""The one Redis connection of a process (a forked worker child makes its own), and the names
of the keys agentsite keeps there, all under the install's prefix: two installs may share a
Redis server."""

from __future__ import annotations

import os

import redis
from django.conf import settings

_client: tuple[int, redis.Redis] | None = None


def redis_client() -> redis.Redis:
    global _client
    if _client is None or _client[0] != os.getpid():
        client = redis.Redis.from_url(
            settings.REDIS_URL,
            socket_timeout=2,
            socket_connect_timeout=2,
            # CLIENT LIST then says which process holds which connection.
            client_name=f"agentsite-{os.getpid()}",
        )
        _client = (os.getpid(), client)
    return _client[1]


def redis_key(*parts: object) -> str:
    """e.g. redis_key("live", 7) → "agentsite:live:7" (with the default prefix)."""
    return ":".join([settings.AGENTSITE_PREFIX, *(str(part) for part in parts)])
