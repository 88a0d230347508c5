"""A task queue that refuses this process's sends until a test lets it answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import pools

from agentsite.celery import app


def _reset_pools() -> None:
    # Celery takes its pool from kombu's global registry (keyed by broker URL) and builds a
    # producer pool on it: drop all three, so neither test sees the other's connections.
    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def queue_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point this process's Celery producer at a socket nothing listens on (yet): start a
    Redis on it (agentsite.embedded.start_redis) to let the queue answer."""
    original = app.conf.broker_url
    socket = Path(tmp_path_factory.mktemp("q")) / "q.sock"
    _reset_pools()
    app.conf.broker_url = f"redis+socket://{socket}"
    yield socket
    _reset_pools()
    app.conf.broker_url = original


def queued_on(socket: Path) -> list[bytes]:
    """The task messages waiting in the queue of the Redis on `socket`."""
    client = redis.Redis(unix_socket_path=str(socket))
    try:
        return client.lrange("agentsite", 0, -1)
    finally:
        client.close()
