"""Going back over a run: a retried step runs again (alone or with the steps after it) through
the run's gates, and a fork reuses what came before its step without making any of its calls
again. Irreversible calls are counted at a real local receiver."""

from __future__ import annotations

import pytest

from planner_ui.core.errors import InvalidTransition
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.providers.scripted import script
from planner_ui.services.approvals import approval_decide
from planner_ui.services.retries import MAX_INSTRUCTION_CHARS, run_fork, step_retry
from planner_ui.services.runs import run_approve_plan, run_cancel, run_create, run_plan
from tests.fakes.receiver import Receiver
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


def plan(url: str) -> dict:
    """note → post → write, one after the other, then the synthesizer."""

    def step(step_id: str, instruction: str, tools: list[str], after: list[str]) -> dict:
        return {
            "id": step_id,
            "title": step_id.title(),
            "instruction": instruction,
            "role": "writer",
            "tools": tools,
            "depends_on": after,
        }

    return {
        "goal": "Notify and report",
        "steps": [
            step("note", "Write notes.md with the facts.", ["write_file"], []),
            step("post", f"Post 'done' to {url}.", ["http_post"], ["note"]),
            step("write", "Write the report from notes.md.", ["read_file"], ["post"]),
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


def finished(user, hook, *, policy: str = "auto") -> Run:
    """The run done once: notes written, the hook posted to once, the report and deliverable
    written. The executor's script holds each step's replies in the order the steps run."""
    url = f"{hook.url}/hook"
    script("again-planner").plan(plan(url))
    script("again-executor").tool_call(
        "write_file", {"path": "notes.md", "content": "Tea was first drunk in China."}
    ).text("Notes written.").tool_call(
        "http_post", {"url": url, "body": '{"status": "done"}'}
    ).text("Posted.").tool_call("read_file", {"path": "notes.md"}).text("Report v1.").text(
        "# Deliverable v1"
    )
    routes = {"planner": "scripted:again-planner", "executor": "scripted:again-executor"}
    run = run_create(
        owner=user,
        options=RunOptions(
            task="Notify the hook and report",
            routes=routes,
            tool_policy=policy,
            auto_tools=["http_post"] if policy == "auto" else [],
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    if policy == "ask":
        approval = Approval.objects.get(run=run, tool="http_post")
        approval_decide(user=user, approval=approval, approve=True)
        run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.result == "# Deliverable v1" and hook.count == 1
    return run


def test_a_step_alone_runs_again_and_the_finished_run_opens_for_it(make_user, hook):
    alice = make_user()
    run = finished(alice, hook)
    script("again-executor").tool_call("read_file", {"path": "notes.md"}).text("Report v2.")
    run = step_retry(run_id=run.pk, step_id="write", user=alice, downstream=False)
    assert run.status == RunStatus.RUNNING
    assert run.steps.get(step_id="write").status == StepStatus.QUEUED
    assert run.steps.get(step_id="synthesis").status == StepStatus.SUCCEEDED
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    steps = {s.step_id: s for s in run.steps.all()}
    assert steps["write"].output == "Report v2." and steps["write"].retries == 1
    assert steps["note"].retries == 0 and steps["post"].output == "Posted."
    # Not asked to: the deliverable stands as it was.
    assert run.result == "# Deliverable v1" and hook.count == 1
    retried = run.events.get(type="step.retried")
    assert retried.step_id == "write"
    assert retried.payload == {"by": "alice", "again": ["write"], "edited": False}


def test_with_the_steps_after_it_and_an_edited_instruction_it_is_a_new_plan_version(
    make_user, hook
):
    alice = make_user()
    run = finished(alice, hook)
    versions = run.plan_versions.count()
    script("again-executor").tool_call("read_file", {"path": "notes.md"}).text("Short.").text(
        "# Deliverable v2"
    )
    step_retry(
        run_id=run.pk,
        step_id="write",
        user=alice,
        instruction="Write it in one word.",
        downstream=True,
    )
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.result == "# Deliverable v2"
    latest = run.plan_versions.order_by("-number").first()
    assert run.plan_versions.count() == versions + 1 and latest.author == "person"
    assert "retry of 'write'" in latest.note and "alice" in latest.note
    assert [s["instruction"] for s in latest.plan["steps"] if s["id"] == "write"] == [
        "Write it in one word."
    ]
    assert run.steps.get(step_id="write").instruction == "Write it in one word."
    again = run.events.get(type="step.retried").payload["again"]
    assert again == ["write", "synthesis"]


def test_a_retried_irreversible_call_asks_again_instead_of_reusing_the_old_approval(
    make_user, hook
):
    alice = make_user()
    run = finished(alice, hook, policy="ask")
    first = Approval.objects.get(run=run, tool="http_post")
    url = f"{hook.url}/hook"
    script("again-executor").tool_call("http_post", {"url": url, "body": '{"status": "again"}'})
    step_retry(run_id=run.pk, step_id="post", user=alice, downstream=False)
    run = drive(run)
    # The earlier approval was for the earlier call: the retry's call waits for a new one.
    assert run.steps.get(step_id="post").status == StepStatus.WAITING
    second = Approval.objects.get(run=run, tool="http_post", state=Approval.State.PENDING)
    assert second.pk != first.pk and second.call_key.startswith("retry1:")
    assert second.arguments["body"] == '{"status": "again"}' and hook.count == 1
    script("again-executor").text("Posted again.")
    approval_decide(user=alice, approval=second, approve=True)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert hook.count == 2
    keys = [r["idempotency_key"] for r in hook.received]
    assert len(set(keys)) == 2 and "retry1" in keys[1]


def test_a_retried_step_approved_before_waits_for_a_person_again(make_user, hook):
    """One step that only posts, under the ask policy, approved and finished; retried with the
    steps after it, its model asks for the same call again (same reply, same call id): the step
    waits for a new decision. It used to find the old approval, resume at once and loop hot."""
    alice = make_user()
    url, body = f"{hook.url}/hook", '{"status": "done"}'
    script("posting-planner").plan(
        {
            "goal": "Notify",
            "steps": [
                {
                    "id": "post",
                    "title": "Post",
                    "instruction": f"Post 'done' to {url}.",
                    "role": "writer",
                    "tools": ["http_post"],
                    "depends_on": [],
                }
            ],
        }
    )
    executor = script("posting-executor")
    executor.tool_call("http_post", {"url": url, "body": body}).text("Posted.").text("Done.")
    run = run_create(
        owner=alice,
        options=RunOptions(
            task="Notify the hook",
            routes={"planner": "scripted:posting-planner", "executor": "scripted:posting-executor"},
            tool_policy="ask",
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    first = Approval.objects.get(run=run, tool="http_post")
    approval_decide(user=alice, approval=first, approve=True)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert hook.count == 1

    # The same reply again: the call's id is the same as the first time.
    executor = script("posting-executor")
    executor.tool_call("http_post", {"url": url, "body": body}).text("Posted again.").text("Done.")
    retried = step_retry(run_id=run.pk, step_id="post", user=alice, downstream=True)
    run = drive(retried)
    post = run.steps.get(step_id="post")
    assert post.status == StepStatus.WAITING
    since = run.events.get(type="step.retried").seq
    assert run.events.filter(type="step.started", seq__gt=since).count() == 1
    second = Approval.objects.get(run=run, tool="http_post", state=Approval.State.PENDING)
    assert second.call_key == "retry1:" + first.call_key
    assert hook.count == 1  # nothing posted without the new decision

    approval_decide(user=alice, approval=second, approve=True)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert hook.count == 2
    assert run.steps.get(step_id="post").output == "Posted again."


def test_what_cannot_be_retried_says_why(make_user, hook):
    alice = make_user()
    run = finished(alice, hook)
    with pytest.raises(InvalidTransition, match="no step 'nope'"):
        step_retry(run_id=run.pk, step_id="nope", user=alice)
    with pytest.raises(InvalidTransition, match="at most 4000"):
        step_retry(
            run_id=run.pk,
            step_id="write",
            user=alice,
            instruction="x" * (MAX_INSTRUCTION_CHARS + 1),
        )
    # Another person's run does not exist for them.
    with pytest.raises(Run.DoesNotExist):
        step_retry(run_id=run.pk, step_id="write", user=make_user("bob"))
    script("again-executor")  # nothing queued: the retried step is only queued, not run
    step_retry(run_id=run.pk, step_id="write", user=alice, downstream=False)
    with pytest.raises(InvalidTransition, match="only a step that has finished or failed"):
        step_retry(run_id=run.pk, step_id="write", user=alice)
    with pytest.raises(InvalidTransition, match="Step 'write' after it is queued"):
        step_retry(run_id=run.pk, step_id="post", user=alice, downstream=True)
    run_cancel(run.pk, alice)
    with pytest.raises(InvalidTransition, match="This run is cancelled"):
        step_retry(run_id=run.pk, step_id="note", user=alice)
    # Nothing was lost on the way: the history holds each refusal's run as it was.
    assert run.events.filter(type="step.retried").count() == 1


def test_a_fork_reuses_the_steps_before_it_and_never_posts_again(make_user, hook):
    alice = make_user()
    run = finished(alice, hook)
    fork = run_fork(run_id=run.pk, step_id="write", user=alice)
    assert fork.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert (fork.forked_from, fork.fork_step, fork.task) == (run, "write", run.task)
    steps = {s.step_id: s for s in fork.steps.all()}
    for reused in ("note", "post"):
        assert steps[reused].status == StepStatus.SUCCEEDED
        assert steps[reused].output == run.steps.get(step_id=reused).output
        assert steps[reused].reused_from == run
    assert steps["write"].status == StepStatus.PENDING and steps["write"].reused_from is None
    # The post's receipt came along, pointing at the original, under a key no call can claim.
    receipt = fork.receipts.get()
    assert receipt.reused_from == run.receipts.get()
    assert receipt.state == ToolReceipt.State.DONE and "reused-by-run" in receipt.idempotency_key
    assert list(fork.files.values_list("path", flat=True)) == ["notes.md"]
    assert set(fork.events.filter(type="step.reused").values_list("step_id", flat=True)) == {
        "note",
        "post",
    }

    script("again-executor").tool_call("read_file", {"path": "notes.md"}).text("Report v3.").text(
        "# Deliverable of the fork"
    )
    run_approve_plan(fork.pk)
    fork = drive(fork)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    assert fork.result == "# Deliverable of the fork"
    assert hook.count == 1  # posted once, by the original, for both runs
    # The fork's report step read the notes the original's first step wrote.
    read = fork.events.get(type="step.tool_result", step_id="write")
    assert "Tea was first drunk in China." in read.payload["content"]
    run.refresh_from_db()
    assert run.result == "# Deliverable v1" and run.status == RunStatus.SUCCEEDED


def test_a_fork_needs_its_inputs_done_and_keeps_the_reused_steps_as_they_are(make_user, hook):
    alice = make_user()
    run = finished(alice, hook)
    with pytest.raises(InvalidTransition, match="no step 'synthesis' to fork from"):
        run_fork(run_id=run.pk, step_id="synthesis", user=alice)
    with pytest.raises(Run.DoesNotExist):
        run_fork(run_id=run.pk, step_id="write", user=make_user("bob"))
    script("again-executor")
    step_retry(run_id=run.pk, step_id="post", user=alice, downstream=False)
    with pytest.raises(InvalidTransition, match="Step 'post', which 'write' depends on"):
        run_fork(run_id=run.pk, step_id="write", user=alice)
    # From the first step nothing is reused: the fork is the same plan, run afresh.
    fork = run_fork(run_id=run.pk, step_id="note", user=alice)
    assert not fork.steps.filter(reused_from__isnull=False).exists()
    assert not fork.receipts.exists() and not fork.files.exists()
