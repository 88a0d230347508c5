"""The estimate and the critical path in a real browser, before approval and after the run."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run
from planner_ui.selectors.estimate import run_estimate
from planner_ui.services.events import event_append
from tests.browser.flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_the_estimate_and_critical_path_show_before_approval_and_actuals_after(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.fill("#id_task", "1. Research tea\n2. Research coffee\n3. Compute 3 * 95 + 2 * 40")
    page.click("#plan-it")

    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    run = Run.objects.get()
    estimate = run_estimate(run).plan
    expect(page.locator("#estimate-summary")).to_contain_text(
        f"Estimate to execute this plan: {estimate.calls} model calls"
    )
    expect(page.locator("#estimate-critical-path")).to_contain_text(
        " → ".join(estimate.critical_path) + f" ({estimate.critical_calls} calls deep)"
    )
    path = page.evaluate("window.planGraph.criticalPath()")
    assert path == list(estimate.critical_path)
    assert path[-1] == "synthesis"
    critical_arrows = page.evaluate(
        "window.planGraph.cy.edges('[critical = \"yes\"]').map((e) => e.id())"
    )
    assert critical_arrows == [f"{a}->{b}" for a, b in zip(path, path[1:], strict=False)]
    expect(page.locator(".plan-graph-legend .legend-critical")).to_be_visible()

    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)
    # The run's end refreshes the page's live part: the table of actual figures arrives with it.
    # Once the plan runs, the estimate folds to its heading line; opened, the table is there.
    table = page.locator("#estimate-vs-actual")
    page.locator("#run-estimate > summary").click()
    expect(table).to_be_visible()
    expect(page.locator("#estimate-summary")).to_contain_text("Estimated to execute this plan")
    for step in run.steps.all():
        step.refresh_from_db()
        row = table.locator(f'tr[data-step-id="{step.step_id}"]')
        expect(row.locator("td").first).to_have_text(
            re.compile(rf"^{step.model_calls} / {estimate.step(step.step_id).calls}$")
        )

    # The table is fetched when the estimate opens; a refresh of the page keeps it open and
    # fetches it afresh.
    table.evaluate("(el) => { el.dataset.old = 'yes'; }")
    event_append(run.pk, "run.status", {"status": run.status})
    expect(page.locator("#estimate-vs-actual[data-old]")).to_have_count(0)
    expect(table).to_be_visible()
    expect(page.locator("#run-estimate")).to_have_attribute("open", "")
    assert page.js_errors == []
