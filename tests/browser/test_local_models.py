"""In the browser, as an admin: start a real GGUF model from the form's models section, watch
it load, make it the default, and have it plan a run."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import LocalModel, Run
from tests.providers.test_local_model import smollm2

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_an_admin_starts_a_local_model_from_the_form_and_it_plans(
    page, daphne_url, celery_worker_process, model_supervisor, django_user_model
):
    django_user_model.objects.create_user("root", password="pw-for-tests-1", is_staff=True)
    login(page, daphne_url, "root", "pw-for-tests-1")
    page.click("#run-options summary")
    expect(page.locator("#providers")).to_contain_text("Local")
    page.fill("#local-model-path", str(smollm2()))
    page.check("#local-model-default")
    page.click("#local-model-start")
    route = "local:SmolLM2-135M-Instruct.Q4_1"
    expect(page.locator("#local-models .notice")).to_have_text(
        f"Starting SmolLM2-135M-Instruct.Q4_1: it answers as {route}."
    )
    # The panel looks again by itself until the supervisor has it loaded.
    row = page.locator("#local-models tbody tr")
    expect(row).to_have_attribute("data-state", "ready", timeout=120_000)
    expect(row).to_contain_text("every part of new runs")
    expect(page.locator("#local-models .notice")).to_have_count(0)  # it said what it had to

    page.reload()
    page.click("#run-options summary")
    expect(page.locator("#providers")).to_contain_text(f"ready: {route}")
    expect(page.locator("#id_route_planner")).to_have_attribute("placeholder", route)
    page.fill("#id_task", "Research tea and coffee, then write a short summary")
    page.fill("#id_route_executor", "offline")  # a 135M model writes slowly and poorly
    page.click("#plan-it")
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#run-planner-model")).to_have_text(route)
    run = Run.objects.get()
    # Its plan waits for approval, or was refused by the same checks as any plan, saying
    # why: a 135M model often repeats a step id. Either way the local model planned.
    approve = page.locator("#approve-plan")
    refused = page.get_by_text("The planner's plan was invalid twice")
    expect(approve.or_(refused)).to_be_visible(timeout=120_000)
    # Accounted as the local model's calls, at no cost.
    calls = run.calls.filter(role="planner")
    assert calls.exists() and {(c.provider, c.cost_usd) for c in calls} == {("local", 0)}

    page.goto(daphne_url + "/")
    page.click("#run-options summary")
    page.click("#local-models .local-model-stop")
    expect(page.locator("#local-models .notice")).to_have_text(
        "Stopping SmolLM2-135M-Instruct.Q4_1."
    )
    expect(row).to_have_attribute("data-state", "stopped", timeout=30_000)
    assert not LocalModel.objects.get().wanted
