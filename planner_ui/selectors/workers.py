"""Which Celery workers said recently that they are alive (services.leases)."""

from __future__ import annotations

import redis

from planner_ui.services.redis_store import redis_client, redis_key


def workers_alive() -> list[str] | None:
    """Hostnames of the live workers; None when Redis cannot be asked."""
    prefix = redis_key("worker", "")
    try:
        keys = redis_client().scan_iter(match=prefix + "*", count=100)
        return sorted(key.decode()[len(prefix) :] for key in keys)
    except redis.RedisError:
        return None
