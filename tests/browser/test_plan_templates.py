"""In the browser: a finished run's plan saved as a template with a {city} parameter, run from
the form its parameters make for two cities, and both runs listed under the template with
their values and the link back from each run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import PlanTemplate, Run

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

TASK = "Research the weather in Paris, then write a short summary"


def test_save_a_plan_as_a_template_and_run_it_for_two_cities(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, TASK)
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    first = Run.objects.get()

    page.click("#save-as-template")
    page.get_by_label("Name").fill("City weather")
    page.locator("#id_literal_0").fill("Paris")
    page.locator("#id_parameter_0").fill("city")
    page.click("#save-template")
    expect(page.locator("h1")).to_contain_text("City weather")
    expect(page.locator("#template-task")).to_contain_text("Research the weather in {city}")
    template = PlanTemplate.objects.get()
    assert template.versions.get().source_run == first

    for city in ("Lyon", "Oslo"):
        page.goto(f"{daphne_url}/templates/{template.pk}/")
        page.locator("#id_param_city").fill(city)
        page.click("#run-template")
        # The planner is skipped: the filled plan waits for approval at once.
        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        expect(page.locator("#from-template")).to_contain_text(
            f"City weather v1 with city = {city}"
        )
        expect(page.locator(".task").first).to_contain_text(f"Research the weather in {city}")
        page.click("#approve-plan")
        expect(page.locator("#result")).to_be_visible(timeout=60_000)

    runs = list(Run.objects.filter(template_version__template=template).order_by("pk"))
    assert [r.template_values for r in runs] == [{"city": "Lyon"}, {"city": "Oslo"}]
    assert all(r.status == "succeeded" and r.planner_model == "" for r in runs)

    # Back to the template from the last run's page, and both runs are under it.
    page.click("#from-template-link")
    table = page.locator("#template-runs-table")
    for run, city in zip(runs, ("Lyon", "Oslo"), strict=True):
        row = table.locator(f'tr[data-run="{run.pk}"]')
        expect(row.locator(".template-values")).to_have_text(f"city = {city}")
        expect(row.locator(".status-cell")).to_contain_text("succeeded")
        row.get_by_role("link", name=f"run {run.pk}").click()
        expect(page.locator("#from-template")).to_contain_text(f"city = {city}")
        page.go_back()
    assert page.js_errors == []
