"""A database farther away: every round trip of a process to PostgreSQL waits a few tenths of a
millisecond first, as PostgreSQL on another machine would add. The benchmark's `--db-delay-ms`
(docs/benchmark.md), off unless AGENTSITE_STATEMENT_DELAY_MS is set (agentsite.celery installs
it in each pool process).

On the benchmark's one machine PostgreSQL answers in about 50 µs; in production it is on a
machine of its own, and every round trip a transaction makes while it holds rows others wait
for lengthens their wait too. This makes that visible on one machine.

It waits in psycopg's `Connection.wait`, which every statement, commit and rollback goes
through, whatever cursor sends it: Django's, or the prepared statements of stores.sql, which an
execute wrapper would have turned back to Django's cursor (sql.rows leaves a watched statement
to Django). One call of it can hold more than one round trip (a transaction's BEGIN goes with
its first statement, a statement's first PREPARE on a connection with its first run), so it
understates a network by those."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

_unpatched: Callable[..., Any] | None = None


def install(milliseconds: float) -> None:
    """Delay every round trip of this process's PostgreSQL connections by `milliseconds`,
    from now on."""
    global _unpatched
    if _unpatched is not None or milliseconds <= 0:
        return
    seconds = milliseconds / 1000
    wait = _unpatched = psycopg.Connection.wait

    def delayed(self: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return wait(self, *args, **kwargs)

    psycopg.Connection.wait = delayed  # type: ignore[method-assign]


def uninstall() -> None:
    global _unpatched
    if _unpatched is None:
        return
    psycopg.Connection.wait = _unpatched  # type: ignore[method-assign]
    _unpatched = None
