"""In the browser: re-run a finished run as a single agent and compare the two."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_re_run_as_a_single_agent_and_compare(page, daphne_url, celery_worker_process, make_user):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Research tea and coffee, then write a short summary")
    page.click("#approve-plan")
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
    original = Run.objects.get()

    page.click("#start-baseline")
    expect(page.locator("#baseline-of")).to_contain_text(f"run {original.pk}")
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
    baseline = Run.objects.get(baseline_of=original)
    assert baseline.steps.count() == 1

    page.click("#compare-link")
    table = page.locator("#compare-table")
    expect(table).to_be_visible()
    original.refresh_from_db()
    baseline.refresh_from_db()
    expect(table.locator('tr[data-row="calls"] td')).to_have_text(
        [
            str(original.model_calls),
            str(baseline.model_calls),
            str(round(original.model_calls / baseline.model_calls, 2)),
        ]
    )
    expect(table.locator('tr[data-row="outcome"]')).to_contain_text("succeeded")
    assert page.js_errors == []
