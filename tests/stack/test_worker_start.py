"""A worker's pool processes open their connections when they start, not on their first step."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

from agentsite import embedded
from tests.conftest import child_env, wait_until

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _opened(pid: int) -> set[str]:
    """What the process has open, as /proc names it (a path, or socket:[inode])."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue  # closed meanwhile
    return found


def test_pool_processes_connect_before_their_first_step(redis_url: str) -> None:
    # A queue of its own: no task reaches this worker, so whatever its processes hold, they
    # opened when they started.
    proc = embedded.start_worker(
        env=child_env(),
        concurrency=2,
        hostname="warmup@%h",
        queue="warmup-test",
        log_path=settings.VAR_DIR / "worker-warmup.log",
    )
    try:
        embedded.wait_for_worker("warmup", timeout=60)
        client = redis.Redis.from_url(redis_url)

        def named() -> set[str]:
            return {c.get("name", "") for c in client.client_list()}

        wait_until(lambda: len(_children(proc.pid)) == 2, timeout=30)
        pool = _children(proc.pid)
        wait_until(lambda: {f"agentsite-{pid}" for pid in pool} <= named(), timeout=30)
        if connection.vendor == "sqlite":
            database = str(Path(connection.settings_dict["NAME"]).resolve())
            for pid in pool:
                assert database in _opened(pid), f"pool process {pid} has no database open"
    finally:
        embedded.stop_processes([proc])
