"""In the browser: a step fails, the planner revises what is left, the person reviews the diff
and accepts it, and the run finishes with the failed step routed around."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_review_a_re_plan_after_a_failure_and_go_on(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    # The file does not exist: the step that reads it cannot proceed.
    page.fill("#id_task", "Read missing.txt and summarize it, and research tea")
    page.select_option("#id_replan_mode", "review")
    page.click("#plan-it")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    page.click("#approve-plan")

    replan = page.locator("#replan")
    expect(replan.locator("#accept-replan")).to_be_visible(timeout=60_000)
    expect(replan).to_contain_text("needs the file 'missing.txt', which no step of this run wrote")
    expect(replan).to_contain_text("read-missing-txt")
    run = Run.objects.get()
    assert run.replanning and run.plan_versions.count() == 1
    replan.locator("#accept-replan").click()
    expect(page.locator("#plan-notice")).to_contain_text("Re-plan accepted as version 2")

    expect(page.locator("#run-status")).to_have_text("succeeded with warnings", timeout=60_000)
    expect(page.locator("#run-status-reason")).to_have_text(
        "Step 'read-missing-txt' failed and was re-planned around"
    )
    expect(page.locator("#version-2")).to_contain_text("replanner")
    expect(page.locator("#step-read-missing-txt")).to_have_attribute("data-status", "skipped")
    expect(page.locator("#step-read-missing-txt .step-error")).to_contain_text(
        "dropped by re-plan v2"
    )
    # The graph marks what the re-plan changed, with the failure that led to it.
    revised = page.evaluate(
        "window.planGraph.cy.nodes('[revised = \"yes\"]').map((n) => [n.id(), n.data('why')])"
    )
    assert revised and all("read-missing-txt" in why for _, why in revised)
    assert page.js_errors == []
