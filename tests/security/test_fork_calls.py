"""A fork never makes again an irreversible call its original made: under the "run without
asking" policy a fork from a step beside the one that mailed (not after it, so not reused)
used to send the same email a second time, while the page said no call was made again.

The same call (tool and arguments) that any run the fork comes from performed is not performed:
the fork's step gets the original's result, and a receipt that points at the original's. A call
with other arguments is a new call, and goes through the run's policy as any other."""

from __future__ import annotations

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.providers.scripted import script
from planner_ui.services.retries import run_fork
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

MAIL = {"to": "bob@example.com", "subject": "Tea notes", "body": "The notes are ready."}
OTHER_MAIL = {"to": "carol@example.com", "subject": "Tea notes", "body": "The notes are ready."}


def _step(step_id: str, instruction: str, tools: list[str], after: list[str]) -> dict:
    return {
        "id": step_id,
        "title": step_id.title(),
        "instruction": instruction,
        "role": "writer",
        "tools": tools,
        "depends_on": after,
    }


# note, then mail and write side by side (both after note only), then the synthesizer.
PLAN = {
    "goal": "Note, mail and report",
    "steps": [
        _step("note", "Write notes.md with the facts.", ["write_file"], []),
        _step("mail", "Mail bob@example.com that the notes are ready.", ["send_email"], ["note"]),
        _step("write", "Write the report from notes.md.", ["read_file"], ["note"]),
    ],
}


def finished(user, mailoutbox, *, policy: str = "auto") -> Run:
    script("fork-planner").plan(PLAN)
    script("fork-executor").tool_call(
        "write_file", {"path": "notes.md", "content": "Tea was first drunk in China."}
    ).text("Notes written.").tool_call("send_email", MAIL).text("Mailed.").tool_call(
        "read_file", {"path": "notes.md"}
    ).text("Report v1.").text("# Deliverable v1")
    run = run_create(
        owner=user,
        options=RunOptions(
            task="Note, mail bob and report",
            routes={"planner": "scripted:fork-planner", "executor": "scripted:fork-executor"},
            tool_policy=policy,
            auto_tools=["send_email"] if policy == "auto" else [],
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    if policy == "ask":
        from planner_ui.services.approvals import approval_decide

        approval_decide(user=user, approval=Approval.objects.get(run=run), approve=True)
        run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert len(mailoutbox) == 1
    return run


def fork_and_run(run: Run, user, step_id: str, mail: dict) -> Run:
    fork = run_fork(run_id=run.pk, step_id=step_id, user=user)
    script("fork-executor").tool_call("send_email", mail).text("Mailed.").tool_call(
        "read_file", {"path": "notes.md"}
    ).text("Report v2.").text("# Deliverable v2")
    run_approve_plan(fork.pk)
    return drive(fork)


def test_a_fork_beside_the_mailing_step_does_not_mail_again(make_user, mailoutbox):
    alice = make_user()
    run = finished(alice, mailoutbox)
    fork = fork_and_run(run, alice, "write", MAIL)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    # "mail" was not reused (it is not before "write"), so it ran again: its call did not.
    assert fork.steps.get(step_id="mail").reused_from is None
    assert len(mailoutbox) == 1
    original = run.receipts.get(tool="send_email")
    again = fork.receipts.get(tool="send_email")
    assert again.reused_from == original and again.state == ToolReceipt.State.DONE
    assert again.result == original.result
    told = fork.events.get(type="step.tool_result", step_id="mail").payload["content"]
    assert f"a fork of run {run.pk}, which already made this exact send_email call" in told

    # A fork of the fork: the call its original took over from run 1 is not made either.
    fork_of_fork = fork_and_run(fork, alice, "write", MAIL)
    assert fork_of_fork.status == RunStatus.SUCCEEDED, fork_of_fork.error
    assert len(mailoutbox) == 1
    assert fork_of_fork.receipts.get(tool="send_email").reused_from == original


def test_a_fork_from_the_mailing_step_itself_does_not_mail_again(make_user, mailoutbox):
    alice = make_user()
    run = finished(alice, mailoutbox)
    fork = fork_and_run(run, alice, "mail", MAIL)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    assert len(mailoutbox) == 1


def test_a_call_with_other_arguments_is_a_new_call(make_user, mailoutbox):
    alice = make_user()
    run = finished(alice, mailoutbox)
    fork = fork_and_run(run, alice, "write", OTHER_MAIL)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    assert len(mailoutbox) == 2 and mailoutbox[1].to == ["carol@example.com"]
    assert fork.receipts.get(tool="send_email").reused_from is None


def test_a_fork_that_asks_does_not_ask_about_a_call_already_made(make_user, mailoutbox):
    alice = make_user()
    run = finished(alice, mailoutbox, policy="ask")
    fork = fork_and_run(run, alice, "write", MAIL)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    assert not Approval.objects.filter(run=fork).exists()
    assert fork.steps.get(step_id="mail").status == StepStatus.SUCCEEDED
    assert len(mailoutbox) == 1


def test_a_call_of_unknown_outcome_in_the_original_is_put_to_a_person(make_user, mailoutbox):
    alice = make_user()
    run = finished(alice, mailoutbox)
    # What a worker killed during the original's call leaves (services.outbox): nobody knows
    # whether the mail went out, so the fork may not send it on a guess either.
    run.receipts.filter(tool="send_email").update(state=ToolReceipt.State.UNKNOWN)
    fork = fork_and_run(run, alice, "write", MAIL)
    assert fork.steps.get(step_id="mail").status == StepStatus.WAITING
    question = Approval.objects.get(run=fork, kind=Approval.Kind.OUTCOME)
    assert question.state == Approval.State.PENDING and question.tool == "send_email"
    assert fork.receipts.get(tool="send_email").state == ToolReceipt.State.UNKNOWN
    assert len(mailoutbox) == 1
