"""Kombu's Redis channel keeps one client for its synchronous commands (kombu 5.7).

Each publish, and each batch of publishes (`planner_ui.services.broadcast.tasks_send`), asked
the channel for a Redis client, and kombu built a new one every time. redis-py's client builds
its table of some 170 reply callbacks in its constructor: a quarter of the CPU of sending a
task (about 90 of 390 µs on the benchmark's machine), paid by every finish that queues a step.
The client holds no connection of its own (each command borrows one from the channel's pool),
so one client per channel serves every publish, from any thread; it is built again only when
the channel has replaced its pool (after a lost connection).

The asynchronous clients (the worker's BRPOP, its pub/sub) are kombu's, as they were.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis

_create_client = kombu_redis.Channel._create_client


def _create_client_once(self: kombu_redis.Channel, asynchronous: bool = False) -> Any:
    if asynchronous:
        return _create_client(self, asynchronous=True)
    client = self.__dict__.get("_agentsite_client")
    if client is None or client.connection_pool is not self.pool:
        client = self.__dict__["_agentsite_client"] = _create_client(self)
    return client


def install() -> None:
    """Idempotent: every process importing the app calls it."""
    if kombu_redis.Channel._create_client is not _create_client_once:
        kombu_redis.Channel._create_client = _create_client_once  # type: ignore[method-assign]
