"""The approvals inbox across runs: narrowed to a run or a tool, and several requests decided
at once, each recorded on its own with who decided it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from planner_ui.models import Approval
from planner_ui.services.runs import run_approve_plan
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

MAIL = "Write a two-line status note and email it to bob@example.com"
POST_TASK = "Summarize the benefits of tea and post the summary to https://example.com/hook"


def waiting(owner, task: str) -> Approval:
    run = planned(owner, task)
    run_approve_plan(run.pk)
    drive(run)
    return run.approvals.get(state=Approval.State.PENDING)


@pytest.fixture
def two(alice):
    return waiting(alice, MAIL), waiting(alice, MAIL)


def ids_in(page: str, approvals) -> list[int]:
    return [a.pk for a in approvals if f'id="approval-{a.pk}"' in page]


def test_the_inbox_narrows_to_one_run(client_alice, two):
    first, second = two
    page = client_alice.get(reverse("approvals_inbox"), {"run": first.run_id}).content.decode()
    assert ids_in(page, two) == [first.pk]
    assert f'<option value="{first.run_id}" selected>' in page
    page = client_alice.get(reverse("approvals_inbox")).content.decode()
    assert ids_in(page, two) == [first.pk, second.pk]


def test_the_inbox_narrows_to_one_tool(client_alice, alice, settings):
    mail = waiting(alice, MAIL)
    settings.AGENTSITE_TOOL_SETTINGS = {
        **settings.AGENTSITE_TOOL_SETTINGS,
        "net_allow": ["example.com"],
    }
    post = waiting(alice, POST_TASK)
    page = client_alice.get(reverse("approvals_inbox"), {"tool": "http_post"}).content.decode()
    assert ids_in(page, [mail, post]) == [post.pk]
    assert '<option value="http_post" selected>' in page


def test_ticked_requests_of_several_runs_are_decided_at_once(client_alice, two):
    response = client_alice.post(
        reverse("approvals_decide_many"),
        {"decision": "approve", "approval": [a.pk for a in two]},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert "Approved 2 requests." in response.content.decode()
    for approval in two:
        approval.refresh_from_db()
        assert approval.state == Approval.State.APPROVED
        assert approval.decided_by.username == "alice"
        assert approval.run.events.filter(type="approval.decided", payload__by="alice").exists()


def test_a_request_decided_meanwhile_is_named_and_the_others_still_decided(client_alice, two):
    first, second = two
    client_alice.post(reverse("approval_decide", args=[first.pk]), {"decision": "approve"})
    response = client_alice.post(
        reverse("approvals_decide_many"),
        {"decision": "reject", "reason": "not today", "approval": [first.pk, second.pk]},
        HTTP_HX_REQUEST="true",
    )
    page = response.content.decode()
    assert "Rejected 1 request." in page
    assert f"send_email in run {first.run_id}: This request was already approved by alice" in page
    second.refresh_from_db()
    assert second.state == Approval.State.REJECTED and second.reason == "not today"


def test_nobody_decides_another_users_requests_in_bulk(client_alice, make_user):
    theirs = waiting(make_user("bob"), MAIL)
    response = client_alice.post(
        reverse("approvals_decide_many"),
        {"decision": "approve", "approval": [theirs.pk]},
        HTTP_HX_REQUEST="true",
    )
    assert f"request {theirs.pk}: not found" in response.content.decode()
    theirs.refresh_from_db()
    assert theirs.state == Approval.State.PENDING


def test_nothing_ticked_says_what_to_do(client_alice, two):
    response = client_alice.post(
        reverse("approvals_decide_many"), {"decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert "Tick the requests to decide, then approve or reject them." in response.content.decode()
