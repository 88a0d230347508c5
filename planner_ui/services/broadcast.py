"""Publishing to the pages that watch a run, from any process, cheaply.

Channels' `async_to_sync(group_send)` starts an event loop thread and a Redis connection for
every message: about 4 ms each. Here each process keeps one plain Redis connection and
publishes in the channel layer's own format (channels_redis' pub/sub layer: one PUBLISH of the
serialized message on "<prefix>__group__<group>"), several messages in one round trip. Any other
channel layer (a test's in-memory one) gets the ordinary group_send.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import redis
from asgiref.sync import async_to_sync
from celery import current_app
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from planner_ui.stores.redis_store import redis_client

log = logging.getLogger(__name__)

PUBSUB_LAYER = "channels_redis.pubsub.RedisPubSubChannelLayer"


def _layer_config() -> dict[str, Any]:
    return settings.CHANNEL_LAYERS["default"]


def group_channel(group: str) -> str:
    """The Redis pub/sub channel channels_redis' pub/sub layer carries `group`'s messages on."""
    prefix = _layer_config().get("CONFIG", {}).get("prefix", "asgi")
    return f"{prefix}__group__{group}"


def group_publish(
    messages: Iterable[tuple[str, dict[str, Any]]],
    *,
    along: Callable[[redis.client.Pipeline], None] | None = None,
) -> None:
    """Send each (group, message) to the group's consumers, in order, with the Redis commands
    `along` adds to the same round trip; never raises: watchers that miss a message catch up
    from the event log."""
    messages = list(messages)
    if not messages and along is None:
        return
    try:
        config = _layer_config()
        pipe = redis_client().pipeline(transaction=False)
        if along is not None:
            along(pipe)
        if config["BACKEND"] != PUBSUB_LAYER:
            pipe.execute()
            layer = get_channel_layer()
            for group, message in messages:
                async_to_sync(layer.group_send)(group, message)
            return
        serialize = get_channel_layer().serialize
        for group, message in messages:
            pipe.publish(group_channel(group), serialize(message))
        pipe.execute()
    except Exception:
        log.warning("could not publish %d message(s) to watchers", len(messages), exc_info=True)


# A task's send, given the producer the transaction's tasks share, and what to do if the queue
# refuses it.
Send = Callable[[Any], None]
Refused = Callable[[Exception], None]


def tasks_send(tasks: list[tuple[Send, Refused]]) -> None:
    """Hand tasks to the queue in one round trip (kombu's publish batch: one Redis pipeline for
    all of them), where a parent that unblocked three children used to wait for three. If the
    queue refuses them, each says so in its own way."""
    if not tasks:
        return
    try:
        with current_app.producer_or_acquire() as producer, producer.batch():
            for send, _refused in tasks:
                send(producer)
    except Exception as exc:  # kombu raises several types; all mean the same here
        log.exception("could not hand %d task(s) to the queue", len(tasks))
        for _send, refused in tasks:
            refused(exc)


def warm_up() -> None:
    """Connect what publishing and sending tasks use, ahead of a process's first step."""
    redis_client().ping()
    if _layer_config()["BACKEND"] == PUBSUB_LAYER:
        get_channel_layer().serialize({"type": "warm.up"})
    with current_app.producer_or_acquire() as producer:
        producer.connection.default_channel.client.ping()


class AfterCommit:
    """What one transaction hands on once it commits, in one go: its tasks to the queue first
    (a child step should not wait behind the watchers), then its messages to the watchers in
    one round trip."""

    def __init__(self) -> None:
        self.tasks: list[tuple[Send, Refused]] = []
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.commands: list[Callable[[redis.client.Pipeline], None]] = []

    def enqueue(self, send: Send, refused: Refused) -> None:
        self.tasks.append((send, refused))

    def publish(self, group: str, message: dict[str, Any]) -> None:
        self.publish_all([(group, message)])

    def publish_all(self, messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.messages.extend(messages)

    def along(self, commands: Callable[[redis.client.Pipeline], None]) -> None:
        """Redis commands for the messages' round trip (ahead of them), once committed."""
        self.commands.append(commands)

    def __call__(self) -> None:
        tasks_send(self.tasks)
        group_publish(self.messages, along=self._along if self.commands else None)

    def _along(self, pipe: redis.client.Pipeline) -> None:
        for commands in self.commands:
            commands(pipe)


class _Now(AfterCommit):
    """Outside a transaction there is nothing to wait for."""

    def enqueue(self, send: Send, refused: Refused) -> None:
        tasks_send([(send, refused)])

    def publish_all(self, messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
        group_publish(messages)

    def along(self, commands: Callable[[redis.client.Pipeline], None]) -> None:
        group_publish([], along=commands)


def after_commit() -> AfterCommit:
    """The current transaction's AfterCommit, registered with it on first use; a rolled-back
    transaction drops it with everything it held."""
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        return _Now()
    for _savepoints, callback, _robust in connection.run_on_commit:
        if isinstance(callback, AfterCommit):
            return callback
    hook = AfterCommit()
    transaction.on_commit(hook)
    return hook
