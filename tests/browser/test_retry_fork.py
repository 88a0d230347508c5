"""In the browser, once a run is done: retry its last step with another instruction (the steps
after it run again and the deliverable follows), then fork a new run from a middle step, run it
and compare the two."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run
from tests.conftest import wait_until

from .flows import approve_and_finish, login, open_step, retried_in_another_tab, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

TASK = (
    "Research the history of tea, then research the history of coffee, then research the "
    "history of mate, then write a short summary"
)


def test_retry_a_step_then_fork_from_another_and_compare(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, TASK)
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    run = Run.objects.get()

    open_step(page, "write-short-summary")
    card = page.locator("#step-write-short-summary")
    card.locator("summary", has_text="Retry or fork").click()
    card.get_by_label("Instruction for the retry").fill("Write a haiku about the history of mate.")
    card.get_by_role("button", name="Retry this step").click()
    expect(page.locator(".notice").first).to_contain_text("runs again, and the steps after it")
    expect(page.locator("#event-log")).to_contain_text(
        "run again by alice with an edited instruction"
    )

    def retried_and_done():
        steps = {s.step_id: s for s in Run.objects.get(pk=run.pk).steps.all()}
        again = (steps["write-short-summary"], steps["synthesis"])
        return all(s.retries == 1 and s.status == "succeeded" for s in again)

    wait_until(retried_and_done, timeout=60, what="the retried steps to finish")
    # The page followed live: the card shows the new output.
    expect(card.locator(".step-output")).to_contain_text(re.compile("haiku", re.I), timeout=30_000)
    expect(card).to_have_attribute("data-status", "succeeded")
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert "haiku" in run.steps.get(step_id="write-short-summary").output.lower()
    # The steps before it were not run again.
    assert run.steps.get(step_id="research-history-tea").retries == 0

    open_step(page, "research-history-mate")
    mate = page.locator("#step-research-history-mate")
    mate.locator("summary", has_text="Retry or fork").click()
    mate.get_by_role("button", name="Fork from here").click()
    expect(page.locator("#forked-from")).to_contain_text(f"Fork of run {run.pk}")
    fork = Run.objects.get(forked_from=run)
    assert page.url.endswith(f"/runs/{fork.pk}/")
    expect(page.locator(".reused-badge")).to_have_count(2)
    expect(page.locator("#step-research-history-tea .locked-reason")).to_contain_text(
        f"reused from run {run.pk}"
    )
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    fork.refresh_from_db()
    assert fork.status == "succeeded"
    assert fork.steps.get(step_id="research-history-tea").output == (
        run.steps.get(step_id="research-history-tea").output
    )

    page.click("#compare-fork-link")
    expect(page.locator("#compare > h1")).to_have_text(f"Run {run.pk} beside run {fork.pk}")
    steps_row = page.locator("#compare-table tr[data-row='steps']")
    expect(steps_row).to_contain_text("(2 reused)")
    # The fork paid only for what it ran: fewer model calls than the original's first run.
    calls = page.locator("#compare-table tr[data-row='calls'] td")
    assert int(calls.nth(1).inner_text()) < int(calls.nth(0).inner_text())
    assert page.js_errors == []


def test_a_retry_being_typed_survives_the_run_going_on(
    page, daphne_url, celery_worker_process, make_user
):
    """A step's retry and fork forms come when "Retry or fork" opens; a live refresh fetches
    them again and puts back the instruction the person was typing."""
    make_user("gus", "pw-for-tests-1")
    login(page, daphne_url, "gus", "pw-for-tests-1")
    submit_task(page, "Research the history of tea, then write a short summary")
    approve_and_finish(page)
    run = Run.objects.get()

    open_step(page, "research-history-tea")
    card = page.locator("#step-research-history-tea")
    card.locator("summary", has_text="Retry or fork").click()
    card.get_by_label("Instruction for the retry").fill("Typed, not sent")
    # Another tab retries the other step: the run goes on, and the page refreshes with it.
    retried_in_another_tab(page, run, "write-short-summary")
    card = page.locator("#step-research-history-tea")
    expect(card.locator("details.step-again")).to_have_attribute("open", "")
    expect(card.get_by_label("Instruction for the retry")).to_have_value("Typed, not sent")
    card.locator(".retry-step").click()
    expect(page.locator(".notice").first).to_contain_text("runs again, and the steps after it")
    assert run.steps.get(step_id="research-history-tea").instruction == "Typed, not sent"
    assert page.js_errors == []
