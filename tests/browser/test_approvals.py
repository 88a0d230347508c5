"""In the browser: one irreversible call approved, another rejected, from the run page, with
the header's badge following along; what arrives at the far end is counted."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Approval, Run
from tests.fakes.receiver import Receiver

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_approve_one_call_and_reject_another_from_the_page(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    with Receiver() as receiver:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        page.fill(
            "#id_task",
            f"1. Post a note about tea to {receiver.url}/tea\n"
            f"2. Post a note about coffee to {receiver.url}/coffee",
        )
        expect(page.locator('input[name="tool_policy"][value="ask"]')).to_be_checked()
        page.click("#task-form button[type=submit]")
        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        page.click("#approve-plan")

        # Both posts wait for a decision: their cards, the steps' status and the badge say so.
        pending = page.locator("#approvals-pending .approval")
        expect(pending).to_have_count(2, timeout=30_000)
        expect(page.locator("#approvals-badge")).to_have_text("2")
        run = Run.objects.get()
        for approval in Approval.objects.filter(run=run):
            expect(page.locator(f"#step-{approval.step_id}")).to_have_attribute(
                "data-status", "waiting"
            )
        assert receiver.count == 0
        tea = pending.filter(has_text=f"{receiver.url}/tea")
        tea.locator(".approve-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Approved http_post.")
        expect(page.locator("#approvals-badge")).to_have_text("1")

        coffee = page.locator("#approvals-pending .approval").filter(
            has_text=f"{receiver.url}/coffee"
        )
        coffee.locator('input[name="reason"]').fill("Coffee notes go out on Fridays")
        coffee.locator(".reject-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Rejected http_post.")

        expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
        assert [r["path"] for r in receiver.received] == ["/tea"]
    expect(page.locator("#approvals-badge")).to_be_hidden()
    expect(page.locator("#receipts tbody tr")).to_have_count(1)
    expect(page.locator("#receipts")).to_contain_text("alice")
    decided = page.locator("#approvals-decided .approval")
    expect(decided).to_have_count(2)
    rejected_card = decided.filter(has_text="/coffee")
    expect(rejected_card).to_contain_text("Rejected by alice")
    expect(rejected_card).to_contain_text("Coffee notes go out on Fridays")
    # The executor was told why, as the tool's result.
    rejected = run.events.get(type="step.tool_result", payload__is_error=True)
    assert "Coffee notes go out on Fridays" in rejected.payload["content"]
    assert page.js_errors == []


def test_cancel_a_run_waiting_for_approval_from_the_inbox_page(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Write a two-line status note and email it to bob@example.com")
    page.click("#approve-plan")
    expect(page.locator("#approvals-badge")).to_have_text("1", timeout=30_000)
    run = Run.objects.get()

    # The inbox lists it with its run; the run page's Cancel withdraws it.
    page.click("#approvals-link")
    expect(page.locator("#inbox-pending .approval")).to_contain_text(f"run {run.pk}")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-run")
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(page.locator("#run-error")).to_contain_text("Cancelled by alice.")
    expect(page.locator("#approvals-badge")).to_be_hidden()
    expect(page.locator("#approvals-decided .approval")).to_contain_text("Withdrawn")
    assert Approval.objects.get(run=run).state == Approval.State.WITHDRAWN
    assert page.js_errors == []
