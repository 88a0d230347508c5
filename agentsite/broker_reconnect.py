"""A worker that held a task when Redis went away survives its return (kombu 5.7, Celery 5.7).

On a lost broker connection, Celery's consumer calls `connection.collect()` and then
`connection.close()` (celery.worker.consumer.Consumer.on_connection_error_after_connected).
`collect()` tries to close the connection's default channel, which fails while Redis is down
(the channel's pending BRPOP cannot be read), and then detaches the transport from its
connection: `transport.client = None`. The channel is left open and still bound to that
transport. `close()` closes it again; this time it gets as far as putting its unacknowledged
messages back ("Restoring 1 unacknowledged message(s)"), which needs a Redis client, which
needs `transport.client.hostname`: AttributeError, which is not a connection error, so the
worker stops ("Unrecoverable error"). An idle worker has nothing to restore and survives,
which is why only busy workers died. Later, the acknowledgement of the task that was running
meets the same detached transport.

The repair keeps the transport's client in place after `collect()`: the old channel can then
restore its messages, or fail with a connection error that Celery expects while Redis is still
away, and the task that ran through the outage acknowledges its message on that channel once
Redis answers again (the message is in Redis's unacked hash, persisted with it). The
connection itself still starts over with a new transport, as before.
"""

from __future__ import annotations

from typing import Any

from kombu import Connection

_collect = Connection.collect


def _collect_keeping_client(self: Connection, socket_timeout: float | None = None) -> Any:
    transport = self._transport
    client = transport.client if transport is not None else None
    try:
        return _collect(self, socket_timeout)
    finally:
        if transport is not None and transport.client is None:
            # Channels it failed to close still use it (see above).
            transport.client = client


def install() -> None:
    """Idempotent: the worker's main process and every process importing the app call it."""
    if Connection.collect is not _collect_keeping_client:
        Connection.collect = _collect_keeping_client  # type: ignore[method-assign]
