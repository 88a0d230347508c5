"""Runs made before the list of allowed hosts existed get the hosts their task names."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db(transaction=True)
def test_existing_runs_allow_the_hosts_their_task_names() -> None:
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    # Found by name, so the test survives the renumbering of migrations at merge time.
    target = next(
        key for key in graph.nodes if key[0] == "planner_ui" and key[1].endswith("_allowed_hosts")
    )
    before = next(p.key for p in graph.node_map[target].parents if p.key[0] == "planner_ui")
    leaves = graph.leaf_nodes()
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
