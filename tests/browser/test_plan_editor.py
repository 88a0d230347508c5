"""Editing a plan in the browser, from the keyboard-friendly forms: rename, add and connect a
step, a refused cycle, the diff, approval of exactly the edited version, and proof that the
executor worked from the edited instruction."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run, RunEvent
from tests.browser.flows import login, open_step, step_in_graph, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_edit_the_plan_then_run_the_edited_version(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("erin", "pw-for-tests-4")
    login(page, daphne_url, "erin", "pw-for-tests-4")
    submit_task(page, "Research the history of tea, then write a short summary")
    page.evaluate("window.__notReloaded = true")

    # Rename a step and reword its instruction.
    open_step(page, "write-short-summary")
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
    expect(step_in_graph(page, "check-dates")).to_be_visible()
    open_step(page, "write-short-summary")
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Edit step").click()
    card.locator("select[name=depends_on]").select_option("check-dates")
    card.get_by_role("button", name="Add dependency").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 4")
    assert page.evaluate("window.planGraph.cy.edges().length") == 4

    # A cycle is refused, named, and changes nothing.
    open_step(page, "research-history-tea")
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
    page.locator("#plan-graph").scroll_into_view_if_needed()
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
    submit_task(page, "1. Research tea\n2. Research coffee\n3. Research mate")
    run = Run.objects.get()
    # Add a step with the form, then connect it by dragging onto it from a research step.
    page.locator("#add-step summary").click()
    page.fill("#new-title", "Compare caffeine")
    page.fill("#new-instruction", "Compare the caffeine of the three drinks.")
    page.select_option("#new-role", "critic")
    page.get_by_role("button", name="Add step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    first = run.steps.exclude(role="synthesizer").first().step_id
    second = "compare-caffeine"
    page.wait_for_function(f"() => window.planGraph.cy.getElementById('{second}').nonempty()")

    _drag(page, first, second)
    expect(page.locator("#plan-notice")).to_contain_text(f"added dependency {first} → {second}")
    assert run.steps.get(step_id=second).depends_on == [first]
    edge_id = f"{first}->{second}"
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")
    assert page.evaluate(f"window.planGraph.cy.getElementById('{edge_id}').nonempty()")

    # Dragging back would close a cycle: the graph refuses that arrow (snapping may still
    # catch another step on the way, which is a legal edit), and the cycle never exists.
    _drag(page, second, first)
    page.wait_for_timeout(500)
    assert second not in run.steps.get(step_id=first).depends_on
    assert page.evaluate(f"window.planGraph.cy.getElementById('{second}->{first}').empty()")

    # Click the arrow, confirm, and it is gone.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#plan-graph").scroll_into_view_if_needed()
    mid = page.evaluate(f"window.planGraph.cy.getElementById('{edge_id}').renderedMidpoint()")
    box = page.locator("#plan-graph").bounding_box()
    page.mouse.click(box["x"] + mid["x"], box["y"] + mid["y"])
    expect(page.locator("#plan-notice")).to_contain_text(f"removed dependency {first} → {second}")
    assert run.steps.get(step_id=second).depends_on == []


def test_ask_the_planner_to_revise_then_accept(page, daphne_url, celery_worker_process, make_user):
    make_user("gus", "pw-for-tests-6")
    login(page, daphne_url, "gus", "pw-for-tests-6")
    submit_task(page, "Research tea and coffee")
    page.locator("summary", has_text="Ask the planner to revise").click()
    page.fill("#revision-note", "and mate")
    page.click("#request-revision")
    # The proposal arrives over the WebSocket, as a diff to accept or discard.
    expect(page.locator("#plan-proposal")).to_contain_text(
        "Steps added: research-mate", timeout=30_000
    )
    page.click("#accept-proposal")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2: revised on request")
    expect(step_in_graph(page, "research-mate")).to_be_visible()
    expect(page.locator("#version-2")).to_contain_text("by the planner")


def test_a_sixty_step_plan_stays_readable(page, daphne_url, celery_worker_process, make_user):
    make_user("hal", "pw-for-tests-7")
    login(page, daphne_url, "hal", "pw-for-tests-7")
    submit_task(page, "Research tea")
    # Six layers of ten, each step after two of the layer before it.
    steps = []
    for layer in range(6):
        for i in range(10):
            deps = [f"s{layer - 1}-{i}", f"s{layer - 1}-{(i + 3) % 10}"] if layer else []
            steps.append(
                {
                    "id": f"s{layer}-{i}",
                    "title": f"Step {layer}.{i}",
                    "instruction": "Do it.",
                    "role": "researcher",
                    "depends_on": deps,
                }
            )
    page.locator("summary", has_text="Import a plan").click()
    page.fill("#plan-json", json.dumps({"goal": "big", "steps": steps}))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#plan-notice")).to_contain_text("imported from JSON")
    assert page.evaluate("window.planGraph.cy.nodes().length") == 61  # and the synthesizer
    page.click("#plan-graph-fit")
    # After fit, every node is inside the visible area, at a zoom that still shows the boxes.
    inside = page.evaluate("""() => {
        const cy = window.planGraph.cy, ext = cy.extent();
        return cy.nodes().every((n) => { const p = n.position();
            return p.x >= ext.x1 && p.x <= ext.x2 && p.y >= ext.y1 && p.y <= ext.y2; });
    }""")
    assert inside
    assert page.evaluate("window.planGraph.cy.zoom()") >= 0.2
    layers = page.evaluate("""() => new Set(window.planGraph.cy.nodes().map(
        (n) => Math.round(n.position().x))).size""")
    assert layers == 7  # laid out left to right, one column per layer


def test_a_step_editor_keeps_what_was_typed_when_another_tab_changes_the_plan(
    page, daphne_url, celery_worker_process, make_user
):
    """A step's forms are fetched when its editor opens; a live refresh fetches them again, for
    the new version, and puts back what the person had typed but not saved."""
    from planner_ui.core.edits import UpdateStep
    from planner_ui.services.plans import plan_edit

    make_user("fay", "pw-for-tests-5")
    login(page, daphne_url, "fay", "pw-for-tests-5")
    submit_task(page, "Research the history of tea, then write a short summary")
    open_step(page, "write-short-summary")
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Edit step").click()
    card.get_by_label("Title").fill("Typed, not saved")
    expect(card.locator("input[name=base_version]").first).to_have_value("1")

    run = Run.objects.get()
    plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=UpdateStep("research-history-tea", title="Renamed in another tab"),
    )
    expect(page.locator("#step-research-history-tea .step-title")).to_have_text(
        "Renamed in another tab"
    )
    card = page.locator("#step-write-short-summary")
    expect(card.locator("details.step-editor")).to_have_attribute("open", "")
    expect(card.locator("input[name=base_version]").first).to_have_value("2")
    expect(card.get_by_label("Title")).to_have_value("Typed, not saved")
    card.get_by_role("button", name="Save step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")
    assert run.steps.get(step_id="write-short-summary").title == "Typed, not saved"
    assert page.js_errors == []
