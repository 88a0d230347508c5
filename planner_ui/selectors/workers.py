"""Which Celery workers said recently that they are alive (services.leases), and when the fleet
last swept (services.sweep)."""

from __future__ import annotations

from datetime import datetime

import redis
from django.conf import settings

from planner_ui.models import Sweep
from planner_ui.stores import sql
from planner_ui.stores.redis_store import redis_client, redis_key


def workers_alive() -> list[str] | None:
    """Hostnames of the live workers; None when Redis cannot be asked."""
    prefix = redis_key("worker", "")
    try:
        keys = redis_client().scan_iter(match=prefix + "*", count=100)
        return sorted(key.decode()[len(prefix) :] for key in keys)
    except redis.RedisError:
        return None


def last_sweep_at() -> datetime | None:
    """When the last sweep started, on the database's clock; None before the first."""
    return Sweep.objects.values_list("swept_at", flat=True).first()


def seconds_since_sweep() -> float | None:
    """How long ago the last sweep started, by the database's clock (the one that stamped it:
    a web server's own may be off); None before the first. Every worker sweeps about every
    AGENTSITE_SWEEP_S: several periods without one means no worker is running."""
    found = sql.rows(f"SELECT swept_at, {sql.clock()} FROM {sql.table(Sweep)}", [])
    if not found:
        return None
    swept_at, now = (sql.datetime_of(value) for value in found[0])
    assert swept_at is not None and now is not None  # neither column nor clock is ever NULL
    return max(0.0, (now - swept_at).total_seconds())


def sweep_late_after_s() -> float:
    """How long without a sweep means no worker sweeps: a few of their periods, at least a
    minute (a worker's first sweep comes a period after it starts)."""
    return max(60.0, 3 * settings.AGENTSITE_SWEEP_S)


def sweep_is_late(since: float | None) -> bool:
    """Whether the fleet's sweep is overdue, `since` being seconds_since_sweep(). Before the
    first sweep nothing is overdue: a new site has no worker yet, which is said apart."""
    return since is not None and since > sweep_late_after_s()
