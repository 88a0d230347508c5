"""Every model call recorded, priced and added to its step's and run's totals; budgets enforced.

A provider wrapped by `metered()` reports here after each call and asks here before the next,
so the totals are the providers' own usage figures and a spent budget stops the run between
two calls, never in the middle of one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from planner_ui.core import pricing
from planner_ui.core.errors import RunStopped
from planner_ui.core.events import EventType
from planner_ui.core.messages import ModelRequest, Usage
from planner_ui.core.pricing import Budget, Price
from planner_ui.core.routing import role_of
from planner_ui.core.status import TERMINAL_RUN_STATUSES, StepStatus
from planner_ui.models import ModelCall, Run, Step
from planner_ui.providers.base import Provider
from planner_ui.providers.metered import CallRecord, MeteredProvider
from planner_ui.selectors.prices import price_table
from planner_ui.stores import sql

from .event_buffer import Event, EventBuffer
from .events import events_append
from .scheduler import run_fail


def price_of(provider: str, *models: str) -> Price | None:
    table = price_table()
    for model in models:
        if model and (price := pricing.price_for(table, provider, model)) is not None:
            return price
    return None


def metered(
    run: Run, step_id: str, provider: Provider, *, events: EventBuffer | None = None
) -> MeteredProvider:
    """The provider, with every call gated by the run's state and budget and then recorded.

    The budget's limits are read once, with `run`; what the run has spent and whether it is
    still running are read before every call, as other steps spend and a person may cancel.
    Under a budget, a call asks for no longer an answer than the budget leaves, after what the
    run's other calls in flight may still take (_held). A step's provider holds each call's
    event in the step's buffer, `events` (call_record)."""
    budget, run_id = run.budget, run.pk

    def gate(request: ModelRequest) -> int | None:
        if not budget.limited:
            ((status, _tokens_in, _tokens_out, _cost),) = sql.rows(_SPENT, [run_id])
            _running_or_stop(status)
            return None
        sent = provider.input_tokens(request)
        price = price_of(provider.name, provider.model)
        counted = told = False
        while True:
            held = _held(run_id, step_id, budget, sent, price, request.max_tokens)
            if isinstance(held, _Wait):
                if not told:  # said once: the step runs and calls nothing meanwhile
                    _tell_waiting(run_id, step_id, held, events)
                    told = True
                time.sleep(HELD_POLL_S)
                continue
            # Near the budget's end, the request's size counts: the vendor's own count of it.
            near_end = isinstance(held, str) or (held is not None and held < request.max_tokens)
            if near_end and not counted:
                counted = True
                exact = provider.input_tokens(request, counted=True)
                if exact != sent:
                    sent = exact
                    continue
            break
        if isinstance(held, str):
            budget_stop(run_id, held, events=events)
            raise RunStopped(f"The run stopped because {held}.")
        return held

    def record(call: CallRecord) -> None:
        reason = call_record(
            run_id, step_id, call, requested_model=provider.model, budget=budget, events=events
        )
        if call.cut_by_budget:
            # The step must not build on the answer, nor fail for it (the run may have stopped
            # already, for another step's call).
            raise RunStopped(f"The run stopped because {reason or 'its budget is spent'}.")

    return MeteredProvider(provider, gate=gate, record=record)


def _tell_waiting(run_id: int, step_id: str, held: _Wait, events: EventBuffer | None) -> None:
    payload = {"calls": held.calls, "held_tokens": held.tokens, "held_usd": str(held.usd)}
    if events is None:
        events_append(run_id, [(EventType.BUDGET_WAITING, payload, step_id)])
    else:
        events.append(run_id, EventType.BUDGET_WAITING, payload, step_id=step_id)


# How often a call that waits for the run's calls in flight asks again.
HELD_POLL_S = 0.2


@dataclass(frozen=True)
class _Wait:
    """_held's answer when the call must wait for the run's other calls in flight: how many
    there are, and what they hold."""

    calls: int
    tokens: int
    usd: Decimal


def _held(
    run_id: int, step_id: str, budget: Budget, sent: int, price: Price | None, wanted: int
) -> int | None | str | _Wait:
    """Under a budget, what a call sending about `sent` tokens and asking for an answer of up
    to `wanted` may take: the answer's room (held for the step until its call is recorded);
    None where nothing limits it; a _Wait while the run's other calls in flight may still take
    what this one needs; or why the run stops.

    The run's row is locked first (docs/write-protocol.md, rule 3): two calls never hold the
    same remainder, and a call's record, which writes that row, is counted whole or not at all.
    A step that died with its call in flight leaves its hold until it is taken over or ends;
    only running steps' holds count."""
    with transaction.atomic():
        # As a record's UPDATE of the row locks it: a step's finish (KEY SHARE) goes by.
        ((status, tokens_in, tokens_out, cost),) = sql.rows(
            _SPENT + sql.locking("no key update"), [run_id]
        )
        _running_or_stop(status)
        used, spent = tokens_in + tokens_out, sql.decimal_of(cost)
        reason = budget.overrun(used, spent)
        if reason:
            return reason
        ((calls, held_tokens, held_usd),) = sql.rows(_HELD, [run_id, StepStatus.RUNNING, step_id])
        # PostgreSQL sums a bigint column as a numeric.
        held_tokens, held_usd = int(held_tokens), sql.decimal_of(held_usd)
        room = budget.answer_room(used + held_tokens, spent + held_usd, sent, price)
        if room is None:
            return None
        if room.tokens < wanted and (held_tokens or held_usd):
            # The others may answer shorter than they could: see what they took.
            return _Wait(int(calls), held_tokens, held_usd)
        if room.tokens <= 0:
            return room.none_left(sent)
        answer = min(wanted, room.tokens)
        if step_id:
            usd = pricing.call_cost(Usage(sent, answer), price) if price else Decimal(0)
            sql.rows(_HOLD, [sent + answer, sql.amount(usd), run_id, step_id])
        return answer


def _running_or_stop(status: str) -> None:
    if status in TERMINAL_RUN_STATUSES:
        label = Run(status=status).get_status_display()
        raise RunStopped(f"The run is {label}, so no further model call.")


_SPENT = f"SELECT status, tokens_in, tokens_out, cost_usd FROM {sql.table(Run)} WHERE id = %s"
_HELD = (
    "SELECT COALESCE(SUM(CASE WHEN budget_held_tokens > 0 OR budget_held_usd > 0 THEN 1 END), 0), "
    "COALESCE(SUM(budget_held_tokens), 0), COALESCE(SUM(budget_held_usd), 0) "
    f"FROM {sql.table(Step)} WHERE run_id = %s AND status = %s AND step_id <> %s"
)
_HOLD = (
    f"UPDATE {sql.table(Step)} SET budget_held_tokens = %s, budget_held_usd = %s "
    "WHERE run_id = %s AND step_id = %s"
)


def call_record(
    run_id: int,
    step_id: str,
    call: CallRecord,
    *,
    requested_model: str = "",
    budget: Budget | None = None,
    events: EventBuffer | None = None,
) -> str:
    """Store one call and add it to the totals; stop the run if that spent its budget, or if
    the call's answer was cut off where the budget held it (CallRecord.capped_at), and say
    why ("" if it did not stop it).

    With a step's buffer, `events`, the call's event is held there for the step's next event;
    without one (the planner's calls) it is stored at once."""
    usage = call.usage
    price = price_of(call.provider, call.model, requested_model)
    cost = pricing.call_cost(usage, price) if price is not None else None
    row = ModelCall(
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
        tool_mode=call.tool_mode,
    )
    # What the call adds to its step's and run's totals, in _ADD_USAGE's order.
    usage_params = [
        row.input_tokens,
        row.output_tokens,
        row.cache_read_tokens,
        row.cache_write_tokens,
        sql.amount(cost or Decimal(0)),
    ]
    calls = [sql.insert_select(row)]
    if step_id:
        calls.append((_ADD_TO_STEP, [*usage_params, run_id, step_id]))
    # The call and its step's and run's totals: one statement on PostgreSQL, with no
    # transaction around it (a model call's record was five round trips there, 4.8 ms at the
    # median and 13 at p90 in the benchmark's layered DAG); one transaction elsewhere.
    status, tokens_in, tokens_out, spent = sql.update_with(
        _ADD_TO_RUN, [*usage_params, run_id], along=calls
    )
    event: list[Event] = [
        (
            EventType.MODEL_CALL,
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
            step_id,
        )
    ]
    if events is None:
        events_append(run_id, event)
    else:
        events.hold(run_id, event)  # stored and published with the step's next event
    spent_usd = sql.decimal_of(spent)
    if budget is None:
        budget = Run.objects.get(pk=run_id).budget
    reason = budget.overrun(tokens_in + tokens_out, spent_usd)
    if call.cut_by_budget:
        assert call.capped_at is not None
        # Said as it happened, though the cut answer most often spends the budget exactly.
        room = budget.answer_room(tokens_in + tokens_out, spent_usd, 0, price)
        reason = room.cut_off(call.capped_at) if room is not None else reason
    if not reason or status in TERMINAL_RUN_STATUSES:
        return ""
    budget_stop(run_id, reason, events=events)
    return reason


_ADD_USAGE = (
    "tokens_in = tokens_in + %s, tokens_out = tokens_out + %s, "
    "tokens_cache_read = tokens_cache_read + %s, tokens_cache_write = tokens_cache_write + %s, "
    "model_calls = model_calls + 1, cost_usd = cost_usd + CAST(%s AS NUMERIC)"
)
# A step's call, recorded, holds nothing of the budget any more (_held).
_ADD_TO_STEP = (
    f"UPDATE {sql.table(Step)} SET {_ADD_USAGE}, budget_held_tokens = 0, budget_held_usd = 0"
    "{source} WHERE run_id = %s AND step_id = %s"
)
_ADD_TO_RUN = (
    f"UPDATE {sql.table(Run)} SET {_ADD_USAGE} "
    "WHERE id = %s RETURNING status, tokens_in, tokens_out, cost_usd"
)


# How the error of a run its budget stopped begins (Budget's reasons begin "its budget").
BUDGET_STOPPED = "Stopped because its budget "


def budget_stop(run_id: int, reason: str, *, events: EventBuffer | None = None) -> None:
    """Fail the run with the budget as its reason; running steps stop at their next call.
    `events`: the buffer of the step whose call spent it, whose held events go first."""
    assert f"Stopped because {reason}".startswith(BUDGET_STOPPED), reason
    run_fail(
        run_id, f"Stopped because {reason}. Completed steps keep their outputs.", events=events
    )
