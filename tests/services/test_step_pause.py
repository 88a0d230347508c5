"""A step parks for the very decision it waits for, and only that decision resumes it: an
earlier decision about the same call (the approval of a call whose outcome is now the question)
must not resume it, or it parks and resumes again at once, forever."""

from __future__ import annotations

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, ToolReceipt
from planner_ui.providers.scripted import script
from planner_ui.services.approvals import approval_decide
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.fakes.receiver import Receiver
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(settings):
    settings.AGENTSITE_TOOL_SETTINGS = {
        **settings.AGENTSITE_TOOL_SETTINGS,
        "net_allow": ["127.0.0.1"],
    }
    with Receiver() as receiver:
        yield receiver


def test_an_approved_call_whose_worker_died_during_it_waits_for_the_question(make_user, hook):
    alice = make_user()
    url, body = f"{hook.url}/hook", '{"status": "done"}'
    step = {
        "id": "notify",
        "title": "Notify",
        "instruction": f"Post 'done' to {url}.",
        "role": "writer",
        "tools": ["http_post"],
        "depends_on": [],
    }
    script("pause-planner").plan({"goal": "Notify", "steps": [step]})
    script("pause-executor").tool_call("http_post", {"url": url, "body": body}).text(
        "Posted."
    ).text("# Done")
    run = run_create(
        owner=alice,
        options=RunOptions(
            task="Notify the hook",
            routes={"planner": "scripted:pause-planner", "executor": "scripted:pause-executor"},
            tool_policy="ask",
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    approval = Approval.objects.get(run=run, kind=Approval.Kind.CALL)
    approval_decide(user=alice, approval=approval, approve=True)
    # The worker that made the approved call died during it: its receipt is in flight.
    ToolReceipt.objects.create(
        run=run,
        step_id="notify",
        idempotency_key=f"agentsite-run{run.pk}-notify-{approval.call_key}",
        tool="http_post",
        effect="send",
        arguments={"url": url, "body": body},
        decision="ask",
        authorized_by="alice",
    )
    since = run.events.order_by("-seq").first().seq
    run = drive(run)

    assert run.steps.get(step_id="notify").status == StepStatus.WAITING
    question = Approval.objects.get(run=run, kind=Approval.Kind.OUTCOME)
    assert question.state == Approval.State.PENDING
    assert question.call_key == f"{approval.call_key}:outcome"
    assert run.events.filter(type="step.started", seq__gt=since).count() == 1
    assert hook.count == 0

    approval_decide(user=alice, approval=question, approve=True, resolution="happened")
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert hook.count == 0
