"""A run's estimate (core.estimate) from its steps and routes, beside what the steps used."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Q
from django.db.models.functions import Length

from planner_ui.core import estimate as core_estimate
from planner_ui.core.estimate import PlanEstimate, PricedRoute, StepEstimate, StepShape
from planner_ui.core.plan import SYNTHESIZER_ROLE
from planner_ui.core.pricing import price_for
from planner_ui.core.routing import RouteError, route_for
from planner_ui.core.status import RunStatus
from planner_ui.models import Run, Step
from planner_ui.selectors.prices import price_table

# Before approval the plan can still change; after it, what is estimated is what runs.
_BEFORE_EXECUTION = {RunStatus.PLANNING, RunStatus.AWAITING_PLAN_APPROVAL}


@dataclass
class StepActual:
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal
    # Calls whose model has no price: the cost above leaves them out.
    unpriced_calls: int


@dataclass
class StepComparison:
    step_id: str
    title: str
    status: str
    estimate: StepEstimate
    # None until the step has started.
    actual: StepActual | None
    critical: bool


@dataclass
class RunEstimate:
    plan: PlanEstimate | None = None
    steps: list[StepComparison] = field(default_factory=list)
    by_step: dict[str, StepEstimate] = field(default_factory=dict)
    # Whether the plan was approved, so actual figures belong beside the estimate.
    executing: bool = False
    # What the steps have used so far; the planner's calls are not steps and not included.
    actual_calls: int = 0
    actual_tokens_in: int = 0
    actual_tokens_out: int = 0
    actual_cost_usd: Decimal = Decimal(0)
    actual_unpriced_calls: int = 0


def step_shapes(run: Run, steps: Sequence[Step]) -> list[StepShape]:
    """The run's Step rows as the estimate reads them; the synthesizer is told the task."""
    return [
        _shape(run, s.step_id, s.role, len(s.instruction), s.tools, s.depends_on) for s in steps
    ]


def _shape(
    run: Run,
    step_id: str,
    role: str,
    instruction_chars: int,
    tools: Sequence[str],
    depends_on: Sequence[str],
) -> StepShape:
    return StepShape(
        id=step_id,
        role=role,
        instruction_chars=len(run.task) if role == SYNTHESIZER_ROLE else instruction_chars,
        tools=tuple(tools),
        depends_on=tuple(depends_on),
    )


def plan_estimate(run: Run) -> PlanEstimate | None:
    """The estimate of the run's current steps alone, without what they used so far: what a
    step's card says of itself. Five columns of the steps, not their outputs, and not the
    run's calls: refreshing a few cards of a 1,000-step run read 5 MB of outputs for this."""
    rows = run.steps.values_list("step_id", "role", Length("instruction"), "tools", "depends_on")
    shapes = [_shape(run, *row) for row in rows]
    return core_estimate.estimate_plan(shapes, _route_lookup(run)) if shapes else None


def critical_step_ids(steps: Sequence[Step]) -> list[str]:
    """The critical path of the run's steps, in order; the graph needs no prices for it."""
    shapes = [StepShape(s.step_id, s.role, 0, tuple(s.tools), tuple(s.depends_on)) for s in steps]
    return core_estimate.critical_path(shapes)


def run_plan_estimate(run: Run, steps: Sequence[Step]) -> RunEstimate:
    """The estimate of executing the run's current steps (all of them, read already), and
    whether they execute, without what each used: what the run page's folded estimate shows
    (its table of actual figures comes when it is opened, run_estimate)."""
    if not steps:
        return RunEstimate()
    plan = core_estimate.estimate_plan(step_shapes(run, steps), _route_lookup(run))
    return RunEstimate(
        plan=plan,
        by_step={e.step_id: e for e in plan.steps},
        executing=run.status not in _BEFORE_EXECUTION,
    )


def run_estimate(run: Run, steps: Sequence[Step] | None = None) -> RunEstimate:
    """The estimate of executing the run's current steps, and each step's actual use so far;
    `steps` are all the run's, for a caller that has read them already."""
    steps = list(run.steps.all()) if steps is None else steps
    estimate = run_plan_estimate(run, steps)
    plan = estimate.plan
    if plan is None:
        return estimate
    unpriced = dict(
        run.calls.exclude(step_id="")
        .values_list("step_id")
        .annotate(n=Count("id", filter=Q(cost_usd__isnull=True)))
        .order_by()
    )
    critical = set(plan.critical_path)
    rows = [
        StepComparison(
            step_id=s.step_id,
            title=s.title,
            status=s.status,
            estimate=plan.step(s.step_id),
            actual=_actual(s, unpriced.get(s.step_id, 0)),
            critical=s.step_id in critical,
        )
        for s in steps
    ]
    return replace(
        estimate,
        steps=rows,
        actual_calls=sum(s.model_calls for s in steps),
        actual_tokens_in=sum(s.tokens_in for s in steps),
        actual_tokens_out=sum(s.tokens_out for s in steps),
        actual_cost_usd=sum((s.cost_usd for s in steps), Decimal(0)),
        actual_unpriced_calls=sum(unpriced.values()),
    )


def _actual(step: Step, unpriced_calls: int) -> StepActual | None:
    if step.started_at is None and not step.model_calls:
        return None
    return StepActual(
        calls=step.model_calls,
        tokens_in=step.tokens_in,
        tokens_out=step.tokens_out,
        cost_usd=step.cost_usd,
        unpriced_calls=unpriced_calls,
    )


def _route_lookup(run: Run) -> core_estimate.RouteLookup:
    table = price_table()

    def lookup(purpose: str) -> PricedRoute:
        try:
            route = route_for(run.routes, purpose, settings.AGENTSITE_PROVIDER)
        except RouteError:
            # A run from before routes were stored: its model, and so its price, is unknown.
            return PricedRoute("", None)
        return PricedRoute(route.label, price_for(table, route.provider, route.model))

    return lookup
