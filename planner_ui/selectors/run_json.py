"""A run as JSON: one shape for `runtask --json`, the API and anything else that reports a run."""

from __future__ import annotations

from typing import Any

from planner_ui.core.step_record import StepSummary
from planner_ui.models import Run

from .step_record import iso, step_record

SUMMARY_FIELDS = set(StepSummary.model_fields)


def run_json(run: Run) -> dict[str, Any]:
    current = run.plan_versions.order_by("-number").values_list("number", flat=True).first()
    return {
        "run_id": run.pk,
        "task": run.task,
        "status": run.status,
        # Once finished: "succeeded_with_warnings" says something was lost, the reason what.
        "outcome": run.outcome or None,
        "outcome_reason": run.outcome_reason,
        "created_at": iso(run.created_at),
        "paused": run.paused_at is not None,
        "plan_version": current,
        "forked_from": run.forked_from_id,
        "error": run.error,
        "planner_model": run.planner_model,
        "executor_model": run.executor_model,
        "routes": run.routes,
        "allowed_hosts": run.allowed_hosts,
        # Each step's summary (core.step_record): the report adds the rest of the record.
        "steps": [step_record(s).model_dump(include=SUMMARY_FIELDS) for s in run.steps.all()],
        "result": run.result,
        # One sentence per loss when the run succeeded with warnings.
        "warnings": run.warnings,
        "tokens": {
            "input": run.tokens_in,
            "output": run.tokens_out,
            "cache_read": run.tokens_cache_read,
            "cache_write": run.tokens_cache_write,
        },
        "model_calls": run.model_calls,
        "cost_usd": str(run.cost_usd),
        "template": _template(run),
        "started_from": run.started_from_id,
        # The past plans the planner was given as examples (selectors.search).
        "plan_examples": run.plan_examples,
    }


def _template(run: Run) -> dict[str, Any] | None:
    """The template and version a run was filled from, its values and what started it; the
    id, name and version are gone once the template was deleted (its values stay)."""
    if not run.template_trigger and run.template_version_id is None:
        return None
    version = run.template_version
    return {
        "id": version.template_id if version else None,
        "name": version.template.name if version else "",
        "version": version.number if version else None,
        "values": run.template_values,
        "trigger": run.template_trigger,
    }
