"""Runs and templates made before the search index are indexed by its migration, on either
database, and found through the database's own full-text index (FTS5 or tsvector); going back
drops that index cleanly."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from planner_ui.models import SearchDocument
from planner_ui.selectors.search import matching
from tests.migration_graph import around


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_what_was_there_before_is_indexed() -> None:
    target, before, leaves = around("_plan_library")
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps
        owner = old.get_model("auth", "User").objects.create(username="old")
        run = old.get_model("planner_ui", "Run").objects.create(
            owner_id=owner.pk, task="Weigh the harbour cranes", status="succeeded", result="Heavy"
        )
        old.get_model("planner_ui", "Step").objects.create(
            run_id=run.pk,
            step_id="a",
            title="Weigh",
            instruction="Weigh them",
            role="researcher",
            output="Forty tonnes of steel",
        )
        template = old.get_model("planner_ui", "PlanTemplate").objects.create(
            owner_id=owner.pk, name="Lighthouses", description="Count them"
        )
        old.get_model("planner_ui", "PlanTemplateVersion").objects.create(
            template_id=template.pk,
            number=1,
            task="Count the lighthouses of {coast}",
            plan={"goal": "g", "steps": []},
        )

        MigrationExecutor(connection).migrate([target])
        documents = SearchDocument.objects.all()

        def found(word: str) -> list[tuple[int | None, int | None]]:
            return list(
                matching(documents, [word], match_all=True).values_list("run_id", "template_id")
            )

        assert found("cranes") == [(run.pk, None)]
        assert found("tonnes") == [(run.pk, None)]  # a step's output
        assert found("heavy") == [(run.pk, None)]  # the deliverable
        assert found("lighthouses") == [(None, template.pk)]
        MigrationExecutor(connection).migrate([before])  # and back, dropping the index
        MigrationExecutor(connection).migrate([target])
        assert found("cranes") == [(run.pk, None)]
    finally:
        MigrationExecutor(connection).migrate(leaves)
