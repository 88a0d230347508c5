"""A database farther away: every statement and commit of a process waits a few tenths of a
millisecond first, as a round trip to PostgreSQL on another machine would add. The benchmark's
`--db-delay-ms` (docs/benchmark.md), off unless AGENTSITE_STATEMENT_DELAY_MS is set
(agentsite.celery installs it in each pool process).

On the benchmark's one machine PostgreSQL answers in about 50 µs; in production it is on a
machine of its own, and every round trip a transaction makes while it holds rows others wait
for lengthens their wait too. This makes that visible on one machine. It waits before the
statements Django runs and before commits; psycopg's own BEGIN, sent with a transaction's first
statement, is not delayed, so it understates a real network by one round trip a transaction."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created


class _Delay:
    """The wrappers of one process: each waits `seconds`, then does what it wraps."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def execute(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        time.sleep(self.seconds)
        return execute(sql, params, many, context)

    def attach(self, connection: BaseDatabaseWrapper) -> None:
        # Once per connection: with a pool, each checkout says the connection was created.
        if self.execute in connection.execute_wrappers:
            return
        connection.execute_wrappers.append(self.execute)
        commit = connection.commit

        def delayed_commit() -> None:
            time.sleep(self.seconds)
            commit()

        connection.commit = delayed_commit  # type: ignore[method-assign]

    def created(self, sender: object, connection: BaseDatabaseWrapper, **_: object) -> None:
        self.attach(connection)


_delay: _Delay | None = None


def install(milliseconds: float) -> None:
    """Delay every statement and commit of this process's database connections by
    `milliseconds`, from now on."""
    global _delay
    if _delay is not None or milliseconds <= 0:
        return
    _delay = _Delay(milliseconds / 1000)
    connection_created.connect(_delay.created, weak=False)
    for connection in connections.all(initialized_only=True):
        _delay.attach(connection)


def uninstall() -> None:
    global _delay
    if _delay is None:
        return
    connection_created.disconnect(_delay.created)
    for connection in connections.all(initialized_only=True):
        if _delay.execute in connection.execute_wrappers:
            connection.execute_wrappers.remove(_delay.execute)
            del connection.commit  # the class's own again
    _delay = None
