"""A run beside another: its single-agent baseline, or a fork of it. What each spent and what
each achieved, side by side."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from planner_ui.models import Run

from .timeline import run_timing


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
    # Active time (core.timing): what the machines worked, not the waits for a person, pauses
    # or the idle time before a retry.
    active_s: float | None
    steps: int
    reused: int  # steps a fork took over from its original, not run again

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
        active_s=active_seconds(run),
        steps=run.steps.count(),
        reused=run.steps.filter(reused_from__isnull=False).count(),
    )


def active_seconds(run: Run) -> float | None:
    """Time the machines worked on a finished run: planning plus execution, without the gaps
    (core.timing); None until it has finished."""
    if run.started_at is None or run.finished_at is None:
        return None
    return run_timing(run).active_s


def comparison(run: Run) -> dict[str, Any]:
    """The original run and its latest baseline, with the ratios a person reads first."""
    original = run.baseline_of or run
    baseline = original.baselines.order_by("-created_at", "-id").first()
    return _side_by_side(
        original,
        figures(original, "Planner–executor"),
        figures(baseline, "Single agent") if baseline else None,
        title="Did the plan pay for itself?",
        ratio_heading="Plan ÷ agent",
        hint="A ratio above 1 means the planner–executor run used more than the single agent.",
    )


def runs_comparison(left: Run, right: Run) -> dict[str, Any]:
    """Two runs of a person's, e.g. a run and its fork: the fork counts only what it spent
    itself, since the steps it reused cost it nothing."""
    return _side_by_side(
        left,
        figures(left, _label(left)),
        figures(right, _label(right)),
        title=f"Run {left.pk} beside run {right.pk}",
        ratio_heading=f"Run {left.pk} ÷ run {right.pk}",
        hint=f"A ratio above 1 means run {left.pk} used more than run {right.pk}.",
    )


def _label(run: Run) -> str:
    if run.forked_from_id:
        return f"Fork of run {run.forked_from_id} from '{run.fork_step}'"
    if run.baseline_of_id:
        return "Single agent"
    return "Planner–executor"


def _side_by_side(
    original: Run,
    left: Figures,
    right: Figures | None,
    *,
    title: str,
    ratio_heading: str,
    hint: str,
) -> dict[str, Any]:
    ratios = {}
    if right is not None:
        ratios = {
            "model_calls": _ratio(left.model_calls, right.model_calls),
            "tokens": _ratio(left.tokens, right.tokens),
            "cost_usd": _ratio(left.cost_usd, right.cost_usd),
            "active_s": _ratio(left.active_s, right.active_s),
        }
    return {
        "original": original,
        "left": left,
        "right": right,
        "ratios": ratios,
        "title": title,
        "ratio_heading": ratio_heading,
        "hint": hint,
    }


def _ratio(a: float | Decimal | None, b: float | Decimal | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return round(float(a) / float(b), 2)
