"""Editing a plan in the browser, from the keyboard-friendly forms: rename, add and connect a
step, a refused cycle, the diff, approval of exactly the edited version, and proof that the
executor worked from the edited instruction."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run, RunEvent
from tests.browser.test_run_flow import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_edit_the_plan_then_run_the_edited_version(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("erin", "pw-for-tests-4")
    login(page, daphne_url, "erin", "pw-for-tests-4")
    page.fill("#id_task", "Research the history of tea, then write a short summary")
    page.click("#task-form button[type=submit]")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    page.evaluate("window.__notReloaded = true")

    # Rename a step and reword its instruction.
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Edit step").click()
    card.get_by_label("Title").fill("Write a tea haiku")
    card.get_by_label("Instruction").fill("Write a haiku about the history of tea.")
    card.get_by_role("button", name="Save step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    expect(page.locator("#step-write-short-summary .step-title")).to_have_text("Write a tea haiku")

    # Add a step after the research, then make the haiku wait for it too.
    page.locator("#add-step summary").click()
    page.fill("#new-title", "Check dates")
    page.fill("#new-instruction", "Check the dates in the research.")
    page.select_option("#new-role", "critic")
    page.select_option("#new-deps", ["research-history-tea"])
    page.get_by_role("button", name="Add step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")
    expect(page.locator("#step-check-dates")).to_be_visible()
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Edit step").click()
    card.locator("select[name=depends_on]").select_option("check-dates")
    card.get_by_role("button", name="Add dependency").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 4")
    assert page.evaluate("window.planGraph.cy.edges().length") == 4

    # A cycle is refused, named, and changes nothing.
    card = page.locator("#step-research-history-tea")
    card.locator("summary", has_text="Edit step").click()
    card.locator("select[name=depends_on]").select_option("write-short-summary")
    card.get_by_role("button", name="Add dependency").click()
    expect(page.locator("#plan-notice")).to_contain_text("would create a cycle")
    run = Run.objects.get()
    assert run.plan_versions.count() == 4

    # The diff between the planner's version and the current one.
    page.select_option("#diff-from", "1")
    page.select_option("#diff-to", "4")
    page.get_by_role("button", name="Show changes").click()
    diff = page.locator("#plan-diff")
    expect(diff).to_contain_text("Steps added: check-dates")
    expect(diff).to_contain_text("Write a tea haiku")
    expect(diff).to_contain_text("check-dates → write-short-summary")
    assert page.evaluate("window.__notReloaded === true"), "editing should not reload the page"

    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.approved_plan.number == 4
    # The executor was asked with the edited instruction: it is in the request it answered.
    haiku = run.steps.get(step_id="write-short-summary")
    assert haiku.instruction == "Write a haiku about the history of tea."
    assert "haiku about the history of tea" in haiku.output.lower()
    check = run.steps.get(step_id="check-dates")
    assert check.finished_at <= haiku.started_at
    assert RunEvent.objects.filter(run=run, type="step.succeeded", step_id="check-dates").exists()


def _node_point(page, step_id: str) -> tuple[float, float]:
    box = page.locator("#plan-graph").bounding_box()
    pos = page.evaluate(f"window.planGraph.cy.getElementById('{step_id}').renderedPosition()")
    return box["x"] + pos["x"], box["y"] + pos["y"]


def _drag(page, source: str, target: str) -> None:
    x1, y1 = _node_point(page, source)
    x2, y2 = _node_point(page, target)
    page.mouse.move(x1, y1)
    page.mouse.down()
    page.mouse.move((x1 + x2) / 2, (y1 + y2) / 2, steps=8)
    page.mouse.move(x2, y2, steps=8)
    page.mouse.up()


def test_connect_by_dragging_and_remove_by_clicking_in_the_graph(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("fay", "pw-for-tests-5")
    login(page, daphne_url, "fay", "pw-for-tests-5")
    page.fill("#id_task", "1. Research tea\n2. Research coffee\n3. Research mate")
    page.click("#task-form button[type=submit]")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    run = Run.objects.get()
    deps = {s.step_id: list(s.depends_on) for s in run.steps.exclude(role="synthesizer")}
    roots = [sid for sid, d in deps.items() if not d]
    assert len(roots) >= 2
    first, second = roots[0], roots[1]

    _drag(page, first, second)
    expect(page.locator("#plan-notice")).to_contain_text(f"added dependency {first} → {second}")
    assert run.steps.get(step_id=second).depends_on == [first]
    edge_id = f"{first}->{second}"
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    assert page.evaluate(f"window.planGraph.cy.getElementById('{edge_id}').nonempty()")

    # Dragging back would close a cycle: the graph refuses to draw it, nothing is sent.
    _drag(page, second, first)
    page.wait_for_timeout(500)
    assert run.plan_versions.count() == 2

    # Click the arrow, confirm, and it is gone.
    page.once("dialog", lambda dialog: dialog.accept())
    mid = page.evaluate(f"window.planGraph.cy.getElementById('{edge_id}').renderedMidpoint()")
    box = page.locator("#plan-graph").bounding_box()
    page.mouse.click(box["x"] + mid["x"], box["y"] + mid["y"])
    expect(page.locator("#plan-notice")).to_contain_text(f"removed dependency {first} → {second}")
    assert run.steps.get(step_id=second).depends_on == []


def test_ask_the_planner_to_revise_then_accept(page, daphne_url, celery_worker_process, make_user):
    make_user("gus", "pw-for-tests-6")
    login(page, daphne_url, "gus", "pw-for-tests-6")
    page.fill("#id_task", "Research tea and coffee")
    page.click("#task-form button[type=submit]")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    page.locator("summary", has_text="Ask the planner to revise").click()
    page.fill("#revision-note", "and mate")
    page.click("#request-revision")
    # The proposal arrives over the WebSocket, as a diff to accept or discard.
    expect(page.locator("#plan-proposal")).to_contain_text(
        "Steps added: research-mate", timeout=30_000
    )
    page.click("#accept-proposal")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2: revised on request")
    expect(page.locator("#step-research-mate")).to_be_visible()
    expect(page.locator("#version-2")).to_contain_text("by the planner")
