"""In the browser, while a run executes: edit a step that has not started (the executor gets
the edited instruction), see the started ones locked, pause, and resume."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run

from .flows import login, open_step, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

# A chain of six: the last step starts a few seconds after approval on any machine, time
# enough to edit it in the browser first.
TASK = (
    "Research the history of tea, then research the history of coffee, then research the "
    "history of mate, then research the history of cocoa, then research the history of "
    "chicory, then write a short summary"
)


def test_edit_a_pending_step_while_another_runs_pause_and_resume(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, TASK)
    # Its card is opened first: it stays open through the approval's reload.
    open_step(page, "write-short-summary")
    page.click("#approve-plan")
    expect(page.locator("#pause-run")).to_be_visible(timeout=30_000)

    # The last step has not started: it is edited while the first one runs.
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Edit step").click()
    card.get_by_label("Instruction").fill("Write a haiku about the history of tea.")
    card.get_by_role("button", name="Save step").click()
    expect(card.locator(".instruction")).to_have_text("Write a haiku about the history of tea.")

    # Paused as soon as the edit is in: how far the chain got by then depends on the machine,
    # so the check is that nothing starts once it is paused (the synthesizer at least waits).
    # The plan's new version is looked at after: on a busy machine, waiting for it first let
    # the chain's last step end and the synthesizer start before the pause.
    page.click("#pause-run")
    expect(page.locator("#run-paused")).to_be_visible()
    expect(page.locator("#version-2")).to_contain_text("person")
    expect(page.locator(".locked-reason").first).to_contain_text(
        "; only steps that have not started change"
    )
    run = Run.objects.get()

    # Nothing starts while paused: once the steps under way are done, nothing runs.
    def settled():
        statuses = dict(run.steps.values_list("step_id", "status"))
        return not {"queued", "running"} & set(statuses.values()) and statuses

    statuses = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (statuses := settled()):
        time.sleep(0.2)
    assert statuses and statuses["synthesis"] == "pending"
    # The timeline follows along: the first step's bar is there while the run is paused.
    timeline = page.locator("#run-timeline")
    expect(
        timeline.locator(".timeline-row[data-step-id='research-history-tea'] .seg-running")
    ).to_be_visible(timeout=30_000)
    time.sleep(1.5)
    assert dict(run.steps.values_list("step_id", "status")) == statuses

    page.click("#resume-run")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    summary_row = timeline.locator(".timeline-row[data-step-id='write-short-summary']")
    expect(summary_row.locator(".seg-running")).to_have_count(1)
    expect(summary_row.locator(".seg-queued")).to_have_count(1)
    expect(timeline.locator(".timeline-row.critical")).to_have_count(7)
    with page.expect_download() as download:
        page.click("#report-md")
    assert download.value.path().read_text().startswith("# Run ")
    summary = run.steps.get(step_id="write-short-summary")
    assert summary.instruction == "Write a haiku about the history of tea."
    assert "haiku about the history of tea" in summary.output.lower()
    types = list(run.events.values_list("type", flat=True))
    assert types.index("run.paused") < types.index("run.resumed")
    assert page.js_errors == []
