"""Runs made before the list of allowed hosts existed get the hosts their task names."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_graph import around


@pytest.mark.django_db(transaction=True)
def test_existing_runs_allow_the_hosts_their_task_names() -> None:
    target, before, leaves = around("_allowed_hosts")
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps
        owner = old.get_model("auth", "User").objects.create(username="old")
        runs = old.get_model("planner_ui", "Run").objects
        named = runs.create(owner_id=owner.pk, task="Summarize https://Example.org/a").pk
        plain = runs.create(owner_id=owner.pk, task="Compare Python and Go").pk

        executor = MigrationExecutor(connection)
        executor.migrate([target])
        new = executor.loader.project_state([target]).apps.get_model("planner_ui", "Run")
        assert new.objects.get(pk=named).allowed_hosts == ["example.org"]
        assert new.objects.get(pk=plain).allowed_hosts == []
    finally:
        MigrationExecutor(connection).migrate(leaves)
