"""A run's outcome, set as it finishes: a rejected call, an unknown outcome or a step that never
ran turns a success into one with warnings, stored with its one-line reason."""

from __future__ import annotations

import pytest

from planner_ui.core.outcome import RunOutcome
from planner_ui.core.status import RunStatus
from planner_ui.models import Run, ToolReceipt
from planner_ui.services.approvals import approval_decide
from planner_ui.services.retries import step_retry
from planner_ui.services.runs import run_approve_plan, run_cancel

from .test_approvals import started, waiting_approval
from .test_runs import drive, planned

pytestmark = pytest.mark.django_db


def rejected_run(user) -> Run:
    """A run whose one irreversible call (an email) `user` rejected, driven to its end."""
    run = started(user)
    approval_decide(
        user=user, approval=waiting_approval(run), approve=False, reason="Bob is on leave"
    )
    return drive(run)


def test_a_rejected_call_ends_the_run_succeeded_with_warnings(make_user):
    run = rejected_run(make_user("alice"))
    approval = run.approvals.get()
    assert run.status == RunStatus.SUCCEEDED
    assert run.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS
    # The offline executor gives up without the email, and the re-plan goes around its step.
    step = approval.step_id
    assert run.outcome_reason == (
        f"Call rejected (send_email in '{step}'); step '{step}' failed and was re-planned around"
    )
    assert run.warnings[0] == f"a call to send_email in step '{step}' was rejected: Bob is on leave"
    assert run.warnings[1].startswith(f"step '{step}' failed (the executor could not proceed")
    # The live page and the API learn it from the event that closes the run.
    closing = run.events.filter(type="run.status").last()
    assert closing.payload == {
        "status": "succeeded",
        "error": "",
        "outcome": "succeeded_with_warnings",
        "outcome_reason": run.outcome_reason,
    }


def test_an_approved_call_ends_the_run_plainly_succeeded(make_user):
    alice = make_user("alice")
    run = started(alice)
    approval_decide(user=alice, approval=waiting_approval(run), approve=True)
    run = drive(run)
    assert (run.outcome, run.outcome_reason, run.warnings) == ("succeeded", "", [])


def test_a_call_whose_outcome_stayed_unknown_is_a_warning(make_user):
    run = planned(make_user(), "Compute 1500 * 0.2 + 75")
    step = run.steps.first()
    ToolReceipt.objects.create(
        run=run,
        step_id=step.step_id,
        idempotency_key="left-by-a-worker-that-died",
        tool="http_post",
        effect="send",
        arguments={},
        decision="run",
        authorized_by="the run's policy",
        state=ToolReceipt.State.UNKNOWN,
    )
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS
    assert run.outcome_reason == f"Call with unknown outcome (http_post in '{step.step_id}')"


def test_a_cancelled_run_says_who_cancelled_it(make_user):
    alice = make_user("alice")
    run = started(alice)
    run = run_cancel(run.pk, alice)
    assert (run.outcome, run.outcome_reason) == ("cancelled", "Cancelled by alice.")


def test_a_retry_clears_the_outcome_until_the_run_finishes_again(make_user):
    alice = make_user("alice")
    run = started(alice)
    approval = waiting_approval(run)
    approval_decide(user=alice, approval=approval, approve=False, reason="not now")
    run = drive(run)
    assert run.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS
    run = step_retry(run_id=run.pk, step_id="synthesis", user=alice, downstream=False)
    assert (run.status, run.outcome, run.outcome_reason, run.warnings) == (
        "running",
        "",
        "",
        [],
    )
    run = drive(run)
    # The rejection still stands: the run finishes with the same warning.
    assert run.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS


@pytest.mark.database
def test_a_result_with_a_warning_stands_in_doubt_and_outputs_alone_say_nothing(make_user):
    from planner_ui.agents.executor import StepOutcome
    from planner_ui.services.steps import step_finish

    from .test_concurrency import running_run

    run = running_run(make_user(), [("a", []), ("b", [])])
    # A warning in a step's output is not one: only the payload's warnings count.
    step_finish(run.pk, "a", outcome=StepOutcome(output='{"warnings": ["not one"]}'))
    step_finish(
        run.pk,
        "b",
        outcome=StepOutcome(output="675", warnings=["its figures are in doubt: 675"]),
    )
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS
    assert run.outcome_reason == "Its figures are in doubt: 675"
    assert run.warnings == ["step 'b': its figures are in doubt: 675"]
