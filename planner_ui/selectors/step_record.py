"""A step's row read into the one step shape, core.step_record.StepRecord."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from planner_ui.core.step_record import StepRecord, Tokens
from planner_ui.models import Step


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def step_record(step: Step) -> StepRecord:
    return StepRecord(**record_fields(step))


def record_fields(step: Step) -> dict[str, Any]:
    """The fields of `step`'s record, for a shape made from it (views.step_cards)."""
    return {
        "id": step.step_id,
        "role": step.role,
        "status": step.status,
        "started_at": iso(step.started_at),
        "finished_at": iso(step.finished_at),
        "output": step.output,
        "error": step.error,
        "model_calls": step.model_calls,
        "tokens": Tokens(input=step.tokens_in, output=step.tokens_out),
        "cost_usd": str(step.cost_usd),
        "title": step.title,
        "instruction": step.instruction,
        "tools": list(step.tools),
        "depends_on": list(step.depends_on),
        "attempts": step.attempts,
        "worker": step.worker,
        "model": step.model,
    }
