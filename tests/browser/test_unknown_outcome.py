"""In the browser: a post whose worker died before it learned the outcome waits in the inbox
for a person, who says it happened; the run finishes and nothing is posted again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.services.events import user_broadcast
from planner_ui.services.runs import run_approve_plan, run_create
from tests.conftest import wait_until
from tests.fakes.receiver import Receiver

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_decide_an_unknown_outcome_from_the_inbox(
    page, daphne_url, celery_worker_process, make_user
):
    alice = make_user("alice", "pw-for-tests-1")
    with Receiver() as receiver:
        run = run_create(
            owner=alice,
            options=RunOptions(
                task=f"Summarize the benefits of tea and post the summary to {receiver.url}/hook",
                tool_policy="auto",
                auto_tools=["http_post"],
            ),
        )
        wait_until(
            lambda: Run.objects.get(pk=run.pk).status == RunStatus.AWAITING_PLAN_APPROVAL,
            what="the plan",
        )
        step = next(s for s in run.steps.all() if "http_post" in s.tools)
        # What a worker killed during the post leaves: its receipt, in flight, no result.
        ToolReceipt.objects.create(
            run=run,
            step_id=step.step_id,
            idempotency_key=f"agentsite-run{run.pk}-{step.step_id}-1:call_1",
            tool="http_post",
            effect="send",
            arguments={"url": f"{receiver.url}/hook"},
            decision="run",
            authorized_by="the run's policy",
        )
        run_approve_plan(run.pk)

        login(page, daphne_url, "alice", "pw-for-tests-1")
        page.goto(daphne_url + "/approvals/")
        card = page.locator("#inbox-pending .approval-kind-outcome")
        expect(card).to_be_visible(timeout=60_000)
        expect(card).to_contain_text("stopped before it learned the outcome")
        expect(card.locator("input.tick")).to_have_count(0)  # one of three answers, not a tick
        card.get_by_role("button", name="It happened").click()
        notice = page.locator("#inbox-list .notice")
        expect(notice).to_contain_text("http_post: it happened.")
        # A new request arrives over the socket and the list refreshes: the new card shows,
        # and the outcome of the person's own decision stays on top.
        Approval.objects.create(
            run=run, step_id="later", call_key="1:c", tool="send_email", effect="send", arguments={}
        )
        user_broadcast(alice.pk, {"type": "approvals.changed"})
        expect(page.locator("#inbox-pending .approval")).to_contain_text("send_email")
        expect(notice).to_contain_text("http_post: it happened.")
        Approval.objects.filter(step_id="later").delete()  # not a call of this run's plan

        run = wait_until(
            lambda: (r := Run.objects.get(pk=run.pk)).is_finished and r, timeout=60, what="the run"
        )
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert receiver.count == 0
        assert run.receipts.get().state == ToolReceipt.State.DONE
        page.goto(f"{daphne_url}/runs/{run.pk}/")
        expect(page.locator("#run-status")).to_have_text("succeeded")
