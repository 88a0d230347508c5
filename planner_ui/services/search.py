"""The search index (models.SearchDocument): one row per run and per template, rewritten when
what it is found by changes. A run is indexed when it is created (its task) and when it ends
(its plan, outputs and deliverable); a template on each save and share. The database keeps its
own full-text index of these rows in step (FTS5 triggers on SQLite, a GIN index on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence

from planner_ui.core.search import outputs_text, plan_text
from planner_ui.models import PlanTemplate, Run, SearchDocument, Step


def search_index_run(run: Run, steps: Sequence[Step] | None = None) -> None:
    """Write the run's row: its task and the plan it ran (or its latest), its steps' outputs
    and its deliverable. `steps` are the run's, for a caller that has them already."""
    plan = run.approved_plan or run.plan_versions.order_by("-number").first()
    if steps is None:
        steps = list(run.steps.order_by("id"))
    SearchDocument.objects.update_or_create(
        run=run,
        defaults={
            "owner_id": run.owner_id,
            "summary": plan_text(run.task, plan.plan if plan else None),
            "content": outputs_text((s.output for s in steps), run.result),
        },
    )


def template_summary(template: PlanTemplate) -> str:
    latest = template.versions.order_by("-number").first()
    head = "\n".join(t for t in (template.name, template.description) if t)
    if latest is None:
        return head
    return plan_text(f"{head}\n{latest.task}", latest.plan)


def search_index_template(template: PlanTemplate) -> None:
    """Write the template's row: its name, description, and latest version's task and plan."""
    SearchDocument.objects.update_or_create(
        template=template,
        defaults={
            "owner_id": template.owner_id,
            "shared": template.shared,
            "summary": template_summary(template),
        },
    )
