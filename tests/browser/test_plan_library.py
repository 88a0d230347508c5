"""In the browser, learning from the past: a task like one that succeeded before is offered
that run's plan as the person types ("start from …"), which makes a run of that plan for
review without the planner; planned instead, the planner is given it as an example, and the
run page says so and links to it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.core.run_options import RunOptions
from planner_ui.models import Run
from planner_ui.services.runs import run_create

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

PAST = "Research the weather in Paris, then write a short summary"
SIMILAR = "Research the weather in Lyon and write a short summary"


def test_start_from_a_past_plan_or_plan_with_it_as_an_example(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.fill("#id_task", PAST)
    expect(page.locator(".start-from")).to_have_count(0)  # nothing in the past yet
    page.click("#plan-it")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    expect(page.locator("#plan-examples")).to_have_count(0)
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    past = Run.objects.get()

    # Planned from scratch, a similar task's planner is given the past plan as an example.
    page.goto(f"{daphne_url}/")
    submit_task(page, SIMILAR)
    examples = page.locator("#plan-examples")
    expect(examples).to_contain_text("The planner was given 1 past plan")
    expect(examples.locator("a.plan-example")).to_have_attribute("href", f"/runs/{past.pk}/")
    planned = Run.objects.latest("pk")
    assert planned.plan_examples[0]["id"] == past.pk and planned.planner_model

    # Typed again, the form offers to start from it.
    page.goto(f"{daphne_url}/")
    page.fill("#id_task", SIMILAR)
    start = page.locator(f"#start-from-run-{past.pk}")
    expect(start).to_be_visible(timeout=10_000)
    start.click()
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    expect(page.locator("#started-from")).to_contain_text(f"Started from the plan of run {past.pk}")
    started = Run.objects.latest("pk")
    assert started.started_from_id == past.pk and started.task == SIMILAR
    assert started.planner_model == ""  # the planner was skipped
    assert started.plan_versions.get().plan == past.approved_plan.plan
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    page.click("#started-from-link")
    expect(page.locator("#run-summary h1")).to_have_text(f"Run {past.pk}")


def test_the_history_searches_as_the_person_types_and_keeps_the_filters_in_its_url(
    page, daphne_url, celery_worker_process, make_user
):
    alice = make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    tasks = [PAST, SIMILAR, "Compute the compound interest on 1000 EUR over ten years"]
    runs = [run_create(owner=alice, options=RunOptions(task=task)) for task in tasks]

    page.click("text=History")
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(3)
    page.fill("#filter-q", "weather summ")
    expect(rows).to_have_count(2)
    expect(page).to_have_url(f"{daphne_url}/runs/?q=weather+summ")
    page.fill("#filter-q", "lyon")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(str(runs[1].pk))
    expect(page.locator("#filter-q")).to_be_focused()  # the box was not swapped under the hand
    page.select_option("#filter-status", "succeeded")
    expect(page.locator("#history-none")).to_be_visible()
    expect(page).to_have_url(f"{daphne_url}/runs/?q=lyon&status=succeeded")
    page.reload()  # the URL holds the filters
    expect(page.locator("#filter-q")).to_have_value("lyon")
    expect(page.locator("#history-none")).to_be_visible()
    page.click("text=Show every run.")
    expect(rows).to_have_count(3)
    assert page.js_errors == []
