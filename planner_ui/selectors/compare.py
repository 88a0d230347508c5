"""A run beside its single-agent baseline: what each spent and what each achieved."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from planner_ui.models import Run


@dataclass
class Figures:
    run: Run
    label: str
    status: str
    model_calls: int
    tokens_in: int
    tokens_out: int
    tokens_cached: int
    cost_usd: Decimal
    unpriced_calls: int
    wall_s: float | None
    steps: int

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


def figures(run: Run, label: str) -> Figures:
    return Figures(
        run=run,
        label=label,
        status=run.status,
        model_calls=run.model_calls,
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        tokens_cached=run.tokens_cache_read,
        cost_usd=run.cost_usd,
        unpriced_calls=run.calls.filter(cost_usd__isnull=True).count(),
        wall_s=wall_seconds(run),
        steps=run.steps.count(),
    )


def wall_seconds(run: Run) -> float | None:
    """Time the machines worked on it: planning plus execution, not the wait for approval."""
    if run.started_at is None or run.finished_at is None:
        return None
    execution = (run.finished_at - run.started_at).total_seconds()
    if run.baseline_of_id:
        return execution
    planned = run.events.filter(type="plan.version").order_by("seq").first()
    planning = (planned.created_at - run.created_at).total_seconds() if planned else 0.0
    return planning + execution


def comparison(run: Run) -> dict[str, Any]:
    """The original run and its latest baseline, with the ratios a person reads first."""
    original = run.baseline_of or run
    baseline = original.baselines.order_by("-created_at", "-id").first()
    plan = figures(original, "Planner–executor")
    agent = figures(baseline, "Single agent") if baseline else None
    ratios = {}
    if agent is not None:
        ratios = {
            "model_calls": _ratio(plan.model_calls, agent.model_calls),
            "tokens": _ratio(plan.tokens, agent.tokens),
            "cost_usd": _ratio(plan.cost_usd, agent.cost_usd),
            "wall_s": _ratio(plan.wall_s, agent.wall_s),
        }
    return {"original": original, "plan": plan, "agent": agent, "ratios": ratios}


def _ratio(a: float | Decimal | None, b: float | Decimal | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return round(float(a) / float(b), 2)
