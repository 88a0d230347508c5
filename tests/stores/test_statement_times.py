"""The benchmark's statement timer: what a process's statements and commits took, by kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection, transaction

from planner_ui.models import Run
from planner_ui.stores import statement_times

pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


def test_statements_and_commits_are_timed_by_kind_until_uninstalled(tmp_path: Path, alice):
    wrappers = list(connection.execute_wrappers)
    statement_times.install(tmp_path)
    try:
        for _ in range(3):
            with transaction.atomic():
                Run.objects.create(owner=alice, task="timed")
        Run.objects.filter(task="timed").count()
    finally:
        statement_times.uninstall()
    Run.objects.filter(task="not timed").count()  # after uninstall: not in the files

    rows = {row["statement"]: row for row in statement_times.summary(tmp_path)}
    inserts = [row for head, row in rows.items() if head.startswith('INSERT INTO "planner_ui_run"')]
    assert [row["count"] for row in inserts] == [3]
    assert rows["COMMIT"]["count"] >= 3
    counts = [head for head in rows if head.startswith("SELECT COUNT(*)")]
    assert len(counts) == 1 and rows[counts[0]]["count"] == 1
    row = inserts[0]
    assert 0 <= row["p50_ms"] <= row["p90_ms"] <= row["max_ms"] <= row["total_ms"]
    assert all(len(head) <= statement_times.HEAD_CHARS for head in rows)
    # The connection is as it was: no wrapper left, the class's own commit.
    assert connection.execute_wrappers == wrappers
    assert "commit" not in vars(connection)


def test_clear_empties_each_file_for_the_next_shape(tmp_path: Path, alice):
    statement_times.install(tmp_path)
    try:
        Run.objects.filter(owner=alice).count()
        assert statement_times.summary(tmp_path)
        statement_times.clear(tmp_path)
        assert statement_times.summary(tmp_path) == []
        Run.objects.filter(owner=alice).exists()  # the process goes on appending to its file
    finally:
        statement_times.uninstall()
    assert [row["count"] for row in statement_times.summary(tmp_path)] == [1]
