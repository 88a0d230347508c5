"""Runs over the API: create with the form's options, list, read, cancel, pause, resume, retry
a step, fork, and read the events, usage and report. The same services and selectors as the
pages, so the two cannot drift apart."""

# No `from __future__ import annotations`: ninja's pagination builds its query model from the
# view's annotations outside this module, where a string like "OutcomeFilter" means nothing.
import dataclasses
from datetime import date
from typing import Annotated, Any, Literal

from ninja import Query, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate
from pydantic import Field

from planner_ui.core.bounds import Count
from planner_ui.core.outcome import RunOutcome
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.selectors.report import run_report
from planner_ui.selectors.run_json import run_json
from planner_ui.selectors.runs import (
    RunFilters,
    events_after,
    run_get_for_user,
    run_list_for_user,
)
from planner_ui.selectors.usage import run_usage
from planner_ui.services.retries import run_fork, step_retry
from planner_ui.services.runs import run_cancel, run_create, run_pause, run_resume
from planner_ui.signed_in import SignedInRequest

from .schemas import EventsOut, RunOut, RunSummary, StepRetryIn

router = Router(tags=["runs"])
MAX_EVENTS = 1000


@router.post("/runs", response={201: RunOut}, summary="Submit a task")
def create(request: SignedInRequest, payload: RunOptions) -> Status[dict[str, Any]]:
    run = run_create(owner=request.user, options=payload)
    return Status(201, run_json(run))


# What the history's filter offers: an outcome, or the runs not finished yet.
OutcomeFilter = Annotated[
    RunOutcome | Literal["unfinished"] | None,
    Field(description="Only the runs that ended so, or those not finished yet."),
]


@router.get("/runs", response=list[RunSummary], summary="Your runs, newest first")
@paginate(LimitOffsetPagination)
def runs(
    request: SignedInRequest,
    outcome: OutcomeFilter = None,
    q: Annotated[
        str,
        Field(
            max_length=200,
            description="Words of the task, a step's output or the deliverable, each of them "
            "(full-text; the last word also as the start of a longer one).",
        ),
    ] = "",
    status: Annotated[RunStatus | None, Field(description="Only the runs in this status.")] = None,
    template: Annotated[
        int | None, Field(description="Only the runs from any version of this template.")
    ] = None,
    model: Annotated[
        str, Field(max_length=200, description="Only the runs planned or executed by this model.")
    ] = "",
    since: Annotated[date | None, Field(description="Created on or after this day (UTC).")] = None,
    until: Annotated[date | None, Field(description="Created on or before this day (UTC).")] = None,
) -> Any:
    filters = RunFilters(
        q=q,
        outcome=outcome or "",
        status=status or "",
        template=template,
        model=model,
        since=since,
        until=until,
    )
    return [
        {
            "run_id": run.pk,
            "task": run.task,
            "status": run.status,
            "outcome": run.outcome or None,
            "outcome_reason": run.outcome_reason,
            "created_at": run.created_at,
            "cost_usd": str(run.cost_usd),
            "template_id": run.template_version.template_id if run.template_version else None,
        }
        for run in run_list_for_user(request.user, filters=filters).select_related(
            "template_version"
        )
    ]


@router.get("/runs/{run_id}", response=RunOut, summary="A run, its steps and totals")
def detail(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    return run_json(run_get_for_user(request.user, run_id))


@router.post("/runs/{run_id}/cancel", response=RunOut, summary="Cancel a run for good")
def cancel(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return run_json(run_cancel(run.pk, request.user))


@router.post("/runs/{run_id}/pause", response=RunOut, summary="Start no new step")
def pause(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return run_json(run_pause(run.pk, request.user))


@router.post("/runs/{run_id}/resume", response=RunOut, summary="Go on after a pause")
def resume(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return run_json(run_resume(run.pk, request.user))


@router.post(
    "/runs/{run_id}/steps/{step_id}/retry", response=RunOut, summary="Run a finished step again"
)
def retry(request: SignedInRequest, run_id: int, step_id: str, payload: StepRetryIn) -> Any:
    run = run_get_for_user(request.user, run_id)
    run = step_retry(
        run_id=run.pk,
        step_id=step_id,
        user=request.user,
        instruction=payload.instruction,
        downstream=payload.downstream,
    )
    return run_json(run)


@router.post(
    "/runs/{run_id}/steps/{step_id}/fork",
    response={201: RunOut},
    summary="A new run reusing the steps before this one",
)
def fork(request: SignedInRequest, run_id: int, step_id: str) -> Status[dict[str, Any]]:
    run = run_get_for_user(request.user, run_id)
    return Status(201, run_json(run_fork(run_id=run.pk, step_id=step_id, user=request.user)))


class EventsQuery(Schema):
    after: Count = Field(0, description="Events with a sequence number above this one.")
    limit: int = Field(500, ge=1, le=MAX_EVENTS)


@router.get("/runs/{run_id}/events", response=EventsOut, summary="The run's log, in order")
def events(request: SignedInRequest, run_id: int, query: Query[EventsQuery]) -> dict[str, Any]:
    """Every event after `after`, oldest first; live events come over the WebSocket
    /ws/runs/{run_id}/?after=<seq>, in the same shape."""
    run = run_get_for_user(request.user, run_id)
    found = events_after(run.pk, query.after, query.limit)
    return {"events": found, "last_seq": found[-1]["seq"] if found else query.after}


@router.get("/runs/{run_id}/usage", response=dict[str, Any], summary="Calls, tokens and cost")
def usage(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    # Decimals go out as strings, as everywhere in the API (ninja's encoder is Django's).
    return dataclasses.asdict(run_usage(run))


@router.get("/runs/{run_id}/report", response=dict[str, Any], summary="The whole run as JSON")
def report(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    return run_report(run_get_for_user(request.user, run_id))
