"""Approval requests over the API: what waits for you across runs, and your decision on one,
recorded per call with your name like a decision made on the pages."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404
from ninja import Query, Router, Schema
from pydantic import Field

from planner_ui.core.bounds import RowId
from planner_ui.models import Approval
from planner_ui.selectors.approvals import approval_get_for_user, inbox_for_user
from planner_ui.services.approvals import approval_decide
from planner_ui.signed_in import SignedInRequest

from .schemas import ApprovalOut, DecisionIn

router = Router(tags=["approvals"])


def approval_out(approval: Approval) -> dict[str, Any]:
    return {
        "id": approval.pk,
        "run_id": approval.run_id,
        "step_id": approval.step_id,
        "kind": approval.kind,
        "tool": approval.tool,
        "effect": approval.effect,
        "arguments": approval.arguments,
        "hosts": approval.hosts,
        "state": approval.state,
        "resolution": approval.resolution,
        "decided_by": approval.decided_by.get_username() if approval.decided_by else None,
        "reason": approval.reason,
        "created_at": approval.created_at,
    }


class InboxQuery(Schema):
    run: RowId | None = Field(None, description="Only this run's requests.")
    tool: str = Field("", max_length=60, description="Only this tool's requests.")


@router.get("/approvals", response=list[ApprovalOut], summary="Requests waiting for you")
def pending(request: SignedInRequest, query: Query[InboxQuery]) -> list[dict[str, Any]]:
    inbox = inbox_for_user(request.user, run_id=query.run, tool=query.tool)
    return [approval_out(a) for a in inbox["pending"]]


@router.post("/approvals/{approval_id}/decide", response=ApprovalOut, summary="Decide one")
def decide(request: SignedInRequest, approval_id: int, payload: DecisionIn) -> dict[str, Any]:
    approval = approval_get_for_user(request.user, approval_id)
    if approval is None:
        raise Http404("No such approval request.")
    resolution = payload.decision if payload.decision in Approval.Resolution.values else ""
    decided = approval_decide(
        user=request.user,
        approval=approval,
        approve=payload.decision != "reject",
        arguments_json=json.dumps(payload.arguments) if payload.arguments is not None else None,
        reason=payload.reason,
        resolution=resolution,
    )
    return approval_out(decided)
