"""Every model call recorded, priced and added to its step's and run's totals; budgets enforced.

A provider wrapped by `metered()` reports here after each call and asks here before the next,
so the totals are the providers' own usage figures and a spent budget stops the run between
two calls, never in the middle of one.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F

from planner_ui.core import pricing
from planner_ui.core.errors import RunStopped
from planner_ui.core.pricing import Price
from planner_ui.core.routing import role_of
from planner_ui.models import ModelCall, Run, Step
from planner_ui.providers.base import Provider
from planner_ui.providers.metered import CallRecord, MeteredProvider

from .events import event_append
from .scheduler import run_fail


def price_table() -> dict[str, Price]:
    return pricing.parse_price_table(settings.AGENTSITE_PRICES)


def price_of(provider: str, *models: str) -> Price | None:
    table = price_table()
    for model in models:
        if model and (price := pricing.price_for(table, provider, model)) is not None:
            return price
    return None


def budget_spent(run: Run) -> str:
    """Why the run's budget is spent by its totals as loaded, or "" while some is left."""
    return run.budget.overrun(run.tokens_in + run.tokens_out, run.cost_usd)


def metered(run_id: int, step_id: str, provider: Provider) -> MeteredProvider:
    """The provider, with every call gated by the run's state and budget and then recorded."""

    def gate(purpose: str) -> None:
        run = Run.objects.get(pk=run_id)
        if run.is_finished:
            raise RunStopped(f"The run is {run.get_status_display()}, so no further model call.")
        reason = budget_spent(run)
        if reason:
            budget_stop(run_id, reason)
            raise RunStopped(f"The run stopped because {reason}.")

    def record(call: CallRecord) -> None:
        call_record(run_id, step_id, call, requested_model=provider.model)

    return MeteredProvider(provider, gate=gate, record=record)


def call_record(
    run_id: int, step_id: str, call: CallRecord, *, requested_model: str = ""
) -> ModelCall:
    """Store one call and add it to the totals; stop the run if that spent its budget."""
    usage = call.usage
    price = price_of(call.provider, call.model, requested_model)
    cost = pricing.call_cost(usage, price) if price is not None else None
    bumps = {
        "tokens_in": F("tokens_in") + usage.input_tokens,
        "tokens_out": F("tokens_out") + usage.output_tokens,
        "tokens_cache_read": F("tokens_cache_read") + usage.cache_read_tokens,
        "tokens_cache_write": F("tokens_cache_write") + usage.cache_write_tokens,
        "model_calls": F("model_calls") + 1,
        "cost_usd": F("cost_usd") + (cost or Decimal(0)),
    }
    with transaction.atomic():
        row = ModelCall.objects.create(
            run_id=run_id,
            step_id=step_id,
            purpose=call.purpose,
            role=role_of(call.purpose),
            provider=call.provider,
            model=call.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=cost,
            latency_ms=round(call.latency_s * 1000),
            stop_reason=call.stop_reason,
            error=call.error,
        )
        Run.objects.filter(pk=run_id).update(**bumps)
        if step_id:
            Step.objects.filter(run_id=run_id, step_id=step_id).update(**bumps)
        event_append(
            run_id,
            "model.call",
            {
                "role": row.role,
                "model": row.label,
                "input_tokens": row.input_tokens,
                "output_tokens": row.output_tokens,
                "cache_read_tokens": row.cache_read_tokens,
                "cost_usd": None if cost is None else str(cost),
                "latency_ms": row.latency_ms,
                "stop_reason": row.stop_reason,
                "error": row.error,
            },
            step_id=step_id,
        )
        run = Run.objects.get(pk=run_id)
    reason = budget_spent(run)
    if reason and not run.is_finished:
        budget_stop(run_id, reason)
    return row


def budget_stop(run_id: int, reason: str) -> None:
    """Fail the run with the budget as its reason; running steps stop at their next call."""
    run_fail(run_id, f"Stopped because {reason}. Completed steps keep their outputs.")
