"""Runs that finished before outcomes existed get one: a success that kept warnings succeeded
with warnings, with the first as its reason; a failure keeps its error, on one line."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_graph import around


@pytest.mark.django_db(transaction=True)
def test_finished_runs_get_their_outcome() -> None:
    target, before, leaves = around("_run_outcome")
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps
        owner = old.get_model("auth", "User").objects.create(username="old")
        runs = old.get_model("planner_ui", "Run").objects
        lost = "step 'read' failed (no file) and the re-plan went around it"
        made = {
            "warned": runs.create(owner_id=owner.pk, task="t", status="succeeded", warnings=[lost]),
            "clean": runs.create(owner_id=owner.pk, task="t", status="succeeded"),
            "failed": runs.create(
                owner_id=owner.pk, task="t", status="failed", error="step 'a' failed:\n boom"
            ),
            "running": runs.create(owner_id=owner.pk, task="t", status="running"),
        }

        executor = MigrationExecutor(connection)
        executor.migrate([target])
        new = executor.loader.project_state([target]).apps.get_model("planner_ui", "Run")
        found = {
            name: tuple(new.objects.filter(pk=run.pk).values_list("outcome", "outcome_reason")[0])
            for name, run in made.items()
        }
        assert found == {
            "warned": ("succeeded_with_warnings", lost),
            "clean": ("succeeded", ""),
            "failed": ("failed", "step 'a' failed: boom"),
            "running": ("", ""),
        }
    finally:
        MigrationExecutor(connection).migrate(leaves)
