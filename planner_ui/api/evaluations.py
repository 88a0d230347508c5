"""Suites and experiments over the API: a suite is its YAML or JSON text (as on its page), an
experiment is started from a stored suite or one given inline, and its results are the shape
`manage.py evaluate --json` prints and the page's JSON export gives."""

# No `from __future__ import annotations`: ninja reads the views' annotations at import.
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from ninja import Router, Schema, Status
from pydantic import Field

from planner_ui.core.bounds import RowId, TokenBudget, UsdBudget
from planner_ui.core.evaluation import (
    MAX_REPEAT,
    MAX_SUITE_CHARS,
    EvaluationError,
    arm_parse,
    suite_load,
)
from planner_ui.selectors.evaluations import (
    experiment_get_for_user,
    experiment_list_for_user,
    experiment_results,
    suite_get_for_user,
    suite_list_for_user,
)
from planner_ui.services.evaluations import (
    MAX_CONCURRENCY,
    experiment_cancel,
    experiment_create,
    experiment_pause,
    experiment_resume,
    suite_save,
)
from planner_ui.signed_in import SignedInRequest

router = Router(tags=["evaluations"])


class SuiteIn(Schema):
    content: str = Field(
        max_length=MAX_SUITE_CHARS, description="The suite as YAML or JSON (see the docs)."
    )


class SuiteOut(Schema):
    suite_id: int
    name: str
    content: str
    tasks: int
    updated_at: datetime


class ExperimentIn(Schema):
    suite_id: RowId | None = Field(None, description="One of your suites…")
    suite: str | None = Field(
        None, max_length=MAX_SUITE_CHARS, description="…or a suite's YAML/JSON text."
    )
    arms: list[str] = Field(
        default_factory=lambda: ["agent", "plan"],
        min_length=1,
        max_length=8,
        description='"plan", "agent" or "NAME=plan|agent[,PART=PROVIDER:MODEL...]"; the first '
        "is the one the others are compared with.",
    )
    repeat: int = Field(1, ge=1, le=MAX_REPEAT)
    concurrency: int = Field(2, ge=1, le=MAX_CONCURRENCY)
    budget_usd: UsdBudget | None = None
    budget_tokens: TokenBudget | None = None
    tool_policy: Literal["dry_run", "ask"] = "dry_run"
    judge: str = Field(
        "",
        max_length=200,
        description="Route (PROVIDER:MODEL) of the model judging the suite's judge checks; "
        "empty: the suite's, else the settings' judge, else their synthesizer's.",
    )


class ExperimentSummary(Schema):
    experiment_id: int
    suite: str
    arms: list[str]
    status: str
    created_at: datetime


def _suite_out(row: Any) -> dict[str, Any]:
    return {
        "suite_id": row.pk,
        "name": row.name,
        "content": row.content,
        "tasks": len(suite_load(row.content).tasks),
        "updated_at": row.updated_at,
    }


@router.get("/suites", response=list[SuiteOut], summary="Your suites")
def suites(request: SignedInRequest) -> list[dict[str, Any]]:
    return [_suite_out(row) for row in suite_list_for_user(request.user)]


@router.post("/suites", response={201: SuiteOut}, summary="Store a suite")
def suite_create(request: SignedInRequest, payload: SuiteIn) -> Status[dict[str, Any]]:
    return Status(201, _suite_out(suite_save(request.user, payload.content)))


@router.get("/suites/{suite_id}", response=SuiteOut, summary="A suite")
def suite_detail(request: SignedInRequest, suite_id: int) -> dict[str, Any]:
    return _suite_out(suite_get_for_user(request.user, suite_id))


@router.put("/suites/{suite_id}", response=SuiteOut, summary="Replace a suite's text")
def suite_update(request: SignedInRequest, suite_id: int, payload: SuiteIn) -> dict[str, Any]:
    row = suite_get_for_user(request.user, suite_id)
    return _suite_out(suite_save(request.user, payload.content, row))


@router.post("/experiments", response={201: dict[str, Any]}, summary="Start an experiment")
def experiment_start(request: SignedInRequest, payload: ExperimentIn) -> Status[dict[str, Any]]:
    if (payload.suite_id is None) == (payload.suite is None):
        raise EvaluationError("Give either suite_id or suite.")
    row = suite_get_for_user(request.user, payload.suite_id) if payload.suite_id else None
    suite = suite_load(row.content if row else payload.suite or "")
    experiment = experiment_create(
        request.user,
        suite,
        [arm_parse(text) for text in payload.arms],
        repeat=payload.repeat,
        concurrency=payload.concurrency,
        budget_usd=Decimal(payload.budget_usd) if payload.budget_usd is not None else None,
        budget_tokens=payload.budget_tokens,
        tool_policy=payload.tool_policy,
        suite_row=row,
        judge=payload.judge,
    )
    return Status(201, experiment_results(experiment).as_dict())


@router.get("/experiments", response=list[ExperimentSummary], summary="Your experiments")
def experiments(request: SignedInRequest) -> list[dict[str, Any]]:
    return [
        {
            "experiment_id": e.pk,
            "suite": e.suite_name,
            "arms": [arm["name"] for arm in e.arms],
            "status": e.status,
            "created_at": e.created_at,
        }
        for e in experiment_list_for_user(request.user)[:200]
    ]


@router.get(
    "/experiments/{experiment_id}",
    response=dict[str, Any],
    summary="An experiment's results: figures per arm with ratios, every slot's run",
)
def experiment_detail(request: SignedInRequest, experiment_id: int) -> dict[str, Any]:
    return experiment_results(experiment_get_for_user(request.user, experiment_id)).as_dict()


@router.post(
    "/experiments/{experiment_id}/cancel",
    response=dict[str, Any],
    summary="Start nothing more and cancel the runs still going",
)
def experiment_stop(request: SignedInRequest, experiment_id: int) -> dict[str, Any]:
    experiment = experiment_get_for_user(request.user, experiment_id)
    return experiment_results(experiment_cancel(experiment.pk, request.user)).as_dict()


@router.post(
    "/experiments/{experiment_id}/pause",
    response=dict[str, Any],
    summary="Start no new run, and pause the runs going",
)
def experiment_pause_api(request: SignedInRequest, experiment_id: int) -> dict[str, Any]:
    experiment = experiment_get_for_user(request.user, experiment_id)
    return experiment_results(experiment_pause(experiment.pk, request.user)).as_dict()


@router.post(
    "/experiments/{experiment_id}/resume",
    response=dict[str, Any],
    summary="Go on after a pause",
)
def experiment_resume_api(request: SignedInRequest, experiment_id: int) -> dict[str, Any]:
    experiment = experiment_get_for_user(request.user, experiment_id)
    return experiment_results(experiment_resume(experiment.pk, request.user)).as_dict()
