"""How long each database statement and commit of a process takes, as the process sees it: the
benchmark's `--statement-times` (docs/benchmark.md), off unless AGENTSITE_STATEMENT_TIMES names
a folder (agentsite.celery installs it in each pool process).

On PostgreSQL a statement's time is a round trip to another process, and whatever it waited
for there: a row another transaction holds until its commit shows as a long tail on the
statements that ask for that row. That is what the figures are for (issue 37 found the claims
waiting for the run's event counter this way); the database's own views of it
(`pg_stat_statements`, lock waits) need its configuration changed, and SQLite has none.

Each process appends a line per statement to a file of its own in the folder (time, duration
in ms, the statement's first words); `summary` reads them all back."""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

# Statements are grouped by this many characters of their text, spaces folded: enough to tell
# the hot path's statements apart, short enough to group a statement's variants.
HEAD_CHARS = 60


class _Timer:
    """The wrappers of one process, writing to its file."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, started: float, text: str) -> None:
        took_ms = (time.perf_counter() - started) * 1000
        head = " ".join(text.split())[:HEAD_CHARS]
        self.out.write(f"{time.time():.4f}\t{took_ms:.3f}\t{head}\n")

    def execute(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.write(started, sql)

    def attach(self, connection: BaseDatabaseWrapper) -> None:
        # Once per connection: with a pool, each checkout says the connection was created.
        if self.execute in connection.execute_wrappers:
            return
        connection.execute_wrappers.append(self.execute)
        # Django has no hook around a commit, and a commit is where PostgreSQL flushes and a
        # transaction's row locks are let go: the connection's own commit, wrapped.
        commit = connection.commit

        def timed_commit() -> None:
            started = time.perf_counter()
            try:
                commit()
            finally:
                self.write(started, "COMMIT")

        connection.commit = timed_commit  # type: ignore[method-assign]

    def detach(self, connection: BaseDatabaseWrapper) -> None:
        if self.execute in connection.execute_wrappers:
            connection.execute_wrappers.remove(self.execute)
            del connection.commit  # the class's own again

    def created(self, sender: object, connection: BaseDatabaseWrapper, **_: object) -> None:
        self.attach(connection)


_timer: _Timer | None = None


def install(folder: Path) -> None:
    """Time every statement and commit of this process's database connections, into a file of
    its own in `folder`, until `uninstall`."""
    global _timer
    if _timer is not None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    _timer = _Timer(open(folder / f"{os.getpid()}.tsv", "a", buffering=1))  # noqa: SIM115
    connection_created.connect(_timer.created, weak=False)
    for connection in connections.all(initialized_only=True):
        _timer.attach(connection)


def uninstall() -> None:
    global _timer
    if _timer is None:
        return
    connection_created.disconnect(_timer.created)
    for connection in connections.all(initialized_only=True):
        _timer.detach(connection)
    _timer.out.close()
    _timer = None


def clear(folder: Path) -> None:
    """Empty every process's file in `folder` (each keeps appending to its own)."""
    for path in folder.glob("*.tsv"):
        path.write_text("")


def summary(folder: Path, *, top: int = 12) -> list[dict[str, Any]]:
    """The statements timed in `folder`, by their first words: count, total, p50, p90 and max
    in ms, the `top` of them by total time, the most first."""
    durations: dict[str, list[float]] = defaultdict(list)
    for path in folder.glob("*.tsv"):
        for line in path.read_text().splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3:
                durations[parts[2]].append(float(parts[1]))
    rows: list[dict[str, Any]] = []
    for head, times in durations.items():
        times.sort()
        rows.append(
            {
                "statement": head,
                "count": len(times),
                "total_ms": round(sum(times), 1),
                "p50_ms": round(statistics.median(times), 2),
                "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
                "max_ms": round(times[-1], 2),
            }
        )
    rows.sort(key=lambda row: -row["total_ms"])
    return rows[:top]
