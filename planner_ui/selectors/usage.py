"""What a run's model calls add up to, per role and in total, for the run page."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Q, Sum

from planner_ui.core.routing import EXECUTOR, PLANNER, SYNTHESIZER
from planner_ui.models import Run
from planner_ui.selectors.routes import configured_routes, switched_routes

from .local_models import ready_local_routes
from .timeline import run_timing

# The order roles appear in: the plan's life from first call to last.
_ROLE_ORDER = (PLANNER, "researcher", "coder", "critic", "writer", SYNTHESIZER)


@dataclass
class RoleUsage:
    role: str
    models: list[str]
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: Decimal
    # Calls whose model has no price: the cost above leaves them out.
    unpriced_calls: int
    latency_ms: int


@dataclass
class TimeGap:
    reason: str  # core.timing: "waiting for approval", "paused" or "idle"
    seconds: float
    start: datetime
    end: datetime


@dataclass
class RunUsage:
    roles: list[RoleUsage] = field(default_factory=list)
    unpriced_calls: int = 0
    budget_tokens_used_pct: float | None = None
    budget_usd_used_pct: float | None = None
    routes: list[tuple[str, str, str]] = field(default_factory=list)
    # The run's time (core.timing): active, and from its first activity to its last, with the
    # gaps between (waiting for approval, paused, idle) listed apart.
    active_s: float = 0.0
    elapsed_s: float = 0.0
    gaps: list[TimeGap] = field(default_factory=list)


def run_usage(run: Run) -> RunUsage:
    rows = (
        run.calls.values("role")
        .annotate(
            calls=Count("id"),
            failed=Count("id", filter=~Q(error="")),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cache_read_tokens=Sum("cache_read_tokens"),
            cost=Sum("cost_usd"),
            unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
            latency=Sum("latency_ms"),
        )
        .order_by()
    )
    models: dict[str, set[str]] = {}
    for role, provider, model in run.calls.values_list("role", "provider", "model").distinct():
        models.setdefault(role, set()).add(f"{provider}:{model}")
    roles = [
        RoleUsage(
            role=row["role"],
            models=sorted(models.get(row["role"], ())),
            calls=row["calls"],
            failed_calls=row["failed"],
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cache_read_tokens=row["cache_read_tokens"] or 0,
            cost_usd=row["cost"] or Decimal(0),
            unpriced_calls=row["unpriced"],
            latency_ms=row["latency"] or 0,
        )
        for row in rows
    ]
    order = {role: n for n, role in enumerate(_ROLE_ORDER)}
    roles.sort(key=lambda r: (order.get(r.role, len(order)), r.role))
    budget = run.budget
    timing = run_timing(run)
    return RunUsage(
        roles=roles,
        unpriced_calls=sum(r.unpriced_calls for r in roles),
        budget_tokens_used_pct=_pct(run.tokens_in + run.tokens_out, budget.tokens),
        budget_usd_used_pct=_pct(run.cost_usd, budget.usd),
        routes=_routes(run),
        active_s=round(timing.active_s, 3),
        elapsed_s=round(timing.elapsed_s, 3),
        gaps=[TimeGap(g.reason, round(g.seconds, 3), g.start, g.end) for g in timing.gaps],
    )


def _pct(used: int | Decimal, limit: int | Decimal | None) -> float | None:
    if not limit:
        return None
    return round(float(used) * 100 / float(limit), 1)


def _routes(run: Run) -> list[tuple[str, str, str]]:
    """The run's routing table as (part, model, what an "auto" route switched to) rows, in the
    order a person reads it."""
    switched = switched_routes(run) if any("#auto" in r for r in run.routes.values()) else set()
    return [(part, label, "prompted" if label in switched else "") for part, label in _parts(run)]


def _parts(run: Run) -> list[tuple[str, str]]:
    names = {PLANNER: "Planner", EXECUTOR: "Executors", SYNTHESIZER: "Synthesizer"}
    rows = []
    for part in (PLANNER, EXECUTOR):
        if part in run.routes:
            rows.append((names[part], run.routes[part]))
    default = run.routes.get(EXECUTOR)
    for part, label in run.routes.items():
        # Only the roles that differ from the executors' default are worth a row of their own.
        if part.startswith(EXECUTOR + ":") and label != default:
            rows.append((part.split(":", 1)[1].capitalize(), label))
    if SYNTHESIZER in run.routes:
        rows.append((names[SYNTHESIZER], run.routes[SYNTHESIZER]))
    return rows


def model_suggestions() -> list[str]:
    """Routes to offer in the submission form: the priced models and the configured ones."""
    suggestions = {"offline"}
    suggestions.update(key for key in settings.AGENTSITE_PRICES if not key.endswith(":*"))
    suggestions.update(route for route in configured_routes().values() if route)
    suggestions.update(ready_local_routes())
    return sorted(suggestions)
