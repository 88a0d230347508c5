"""Approval gates, policies and the outbox, driven step by step as workers would.

pytest-django routes Django's mail to the in-memory `mailoutbox`: what it holds is what was
really sent."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.services.approvals import ApprovalRefused, ArgumentsRefused, approval_decide
from planner_ui.services.runs import RunInputError, run_approve_plan, run_cancel, run_create

from .test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Write a two-line status note and email it to bob@example.com"


def started(user, **kwargs) -> Run:
    run = planned(user, TASK, **kwargs)
    run_approve_plan(run.pk)
    return drive(run)


def waiting_approval(run: Run) -> Approval:
    return run.approvals.get(state=Approval.State.PENDING)


def test_an_irreversible_call_waits_for_a_person_with_its_exact_arguments(make_user, mailoutbox):
    run = started(make_user())
    assert run.status == RunStatus.RUNNING
    approval = waiting_approval(run)
    assert (approval.tool, approval.effect) == ("send_email", "send")
    assert approval.arguments["to"] == "bob@example.com"
    step = run.steps.get(step_id=approval.step_id)
    assert step.status == StepStatus.WAITING
    assert step.checkpoint["messages"][-1]["tool_calls"][0]["name"] == "send_email"
    types = list(run.events.values_list("type", flat=True))
    assert "approval.requested" in types and "step.waiting" in types
    assert mailoutbox == []
    # Everything that does not depend on the waiting step went on and finished.
    blocked = {s.step_id for s in run.steps.all() if approval.step_id in s.depends_on}
    for other in run.steps.exclude(step_id=approval.step_id).exclude(step_id__in=blocked):
        if other.step_id != "synthesis":
            assert other.status == StepStatus.SUCCEEDED, other


def test_approving_performs_the_call_once_and_the_run_finishes(make_user, mailoutbox):
    alice = make_user()
    run = started(alice)
    approval = waiting_approval(run)
    approval_decide(user=alice, approval=approval, approve=True)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]
    receipt = run.receipts.get()
    assert (receipt.state, receipt.approval_id, receipt.authorized_by) == (
        ToolReceipt.State.DONE,
        approval.pk,
        "alice",
    )
    assert receipt.result.startswith("sent email to bob@example.com")
    assert (
        receipt.idempotency_key == f"agentsite-run{run.pk}-{approval.step_id}-{approval.call_key}"
    )
    result = run.events.get(type="step.tool_result", payload__tool="send_email")
    assert result.payload["is_error"] is False


def test_approving_with_edited_arguments_uses_them_and_tells_the_model(make_user, mailoutbox):
    alice = make_user()
    run = started(alice)
    approval = waiting_approval(run)
    edited = {**approval.arguments, "to": "carol@example.com"}
    approval_decide(user=alice, approval=approval, approve=True, arguments_json=json.dumps(edited))
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert [m.to for m in mailoutbox] == [["carol@example.com"]]
    approval.refresh_from_db()
    assert approval.edited and approval.arguments["to"] == "bob@example.com"
    result = run.events.get(type="step.tool_result", payload__tool="send_email")
    assert "A person edited the arguments before approving" in result.payload["content"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", "The edited arguments are not valid JSON"),
        ('{"to": "not an address", "subject": "s", "body": "b"}', "'to' string should match"),
        ("x" * 20_001, "at most 20000 are allowed"),
    ],
)
def test_bad_edited_arguments_are_refused_and_the_request_stays_pending(
    make_user, arguments, message
):
    alice = make_user()
    approval = waiting_approval(started(alice))
    with pytest.raises(ApprovalRefused, match=message):
        approval_decide(user=alice, approval=approval, approve=True, arguments_json=arguments)
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_rejecting_hands_the_reason_to_the_executor_which_carries_on(make_user, mailoutbox):
    alice = make_user()
    run = started(alice)
    approval = waiting_approval(run)
    approval_decide(user=alice, approval=approval, approve=False, reason="Bob is on leave")
    run = drive(run)
    assert mailoutbox == []
    assert not run.receipts.exists()
    result = run.events.get(type="step.tool_result", payload__tool="send_email")
    assert result.payload["is_error"] is True
    assert "A person rejected this send_email call: Bob is on leave." in result.payload["content"]
    assert run.status == RunStatus.SUCCEEDED, run.error


@pytest.mark.parametrize(("first", "second"), [(True, False), (False, True), (True, True)])
def test_a_second_decision_is_refused_with_who_decided_first(make_user, first, second):
    alice = make_user()
    approval = waiting_approval(started(alice))
    approval_decide(user=alice, approval=approval, approve=first, reason="no")
    done = "approved" if first else "rejected"
    wanted = "approved" if second else "rejected"
    with pytest.raises(ApprovalRefused, match=f"already {done} by alice at .*cannot be {wanted}"):
        approval_decide(user=alice, approval=approval, approve=second)


def test_another_users_request_cannot_be_decided(make_user):
    approval = waiting_approval(started(make_user("alice")))
    with pytest.raises(ApprovalRefused) as refused:
        approval_decide(user=make_user("mallory"), approval=approval, approve=True)
    assert str(refused.value) == ("This request is not yours to decide: it belongs to another run.")
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_a_dry_run_records_the_call_and_sends_nothing(make_user, mailoutbox):
    run = started(make_user(), tool_policy="dry_run")
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert mailoutbox == [] and not run.approvals.exists()
    receipt = run.receipts.get()
    assert (receipt.decision, receipt.tool) == ("dry_run", "send_email")
    result = run.events.get(type="step.tool_result", payload__tool="send_email")
    assert result.payload["content"].startswith("[dry run] send_email was not performed")


def test_auto_approved_tools_run_without_asking_and_keep_a_receipt(make_user, mailoutbox):
    run = started(make_user(), tool_policy="auto", auto_tools=["send_email"])
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]
    assert not run.approvals.exists()
    assert run.receipts.get().authorized_by.startswith("the run's policy: it runs send_email")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tool_policy": "yolo"}, "Unknown policy 'yolo'"),
        ({"tool_policy": "auto", "auto_tools": ["calculator"]}, "calculator is not one"),
        ({"tool_policy": "auto"}, "Choose the tools to run without asking"),
    ],
)
def test_bad_policies_are_refused(make_user, kwargs, message):
    with pytest.raises(RunInputError, match=message):
        planned(make_user(), TASK, **kwargs)


def test_cancelling_withdraws_approvals_and_keeps_the_history(make_user, mailoutbox):
    alice = make_user()
    run = started(alice)
    approval = waiting_approval(run)
    done_before = set(
        run.steps.filter(status=StepStatus.SUCCEEDED).values_list("step_id", flat=True)
    )
    run = run_cancel(run.pk, alice)
    assert (run.status, run.error) == (RunStatus.CANCELLED, "Cancelled by alice.")
    approval.refresh_from_db()
    assert approval.state == Approval.State.WITHDRAWN
    assert run.steps.get(step_id=approval.step_id).status == StepStatus.SKIPPED
    assert (
        set(run.steps.filter(status=StepStatus.SUCCEEDED).values_list("step_id", flat=True))
        == done_before
    )
    with pytest.raises(ApprovalRefused, match="withdrawn"):
        approval_decide(user=alice, approval=approval, approve=True)
    assert drive(run).status == RunStatus.CANCELLED
    assert mailoutbox == []
    with pytest.raises(Exception, match="already cancelled"):
        run_cancel(run.pk, alice)


def form(arguments: dict, **typed: str) -> dict[str, str]:
    """The fields of an approval's form as a browser posts them, with `typed` in some."""
    return {f"arg:{name}": value for name, value in {**arguments, **typed}.items()}


def test_approving_with_fields_edited_sends_what_they_say(make_user, mailoutbox):
    alice = make_user()
    run = started(alice)
    approval = waiting_approval(run)
    posted = form(approval.arguments, to="carol@example.com", body="Line one\r\nLine two")
    approval_decide(user=alice, approval=approval, approve=True, fields=posted)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert [(m.to, m.body) for m in mailoutbox] == [(["carol@example.com"], "Line one\nLine two")]
    approval.refresh_from_db()
    assert (
        approval.edited and approval.approved_arguments["subject"] == approval.arguments["subject"]
    )


def test_fields_left_as_they_were_are_not_an_edit(make_user):
    alice = make_user()
    approval = waiting_approval(started(alice))
    decided = approval_decide(
        user=alice, approval=approval, approve=True, fields=form(approval.arguments)
    )
    assert not decided.edited


def test_a_field_the_tool_refuses_is_named_and_nothing_is_decided(make_user):
    alice = make_user()
    approval = waiting_approval(started(alice))
    with pytest.raises(ArgumentsRefused) as refused:
        approval_decide(
            user=alice, approval=approval, approve=True, fields=form(approval.arguments, to="bob")
        )
    assert list(refused.value.problems) == ["to"]
    assert refused.value.problems["to"].startswith("'to' string should match pattern")
    assert str(refused.value).startswith(
        "The edited arguments were refused: send_email: invalid arguments: 'to' string"
    )
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def a_post_waiting(user) -> Approval:
    run = run_create(owner=user, options=RunOptions(task="Post a note"))
    return Approval.objects.create(
        run=run,
        step_id="post",
        call_key="1:post",
        tool="http_post",
        effect="send",
        arguments={"url": "https://example.com/notes", "body": "{}"},
    )


@pytest.mark.parametrize("edit", ["fields", "json"])
def test_an_edited_url_to_an_address_the_network_policy_refuses_is_refused_now(make_user, edit):
    """It would be refused when the call is made: the person learns it while deciding."""
    alice = make_user()
    approval = a_post_waiting(alice)
    metadata = {**approval.arguments, "url": "http://169.254.169.254/latest/meta-data"}
    edited = (
        {"fields": form(metadata)} if edit == "fields" else {"arguments_json": json.dumps(metadata)}
    )
    with pytest.raises(ArgumentsRefused) as refused:
        approval_decide(user=alice, approval=approval, approve=True, **edited)
    assert list(refused.value.problems) == ["url"]
    assert "169.254.169.254 is a link-local address" in refused.value.problems["url"]
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING
    # A public address, or a name (resolved, and checked, only when the call is made), passes.
    for url in ("http://93.184.215.14/notes", "https://notes.example.org/new"):
        fresh = a_post_waiting(alice)
        posted = form({**fresh.arguments, "url": url})
        assert approval_decide(user=alice, approval=fresh, approve=True, fields=posted).edited


def test_an_edited_body_that_is_not_json_is_refused_at_the_body(make_user):
    alice = make_user()
    approval = a_post_waiting(alice)
    with pytest.raises(ArgumentsRefused) as refused:
        approval_decide(
            user=alice, approval=approval, approve=True, fields=form(approval.arguments, body="{x")
        )
    assert list(refused.value.problems) == ["body"]
    assert "the body is not valid JSON" in refused.value.problems["body"]
