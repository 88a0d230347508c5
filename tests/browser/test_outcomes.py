"""In the browser: a run whose post a person rejected ends "succeeded with warnings", in its
own colour and with why, in the run page's header as it finishes and in the history, where a
filter finds it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run
from tests.fakes.receiver import Receiver

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_a_rejected_post_ends_with_warnings_in_the_header_and_the_history(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    with Receiver() as receiver:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        submit_task(page, f"Post a note about coffee to {receiver.url}/coffee")
        page.click("#approve-plan")
        card = page.locator("#approvals-pending .approval")
        expect(card).to_have_count(1, timeout=30_000)
        card.locator('input[name="reason"]').fill("Coffee notes go out on Fridays")
        card.locator(".reject-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Rejected http_post.")

        badge = page.locator("#run-header #run-status")
        expect(badge).to_have_text("succeeded with warnings", timeout=60_000)
        assert receiver.count == 0
    run = Run.objects.get()
    step = run.approvals.get().step_id
    expect(badge).to_have_class("badge status-succeeded_with_warnings")
    reason = page.locator("#run-header #run-status-reason")
    expect(reason).to_contain_text(f"Call rejected (http_post in '{step}')")
    # Its own colour: neither the green of a success nor the yellow of a running run.
    colour = badge.evaluate("(el) => getComputedStyle(el).backgroundColor")
    assert colour == "rgb(255, 230, 207)", colour
    expect(page.locator("#run-warnings")).to_contain_text("Coffee notes go out on Fridays")

    page.click("text=History")
    row = page.locator("table.runs tbody tr").filter(has_text=f"{run.pk}")
    expect(row.locator(".status-succeeded_with_warnings")).to_have_text("succeeded with warnings")
    expect(row.locator(".outcome-reason")).to_have_text(run.outcome_reason)
    page.select_option("#filter-outcome", "succeeded")
    expect(page).to_have_url(f"{daphne_url}/runs/?outcome=succeeded")
    expect(page.locator("#history-none")).to_be_visible()
    # htmx wires up swapped-in content only once it settles (20 ms later): a change before that
    # is lost, so wait for the settle as a person's slower hand always does.
    expect(page.locator("#run-history")).not_to_have_class(re.compile("htmx-settling"))
    page.select_option("#filter-outcome", "succeeded_with_warnings")
    expect(page.locator("table.runs tbody tr")).to_have_count(1)
    expect(page.locator("table.runs .outcome-reason")).to_have_text(run.outcome_reason)
    assert page.js_errors == []
