"""Approvals over HTTP: deciding from the run page and the inbox, the badge, cancelling;
CSRF and ownership."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from planner_ui.core.status import RunStatus
from planner_ui.models import Approval, McpServerTool, Run
from planner_ui.services.runs import run_approve_plan
from tests.services.test_mcp import a_run, admin, server  # noqa: F401  (fixtures)
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Write a two-line status note and email it to bob@example.com"


@pytest.fixture
def waiting(alice) -> Approval:
    run = planned(alice, TASK)
    run_approve_plan(run.pk)
    drive(run)
    return run.approvals.get(state=Approval.State.PENDING)


def decide(client: Client, approval: Approval, **data: str):
    return client.post(reverse("approval_decide", args=[approval.pk]), data, HTTP_HX_REQUEST="true")


def test_the_run_page_shows_the_request_with_its_arguments_and_the_badge_counts_it(
    client_alice, waiting
):
    page = client_alice.get(reverse("run_detail", args=[waiting.run_id])).content.decode()
    assert f'id="approval-{waiting.pk}"' in page
    assert "bob@example.com" in page and 'class="primary approve-call"' in page
    assert 'id="approvals-badge" class="count-badge" data-count="1"' in page
    assert "Asks before every irreversible call" in page
    inbox = client_alice.get(reverse("approvals_inbox")).content.decode()
    assert f'id="approval-{waiting.pk}"' in inbox and f"run {waiting.run_id}" in inbox
    assert client_alice.get(reverse("approvals_count")).json() == {"pending": 1}


def test_approving_from_the_run_page_answers_with_the_updated_page(client_alice, waiting):
    response = decide(client_alice, waiting, decision="approve", **{"from": "run"})
    assert response.status_code == 200
    assert "Approved send_email." in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.APPROVED and waiting.decided_by.username == "alice"
    assert waiting.run.steps.get(step_id=waiting.step_id).status == "queued"


def test_approving_with_edited_arguments_from_the_inbox(client_alice, waiting):
    edited = {**waiting.arguments, "to": "carol@example.com"}
    response = decide(
        client_alice,
        waiting,
        decision="approve",
        arguments=json.dumps(edited),
        **{"from": "inbox"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="inbox-list"' in body and "Approved send_email with edited arguments." in body
    waiting.refresh_from_db()
    assert waiting.approved_arguments["to"] == "carol@example.com"


def test_a_second_decision_gets_409_and_says_who_decided(client_alice, waiting):
    decide(client_alice, waiting, decision="reject", reason="not now", **{"from": "run"})
    response = decide(client_alice, waiting, decision="approve", **{"from": "run"})
    assert response.status_code == 409
    assert "already rejected by alice" in response.content.decode()


def test_a_bad_decision_is_a_400(client_alice, waiting):
    assert decide(client_alice, waiting, decision="maybe").status_code == 400


def test_another_user_cannot_see_or_decide(waiting, make_user):
    mallory = Client()
    mallory.force_login(make_user("mallory"))
    assert decide(mallory, waiting, decision="approve").status_code == 404
    assert f"approval-{waiting.pk}" not in mallory.get(reverse("approvals_inbox")).content.decode()
    assert mallory.get(reverse("approvals_count")).json() == {"pending": 0}
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


def test_deciding_needs_a_csrf_token(alice, waiting):
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    assert (
        c.post(reverse("approval_decide", args=[waiting.pk]), {"decision": "approve"}).status_code
        == 403
    )


def test_cancel_from_the_page(client_alice, waiting):
    response = client_alice.post(
        reverse("run_cancel", args=[waiting.run_id]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and "Run cancelled." in response.content.decode()
    assert Run.objects.get().status == RunStatus.CANCELLED
    again = client_alice.post(reverse("run_cancel", args=[waiting.run_id]), HTTP_HX_REQUEST="true")
    assert again.status_code == 409 and "already cancelled" in again.content.decode()


def test_the_form_offers_the_policies_and_the_irreversible_tools(client_alice):
    page = client_alice.get(reverse("home")).content.decode()
    assert 'name="tool_policy" value="ask"' in page and "checked" in page
    for tool in ("send_email", "http_post", "delete_file"):
        assert f'name="auto_tools" value="{tool}"' in page
    # Sandboxed commands are not irreversible: nothing to ask about, and the form says so.
    assert 'name="auto_tools" value="shell"' not in page
    assert (
        "Shell and python run sandboxed (bubblewrap: no network, only the run&#x27;s workspace "
        "writable): they run without asking."
    ) in page
    response = client_alice.post(
        reverse("run_new"),
        {"task": TASK, "tool_policy": "auto", "auto_tools": ["send_email"]},
    )
    assert response.status_code == 302
    run = Run.objects.get()
    assert (run.tool_policy, run.auto_tools) == ("auto", ["send_email"])


def test_a_re_plan_waiting_for_review_is_shown_and_accepted_from_the_page(
    client_alice, alice, settings
):
    from planner_ui.models import PlanProposal

    # One model call is not enough for the step that calls the calculator: it fails.
    settings.AGENTSITE_MAX_STEP_ITERATIONS = 1
    run = planned(
        alice,
        "Compute 1234 * 5678 and then write a short report about it",
        replan_mode="review",
    )
    run_approve_plan(run.pk)
    run = drive(run)
    proposal = run.proposals.get(kind=PlanProposal.Kind.REPLAN)
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="replan"' in page and 'id="accept-replan"' in page
    assert "failed: the step reached its cap of 1 model calls" in page
    response = client_alice.post(
        reverse("replan_decide", args=[run.pk]),
        {"action": "accept", "proposal": proposal.pk},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert "Re-plan accepted as version 2" in response.content.decode()
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    again = client_alice.post(
        reverse("replan_decide", args=[run.pk]),
        {"action": "accept", "proposal": proposal.pk},
        HTTP_HX_REQUEST="true",
    )
    assert again.status_code == 409


def fields_of(approval: Approval, **typed: str) -> dict[str, str]:
    """What the approve form posts in fields mode, with `typed` in some fields."""
    values = {**approval.arguments, **typed}
    return {"edit_mode": "fields", **{f"arg:{name}": value for name, value in values.items()}}


def card(page: str, approval: Approval) -> str:
    start = page.index(f'id="approval-{approval.pk}"')
    return page[start : page.index("</li>", start)]


def test_the_card_shows_the_arguments_as_text_and_a_field_for_each(client_alice, waiting):
    page = client_alice.get(reverse("run_detail", args=[waiting.run_id])).content.decode()
    shown = card(page, waiting)
    body = waiting.arguments["body"]
    readable = shown[shown.index('<dl class="approval-args"') : shown.index("</dl>")]
    assert "\n" in body and "\\n" not in readable  # line breaks, not JSON escapes
    assert f'<dd class="arg-value">{body}</dd>' in shown.replace("&#x27;", "'")
    assert 'name="arg:to" value="bob@example.com"' in shown
    assert 'name="arg:subject"' in shown and 'name="arg:body"' in shown
    assert 'value="fields" class="mode-fields" checked' in shown
    assert f'id="approve-form-{waiting.pk}" hx-preserve="true"' in shown


@pytest.mark.parametrize("where", ["run", "inbox"])
def test_a_refused_field_comes_back_as_typed_with_its_message(client_alice, waiting, where):
    response = decide(
        client_alice,
        waiting,
        decision="approve",
        **fields_of(waiting, to="carol at example.com", subject="Kept as typed"),
        **{"from": where},
    )
    assert response.status_code == 409
    shown = card(response.content.decode(), waiting)
    assert 'name="arg:to" value="carol at example.com"' in shown
    assert 'name="arg:subject" value="Kept as typed"' in shown
    assert 'class="arg-field invalid" data-argument="to"' in shown
    assert (
        f'<p class="field-error" id="arg-{waiting.pk}-1-error">&#x27;to&#x27; string should match'
        in shown
    )
    assert '<details class="edit-args" open>' in shown
    assert "hx-preserve" not in shown  # this time the refused form replaces the one on the page
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


def test_a_refused_raw_json_edit_comes_back_as_typed(client_alice, waiting):
    typed = '{"to": "bob@example.com", "subject": "Hi",'
    response = decide(
        client_alice,
        waiting,
        decision="approve",
        edit_mode="json",
        arguments=typed,
        **{"from": "run"},
    )
    assert response.status_code == 409
    shown = card(response.content.decode(), waiting)
    assert 'value="json" class="mode-json" checked' in shown
    assert f'name="arguments" rows="6" class="mono">\n{escape(typed)}</textarea>' in shown
    assert "The edited arguments are not valid JSON" in shown


def test_without_htmx_a_refused_edit_is_shown_again_not_lost_in_a_redirect(client_alice, waiting):
    response = client_alice.post(
        reverse("approval_decide", args=[waiting.pk]),
        {"decision": "approve", "from": "inbox", **fields_of(waiting, to="nobody")},
    )
    assert response.status_code == 409
    shown = card(response.content.decode(), waiting)
    assert 'name="arg:to" value="nobody"' in shown and "field-error" in shown


def test_after_an_edit_the_decision_shows_asked_and_sent_side_by_side(client_alice, waiting):
    response = decide(
        client_alice,
        waiting,
        decision="approve",
        **fields_of(waiting, to="carol@example.com"),
        **{"from": "run"},
    )
    assert response.status_code == 200
    shown = card(response.content.decode(), waiting)
    assert "Approved send_email with edited arguments." in response.content.decode()
    assert '<tr class="arg-row arg-changed" data-argument="to">' in shown
    assert '<td class="arg-asked"><div class="arg-value">bob@example.com</div></td>' in shown
    assert '<td class="arg-sent"><div class="arg-value">carol@example.com</div></td>' in shown
    assert '<tr class="arg-row arg-same" data-argument="subject">' in shown
    assert "Approved by alice" in shown and "with the edits above" in shown


def test_an_mcp_call_held_for_review_is_edited_through_its_pinned_schema(
    client_alice,
    alice,
    server,  # noqa: F811  (the fixture)
):
    """Its form comes from the pinned schema; deciding an edit of a tool held for review
    since the call was made used to answer 500 (KeyError)."""
    registered, log = server
    run = a_run(
        alice,
        ["fake__launch"],
        lambda s: s.tool_call("fake__launch", {"target": "rocket"}),
        lambda s: s.text("Could not launch."),
        lambda s: s.text("# Done"),
    )
    waiting = run.approvals.get()
    page = client_alice.get(reverse("approvals_inbox")).content.decode()
    assert 'name="arg:target" rows="3"' in card(page, waiting)
    registered.tools.filter(name="launch").update(state=McpServerTool.State.CHANGED)
    response = decide(
        client_alice,
        waiting,
        decision="approve",
        **fields_of(waiting, target="moon"),
        **{"from": "inbox"},
    )
    assert response.status_code == 200
    shown = card(response.content.decode(), waiting)
    assert '<td class="arg-sent"><div class="arg-value">moon</div></td>' in shown
    assert log.read_text() == ""
