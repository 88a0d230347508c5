"""In the browser: write a suite of three tasks, run it in two arms, watch the experiment
progress, read the table and both plots, and open a run from the table."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import Experiment, Run

from . import test_accessibility as a11y
from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

SUITE = """name: three
description: three small tasks
tasks:
  - id: product
    task: Compute 17 * 23
    checks: [{type: number, value: 391}]
  - id: total-file
    task: Compute 1500 * 0.2 + 75, then write the result to total.txt
    checks: [{type: file, file: total.txt, contains: "375"}]
  - id: compare
    task: Compare tea and coffee
    checks: [{type: contains, text: coffee}, {type: judge, rubric: 'Names "tea" and "coffee".'}]
"""


def test_a_suite_runs_in_two_arms_and_its_results_are_read_and_followed(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.click("#evaluations-link")
    page.click("#new-suite")
    page.fill("#suite-content", SUITE)
    page.click("#save-suite")
    expect(page.locator("#suite-tasks h2")).to_have_text("3 tasks")
    assert a11y.serious_violations(page) == []

    page.fill("#concurrency", "2")
    page.click("#start-experiment")
    expect(page).to_have_url(re.compile(r"/evaluations/experiments/\d+/$"))
    results = page.locator("#experiment-results")
    expect(page.locator("#experiment-progress")).to_contain_text("of 6 runs checked")
    # htmx asks again every 2 s and swaps the figures in until the experiment has finished.
    expect(results).to_have_attribute("data-status", "finished", timeout=120_000)
    expect(page.locator("#experiment-progress")).to_contain_text("6 of 6 runs checked")

    experiment = Experiment.objects.get()
    for arm in ("agent", "plan"):
        runs = Run.objects.filter(experiment_slot__experiment=experiment, experiment_slot__arm=arm)
        row = page.locator(f'#arms-table tr[data-arm="{arm}"] td')
        expect(row.nth(2)).to_have_text(str(sum(r.model_calls for r in runs)))
    plan_calls = sum(r.model_calls for r in Run.objects.filter(experiment_slot__arm="plan"))
    agent_calls = sum(r.model_calls for r in Run.objects.filter(experiment_slot__arm="agent"))
    expect(
        page.locator('#ratios-table tr[data-arm="plan"] td[data-ratio="model_calls"]')
    ).to_have_text(str(round(plan_calls / agent_calls, 2)))
    expect(page.locator("#cost-plot svg g.point")).to_have_count(2)
    expect(page.locator("#wall-plot svg rect.bar")).to_have_count(6)
    expect(page.locator('#tasks-table tr[data-task="product"] .slot-passed')).to_have_count(2)
    # The judge judged one task per arm, apart from the arm's own figures.
    for arm in ("agent", "plan"):
        expect(page.locator(f'#arms-table td[data-judging="{arm}"]')).to_contain_text("1 call, ")

    assert a11y.serious_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 900})
    assert a11y.horizontal_overflow(page) == 0
    page.set_viewport_size({"width": 1280, "height": 900})

    link = page.locator('#tasks-table tr[data-task="total-file"] td[data-arm="plan"] a.slot-run')
    run_id = experiment.slots.get(arm="plan", task_index=1).run_id
    expect(link).to_have_text(f"run {run_id}")
    link.click()
    expect(page).to_have_url(re.compile(rf"/runs/{run_id}/$"))
    expect(page.locator("#run-status")).to_have_text("succeeded")
    assert page.js_errors == []
