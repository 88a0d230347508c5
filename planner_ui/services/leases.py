"""Who is working on what, said every few seconds: a step's heartbeat in its row, a lease in
Redis for the planner's work, and each worker's own sign of life.

A heartbeat older than the lease means the work lost its worker, and the sweep
(services.sweep) hands it to another; a lease held by a live worker keeps a second one from
starting the same work.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator

import redis
from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone

from planner_ui.core.status import StepStatus
from planner_ui.models import Step

from .redis_store import redis_client, redis_key

log = logging.getLogger(__name__)


class _Beat(threading.Thread):
    """Calls `beat` every `interval_s` until stopped; gives up when `beat` says it lost."""

    def __init__(self, beat: Callable[[], bool], interval_s: float, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._beat = beat
        self._interval = interval_s
        self._halt = threading.Event()
        self.lost = False

    def run(self) -> None:
        try:
            while not self._halt.wait(self._interval):
                try:
                    if not self._beat():
                        self.lost = True
                        return
                except Exception:  # a missed beat is retried; the lease allows several
                    log.warning("heartbeat %s failed", self.name, exc_info=True)
        finally:
            # This thread's own database connection, if the beat used one.
            connections.close_all()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


@contextlib.contextmanager
def step_heartbeat(run_id: int, step_id: str, worker: str) -> Iterator[_Beat]:
    """While the block runs, keep the step's heartbeat fresh for as long as this worker holds
    it (another may have taken it over after a long stall: then this one stops beating)."""

    def beat() -> bool:
        close_old_connections()
        return bool(
            Step.objects.filter(
                run_id=run_id, step_id=step_id, status=StepStatus.RUNNING, worker=worker
            ).update(heartbeat_at=timezone.now())
        )

    thread = _Beat(beat, settings.AGENTSITE_HEARTBEAT_S, f"heartbeat-{run_id}-{step_id}")
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


@contextlib.contextmanager
def task_lease(*name: object) -> Iterator[bool]:
    """Hold the lease `name` while the block runs, refreshed every heartbeat; yields False (and
    holds nothing) when a live worker holds it already, so the caller leaves the work to it."""
    key = redis_key("lease", *name)
    holder = f"{socket.gethostname()}:{threading.get_ident()}:{time.monotonic()}"
    ttl = max(1, round(settings.AGENTSITE_STEP_LEASE_S))
    client = redis_client()
    try:
        acquired = bool(client.set(key, holder, nx=True, ex=ttl))
    except redis.RedisError:
        log.warning("no lease %s: Redis refused; going ahead", key, exc_info=True)
        yield True
        return
    if not acquired:
        yield False
        return

    def beat() -> bool:
        if client.get(key) != holder.encode():
            return False
        client.expire(key, ttl)
        return True

    thread = _Beat(beat, settings.AGENTSITE_HEARTBEAT_S, f"lease-{key}")
    thread.start()
    try:
        yield True
    finally:
        thread.stop()
        with contextlib.suppress(redis.RedisError):
            if client.get(key) == holder.encode():
                client.delete(key)


def lease_held(*name: object) -> bool:
    try:
        return bool(redis_client().exists(redis_key("lease", *name)))
    except redis.RedisError:
        return True  # cannot tell: do not start the work a second time


def once_per(seconds: float, *name: object) -> bool:
    """True the first time it is asked for `name` within `seconds`, across every process."""
    try:
        return bool(
            redis_client().set(redis_key("once", *name), 1, nx=True, ex=max(1, round(seconds)))
        )
    except redis.RedisError:
        return False


def seen_for(seconds: float, *name: object) -> bool:
    """True once `name` has been asked about for at least `seconds` (by any process), then
    the wait starts over: for a state with no timestamp of its own."""
    key = redis_key("seen", *name)
    now = time.time()
    try:
        client = redis_client()
        client.set(key, now, nx=True, ex=max(1, round(seconds * 3)))
        first = float(client.get(key) or now)
        if now - first >= seconds:
            client.delete(key)
            return True
    except redis.RedisError:
        pass
    return False


# --- workers' signs of life -----------------------------------------------------------------------


def worker_alive_beat(hostname: str) -> _Beat:
    """Started in each worker's main process: says every few seconds that it is alive."""
    key = redis_key("worker", hostname)
    ttl = max(1, round(settings.AGENTSITE_WORKER_ALIVE_S))

    def beat() -> bool:
        redis_client().set(key, round(time.time()), ex=ttl)
        return True

    beat()
    thread = _Beat(beat, max(1.0, settings.AGENTSITE_WORKER_ALIVE_S / 3), f"alive-{hostname}")
    thread.start()
    return thread
