"""When a worker died during an irreversible call, a person decides what happened: the step
waits (the rest of the run goes on), and the call is repeated only if they say so, under the
same idempotency key. Counted at a real local receiver."""

from __future__ import annotations

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, ToolReceipt
from planner_ui.providers.scripted import script
from planner_ui.services.approvals import ApprovalRefused, approval_decide
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.fakes.receiver import Receiver
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


def plan(url: str) -> dict:
    return {
        "goal": "Notify",
        "steps": [
            {
                "id": "notify",
                "title": "Notify the hook",
                "instruction": f"Post 'done' to {url}.",
                "role": "coder",
                "tools": ["http_post"],
                "depends_on": [],
            },
            {
                "id": "other",
                "title": "Something else",
                "instruction": "Write a line about tea.",
                "role": "writer",
                "tools": [],
                "depends_on": [],
            },
        ],
    }


@pytest.fixture
def hook(settings):
    settings.AGENTSITE_TOOL_SETTINGS = {
        **settings.AGENTSITE_TOOL_SETTINGS,
        "net_allow": ["127.0.0.1"],
    }
    with Receiver() as receiver:
        yield receiver


def interrupted(user, hook) -> tuple:
    """A run whose post was in flight when its worker died: the receipt says so, no result."""
    url = f"{hook.url}/hook"
    script("outcome-planner").plan(plan(url))
    # Each step's model, in the order the steps run: notify (a post, then its answer), other,
    # then the synthesizer.
    script("outcome-executor").tool_call(
        "http_post", {"url": url, "body": '{"status": "done"}'}
    ).text("Tea is calm.").text("Posted.").text("# Done")
    routes = {"planner": "scripted:outcome-planner", "executor": "scripted:outcome-executor"}
    run = run_create(
        owner=user,
        options=RunOptions(
            task="Notify the hook",
            routes=routes,
            tool_policy="auto",
            auto_tools=["http_post"],
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    ToolReceipt.objects.create(
        run=run,
        step_id="notify",
        idempotency_key=f"agentsite-run{run.pk}-notify-1:call-1",
        tool="http_post",
        effect="send",
        arguments={"url": url, "body": '{"status": "done"}'},
        decision="run",
        authorized_by="the run's policy",
    )
    run_approve_plan(run.pk)
    run = drive(run)
    return run, Approval.objects.get(run=run, kind=Approval.Kind.OUTCOME)


def test_the_step_waits_for_a_person_and_the_rest_of_the_run_goes_on(make_user, hook):
    run, question = interrupted(make_user(), hook)
    assert question.state == Approval.State.PENDING and question.tool == "http_post"
    assert run.steps.get(step_id="notify").status == StepStatus.WAITING
    assert run.steps.get(step_id="other").status == StepStatus.SUCCEEDED
    assert run.status == RunStatus.RUNNING and hook.count == 0
    assert run.events.filter(type="approval.requested", payload__kind="outcome").exists()


def test_it_happened_closes_the_receipt_and_nothing_is_sent_again(make_user, hook):
    alice = make_user()
    run, question = interrupted(alice, hook)
    approval_decide(user=alice, approval=question, approve=True, resolution="happened")
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert hook.count == 0
    receipt = run.receipts.get()
    assert receipt.state == ToolReceipt.State.DONE
    assert (
        receipt.result
        == "alice confirmed that this http_post call happened; its result was not recorded."
    )


def test_it_did_not_happen_sends_it_again_under_the_same_key(make_user, hook):
    alice = make_user()
    run, question = interrupted(alice, hook)
    approval_decide(user=alice, approval=question, approve=True, resolution="retry")
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    receipt = run.receipts.get()
    assert hook.count == 1, (receipt.state, receipt.result)
    assert hook.received[0]["idempotency_key"] == receipt.idempotency_key
    assert receipt.state == ToolReceipt.State.DONE and not receipt.is_error


def test_fail_the_step_fails_it_with_who_said_so(make_user, hook):
    alice = make_user()
    run, question = interrupted(alice, hook)
    approval_decide(
        user=alice, approval=question, approve=False, resolution="fail", reason="unsure"
    )
    run = drive(run)
    notify = run.steps.get(step_id="notify")
    assert notify.status == StepStatus.FAILED
    assert (
        notify.error
        == "the outcome of the http_post call was unknown, and alice failed the step: unsure"
    )
    assert run.status == RunStatus.FAILED and hook.count == 0


def test_an_unknown_outcome_needs_one_of_the_three_answers(make_user, hook):
    alice = make_user()
    _, question = interrupted(alice, hook)
    with pytest.raises(ApprovalRefused, match="Say what happened to this call"):
        approval_decide(user=alice, approval=question, approve=True)
