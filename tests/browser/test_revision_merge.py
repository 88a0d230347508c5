"""In the browser: a person's edits survive the planner's revision, and where both changed the
same thing, the person chooses.

The offline planner reads a bare note ('and mate') as more of the task and plans it afresh, as a
model that ignored the current plan would: without the merge, accepting dropped every edit."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from planner_ui.core.plan import Plan
from planner_ui.models import Run
from tests.browser.flows import login, open_step, step_in_graph, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def edit_step(page: Page, step_id: str, **fields: str) -> None:
    open_step(page, step_id)
    card = page.locator(f"#step-{step_id}")
    card.locator("summary", has_text="Edit step").click()
    for label, value in fields.items():
        card.get_by_label(label.capitalize()).fill(value)
    card.get_by_role("button", name="Save step").click()


def ask_for_revision(page: Page, note: str) -> None:
    page.locator("summary", has_text="Ask the planner to revise").click()
    page.fill("#revision-note", note)
    page.click("#request-revision")
    expect(page.locator("#accept-proposal")).to_be_visible(timeout=30_000)


def test_a_rename_and_an_added_step_survive_a_revision(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("iris", "pw-for-tests-8")
    login(page, daphne_url, "iris", "pw-for-tests-8")
    submit_task(page, "Research tea and coffee")

    edit_step(page, "research-tea", title="Research green tea")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    page.locator("#add-step summary").click()
    page.fill("#new-title", "Check prices")
    page.fill("#new-instruction", "Find what a kilo of each costs.")
    page.get_by_role("button", name="Add step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")

    ask_for_revision(page, "and mate")
    proposal = page.locator("#plan-proposal")
    expect(proposal.locator("#proposal-merged")).to_contain_text(
        "Merged with the changes made since the planner's version 1: they are kept."
    )
    # The diff is from the current version: the person's steps are not shown as removed.
    expect(proposal).to_contain_text("Steps added: research-mate")
    expect(proposal).not_to_contain_text("Steps removed")
    # And on the proposal's graph: the new step marked added, the person's still there.
    graph = "window.proposalGraph.cy"
    expect(page.locator("#proposal-graph canvas").first).to_be_visible()
    assert page.evaluate(f"{graph}.getElementById('research-mate').hasClass('diff-added')")
    assert page.evaluate(f"{graph}.getElementById('check-prices').nonempty()")
    assert page.evaluate(f"{graph}.nodes('.diff-removed').length") == 0

    page.click("#accept-proposal")
    expect(page.locator("#plan-notice")).to_contain_text(
        "Saved version 4: revised on request: and mate (merged with the changes since version 1)"
    )
    open_step(page, "research-tea")
    expect(page.locator("#step-research-tea .step-title")).to_have_text("Research green tea")
    expect(step_in_graph(page, "check-prices")).to_be_visible()
    expect(step_in_graph(page, "research-mate")).to_be_visible()
    plan = Plan.model_validate(Run.objects.get().plan_versions.get(number=4).plan)
    assert plan.step("research-tea").title == "Research green tea"
    assert plan.step("check-prices").instruction == "Find what a kilo of each costs."
    # The versions' comparison shows the same on a graph of its own.
    page.locator("#version-4 .diff-link").click()
    expect(page.locator("#version-diff-graph canvas").first).to_be_visible()
    marks = page.evaluate(
        "window.versionDiffGraph.cy.nodes().filter((n) => n.classes().some((c) =>"
        " c.startsWith('diff-'))).map((n) => [n.id(), n.classes().join(' ')])"
    )
    assert ["research-mate", "step diff-added"] in marks
    # The person's step is as it was; the planner reworded the others' context.
    assert "check-prices" not in [step_id for step_id, _ in marks]
    assert ["research-tea", "step diff-changed"] in marks


def test_a_conflict_is_shown_and_resolved_by_the_persons_choice(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("jude", "pw-for-tests-9")
    login(page, daphne_url, "jude", "pw-for-tests-9")
    submit_task(page, "Research tea and coffee")
    # The revision rewords every step (its context names the longer task): so does the person.
    edit_step(page, "research-coffee", instruction="Research only arabica coffee.")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    edit_step(page, "research-tea", instruction="Research only green tea.")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")

    ask_for_revision(page, "and mate")
    conflicts = page.locator("fieldset.conflict")
    expect(conflicts).to_have_count(2)
    expect(conflicts.first).to_contain_text(
        "Conflict: You and the planner both changed the instruction of step 'research-tea'"
    )
    expect(conflicts.first).to_contain_text("Keep mine: Research only green tea.")
    expect(conflicts.first).to_contain_text("Take the planner's: Research tea.")
    assert page.evaluate(
        "window.proposalGraph.cy.getElementById('research-tea').hasClass('diff-conflict')"
    )

    # Nothing is accepted while a conflict is undecided: the browser asks for a choice.
    page.click("#accept-proposal")
    assert page.evaluate("document.querySelector('#conflict-1-mine').validity.valueMissing")
    assert Run.objects.get().plan_versions.count() == 3

    page.get_by_label("Keep mine: Research only green tea.").check()
    conflicts.nth(1).get_by_label("Take the planner's").check()
    page.click("#accept-proposal")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 4")
    plan = Plan.model_validate(Run.objects.get().plan_versions.get(number=4).plan)
    assert plan.step("research-tea").instruction == "Research only green tea."
    assert plan.step("research-coffee").instruction.startswith("Research coffee.")
    assert "research-mate" in [s.id for s in plan.steps]
