"""Approvals over the API: what waits across runs (narrowed by run and tool), decided with
edited arguments or rejected with a reason, each recorded with who decided; another user's
request is a 404, a second decision a 409."""

from __future__ import annotations

import pytest

from planner_ui.core.status import RunStatus
from planner_ui.models import Approval
from planner_ui.services.runs import run_approve_plan
from tests.services.test_runs import drive, planned

from .conftest import post

pytestmark = pytest.mark.django_db


def waiting(user, who: str) -> Approval:
    run = planned(user, f"Write a two-line status note and email it to {who}@example.com")
    run_approve_plan(run.pk)
    drive(run)
    return run.approvals.get(state=Approval.State.PENDING)


def test_pending_requests_across_runs_narrowed_by_run_and_tool(api_client) -> None:
    api = api_client()
    first, second = waiting(api.user, "bob"), waiting(api.user, "carol")
    listed = api.get("/api/v1/approvals").json()
    assert [a["id"] for a in listed] == [first.pk, second.pk]
    assert listed[0]["tool"] == "send_email" and listed[0]["arguments"]["to"] == "bob@example.com"
    assert [a["id"] for a in api.get(f"/api/v1/approvals?run={second.run_id}").json()] == [
        second.pk
    ]
    assert api.get("/api/v1/approvals?tool=shell").json() == []


def test_approve_with_edited_arguments_and_the_run_goes_on(api_client) -> None:
    api = api_client()
    request = waiting(api.user, "bob")
    arguments = {**request.arguments, "to": "team@example.com"}
    decided = post(
        api,
        f"/api/v1/approvals/{request.pk}/decide",
        {"decision": "approve", "arguments": arguments},
    )
    assert decided.status_code == 200, decided.content
    assert decided.json()["state"] == "approved" and decided.json()["decided_by"] == "alice"
    request.refresh_from_db()
    assert request.approved_arguments["to"] == "team@example.com"
    run = drive(request.run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.receipts.get().arguments["to"] == "team@example.com"
    again = post(api, f"/api/v1/approvals/{request.pk}/decide", {"decision": "reject"})
    assert again.status_code == 409 and "alice" in again.json()["detail"]


def test_reject_with_a_reason_and_bad_arguments_are_refused(api_client) -> None:
    api = api_client()
    request = waiting(api.user, "bob")
    bad = post(
        api,
        f"/api/v1/approvals/{request.pk}/decide",
        {"decision": "approve", "arguments": {"to": "not an address"}},
    )
    assert bad.status_code == 422
    problem = bad.json()["detail"][0]
    assert problem["loc"][-1] == "arguments" and "edited arguments were refused" in problem["msg"]
    unknown = post(api, f"/api/v1/approvals/{request.pk}/decide", {"decision": "maybe"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"][-1] == "decision"
    rejected = post(
        api, f"/api/v1/approvals/{request.pk}/decide", {"decision": "reject", "reason": "not now"}
    )
    assert rejected.json()["state"] == "rejected" and rejected.json()["reason"] == "not now"


def test_another_users_request_is_a_404_and_stays_pending(api_client) -> None:
    alice, bob = api_client("alice"), api_client("bob")
    request = waiting(alice.user, "bob")
    assert bob.get("/api/v1/approvals").json() == []
    response = post(bob, f"/api/v1/approvals/{request.pk}/decide", {"decision": "approve"})
    assert response.status_code == 404
    request.refresh_from_db()
    assert request.state == Approval.State.PENDING
