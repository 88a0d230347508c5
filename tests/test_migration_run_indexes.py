"""The single-column run_id indexes of events, steps and model calls go, and come back when the
migration is reversed; the composite indexes that serve a run's lookups, and the foreign keys,
stay. On both databases (`make test` runs it on PostgreSQL too)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_graph import around

TABLES = ("planner_ui_runevent", "planner_ui_step", "planner_ui_modelcall")


def _indexes_on_run_id() -> dict[str, list[list[str]]]:
    """Each table's non-primary indexes that start with run_id, by their columns."""
    found: dict[str, list[list[str]]] = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            constraints = connection.introspection.get_constraints(cursor, table)
            found[table] = sorted(
                info["columns"]
                for info in constraints.values()
                if (info["index"] or info["unique"])
                and not info["primary_key"]
                and info["columns"][:1] == ["run_id"]
            )
    return found


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_the_run_id_indexes_a_composite_one_covers_go_and_come_back() -> None:
    target, before, leaves = around("_run_indexes_covered")
    executor = MigrationExecutor(connection)
    covered = {
        "planner_ui_runevent": [["run_id", "seq"]],
        "planner_ui_step": [["run_id", "step_id"]],
        "planner_ui_modelcall": [["run_id", "role"]],
    }
    try:
        executor.migrate([before])
        assert _indexes_on_run_id() == {
            table: sorted([["run_id"], *composite]) for table, composite in covered.items()
        }
        executor = MigrationExecutor(connection)
        executor.migrate([target])
        assert _indexes_on_run_id() == covered
        with connection.cursor() as cursor:
            keys = connection.introspection.get_constraints(cursor, "planner_ui_runevent")
        assert any(info["foreign_key"] == ("planner_ui_run", "id") for info in keys.values())
    finally:
        MigrationExecutor(connection).migrate(leaves)
    assert _indexes_on_run_id() == covered
