"""A run's plan over the API: read a version, edit it against the version you read (a stale
edit is a 409 with the current plan), import one, see what changed, approve an exact version."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404
from ninja import Router, Status

from planner_ui.core.diff import plan_diff
from planner_ui.core.plan import Plan
from planner_ui.models import PlanVersion, Run
from planner_ui.selectors.run_json import run_json
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.services.plans import plan_edit, plan_import
from planner_ui.services.runs import run_approve_plan
from planner_ui.signed_in import SignedInRequest

from .schemas import ApproveIn, DiffOut, PlanEditIn, PlanImportIn, PlanVersionOut, RunOut, edit_of

router = Router(tags=["plans"])


def version_out(run: Run, version: PlanVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "author": version.author,
        "note": version.note,
        "created_at": version.created_at,
        "approved": run.approved_plan_id == version.pk,
        "plan": version.plan,
    }


def _version(run: Run, number: int | None) -> PlanVersion:
    versions = run.plan_versions.order_by("-number")
    version = versions.first() if number is None else versions.filter(number=number).first()
    if version is None:
        raise Http404(f"Run {run.pk} has no plan version {number or ''}".strip() + ".")
    return version


@router.get("/runs/{run_id}/plan", response=PlanVersionOut, summary="The current plan")
def current(request: SignedInRequest, run_id: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return version_out(run, _version(run, None))


@router.get(
    "/runs/{run_id}/plan/versions/{number}", response=PlanVersionOut, summary="One plan version"
)
def version(request: SignedInRequest, run_id: int, number: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return version_out(run, _version(run, number))


@router.post(
    "/runs/{run_id}/plan/edits",
    response={201: PlanVersionOut},
    summary="Apply one edit; 409 if the plan changed since base_version",
)
def edit(request: SignedInRequest, run_id: int, payload: PlanEditIn) -> Status[dict[str, Any]]:
    run = run_get_for_user(request.user, run_id)
    saved = plan_edit(run_id=run.pk, base_version=payload.base_version, edit=edit_of(payload.edit))
    return Status(201, version_out(run, saved))


@router.post(
    "/runs/{run_id}/plan/import", response={201: PlanVersionOut}, summary="Replace the plan"
)
def import_(request: SignedInRequest, run_id: int, payload: PlanImportIn) -> Status[dict[str, Any]]:
    run = run_get_for_user(request.user, run_id)
    text = json.dumps(payload.plan)
    saved = plan_import(run_id=run.pk, base_version=payload.base_version, text=text)
    return Status(201, version_out(run, saved))


@router.get("/runs/{run_id}/plan/diff", response=DiffOut, summary="From one version to another")
def diff(request: SignedInRequest, run_id: int, base: int, other: int) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    old, new = _version(run, base), _version(run, other)
    found = plan_diff(Plan.model_validate(old.plan), Plan.model_validate(new.plan))
    return {
        "added": list(found.added),
        "removed": list(found.removed),
        "changed": {
            step_id: {c.field: {"old": c.old, "new": c.new} for c in changes}
            for step_id, changes in found.changed
        },
        "edges_added": [list(e) for e in found.edges_added],
        "edges_removed": [list(e) for e in found.edges_removed],
        "goal_changed": list(found.goal_changed) if found.goal_changed else None,
    }


@router.post(
    "/runs/{run_id}/plan/approve",
    response=RunOut,
    summary="Run exactly this version; 409 if it is not the current one",
)
def approve(request: SignedInRequest, run_id: int, payload: ApproveIn) -> dict[str, Any]:
    run = run_get_for_user(request.user, run_id)
    return run_json(run_approve_plan(run.pk, payload.version))
