"""In the browser: a button pressed on the run page does what it says, even when an event's
refresh replaces the part of the page it is in before the person lets go."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.core.edits import UpdateStep
from planner_ui.services.events import event_append
from planner_ui.services.plans import plan_edit
from planner_ui.services.runs import run_approve_plan, run_pause
from tests.services.test_runs import planned

from .flows import login, open_step, press

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

TASK = "Research the history of tea, then write a short summary"


def paused_run_page(page, daphne_url, make_user):
    """A run approved and paused before anything ran, open in the page with its socket live."""
    alice = make_user("alice", "pw-for-tests-1")
    run = planned(alice, TASK)
    run_approve_plan(run.pk)
    run_pause(run.pk, alice)
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    return run


# Counts the run page's refreshes that have come back and been dealt with (swapped or not).
COUNT_REFRESHES = """() => {
  window.refreshesDone = 0;
  document.body.addEventListener("htmx:afterRequest", (e) => {
    const get = e.detail.requestConfig.verb === "get";
    if (get && e.detail.target.id === "run-main") window.refreshesDone++;
  });
}"""


@pytest.mark.parametrize("hand", ["mouse", "space bar"])
def test_a_press_outlives_a_refresh_that_lands_before_the_release(
    page, daphne_url, make_user, hand
):
    """A click is a press and a release, a tenth of a second apart for a person. A refresh
    swapped in between took the pressed button out of the page, and the browser sent the click
    nowhere: no request, the run still paused (seen once in CI, where Resume was clicked as the
    refresh Pause had owed landed). The refresh now waits for the release. The space bar
    clicks a focused button as it comes up, so it is a press too."""
    run = paused_run_page(page, daphne_url, make_user)
    page.evaluate(COUNT_REFRESHES)
    resume = page.locator("#resume-run")
    if hand == "mouse":
        press(page, resume)
    else:
        resume.focus()
        page.keyboard.down(" ")
    # Another tab rewords the step that has not started: the page asks for a refresh, and its
    # answer comes back while the button is held down.
    plan_edit(
        run_id=run.pk, base_version=1, edit=UpdateStep("write-short-summary", title="A haiku")
    )
    page.wait_for_function("() => window.refreshesDone >= 1", timeout=30_000)
    if hand == "mouse":
        page.mouse.up()
    else:
        page.keyboard.up(" ")

    expect(page.locator("#pause-run")).to_be_visible(timeout=30_000)
    run.refresh_from_db()
    assert run.paused_at is None
    assert run.events.filter(type="run.resumed", payload__by="alice").exists()
    # The refresh held back is made once the button is let go: the edit shows.
    expect(page.locator("#version-2")).to_contain_text("person")
    assert page.js_errors == []


def test_a_press_in_a_card_outlives_the_card_fetched_again_before_the_release(
    page, daphne_url, make_user
):
    """The same for a step's card, which an event about its step fetches again on its own:
    "Edit step", pressed as its card is replaced, opened nothing."""
    run = paused_run_page(page, daphne_url, make_user)
    open_step(page, "write-short-summary")
    page.evaluate(
        """() => {
          window.cardFetchesDone = 0;
          document.body.addEventListener("htmx:afterRequest", (e) => {
            if (e.detail.elt.id === "cards-requests") window.cardFetchesDone++;
          });
        }"""
    )
    card = page.locator("#step-write-short-summary")
    press(page, card.locator("summary", has_text="Edit step"))
    # An event about the step (as a worker's tool call would send) has its card fetched again.
    event_append(
        run.pk,
        "step.tool_call",
        {"call_id": "c1", "tool": "web_search", "arguments": {"query": "tea"}},
        step_id="write-short-summary",
    )
    page.wait_for_function("() => window.cardFetchesDone >= 1", timeout=30_000)
    page.mouse.up()

    # The press opened the editor, and the card fetched again once it was let go keeps it open.
    page.wait_for_function("() => window.cardFetchesDone >= 2", timeout=30_000)
    expect(card.locator("details.step-editor")).to_have_attribute("open", "")
    expect(card.get_by_label("Instruction")).to_be_visible()
    assert page.js_errors == []


def test_a_press_on_the_report_outlives_the_timeline_fetched_again(page, daphne_url, make_user):
    """The report's links sit in the timeline, which a running run fetches again a few times a
    second: "Markdown", pressed as it came back, downloaded nothing."""
    run = paused_run_page(page, daphne_url, make_user)
    page.evaluate(
        """() => {
          window.timelinesDone = 0;
          document.body.addEventListener("htmx:afterRequest", (e) => {
            if (e.detail.elt.id === "timeline-requests") window.timelinesDone++;
          });
        }"""
    )
    press(page, page.locator("#report-md"))
    # An event about a step (as a worker's tool call would send) has the timeline fetched.
    event_append(
        run.pk,
        "step.tool_call",
        {"call_id": "c1", "tool": "web_search", "arguments": {"query": "tea"}},
        step_id="research-history-tea",
    )
    page.wait_for_function("() => window.timelinesDone >= 1", timeout=30_000)
    with page.expect_download(timeout=10_000) as download:
        page.mouse.up()
    assert download.value.path().read_text().startswith("# Run ")
    # The timeline held back is fetched once the link is let go.
    page.wait_for_function("() => window.timelinesDone >= 2", timeout=30_000)
    assert page.js_errors == []


def test_a_right_button_held_down_holds_no_refresh(page, daphne_url, make_user):
    """Only the main button clicks: the right one's release can go to the context menu, and a
    page that waited for it would show nothing new until the next press."""
    run = paused_run_page(page, daphne_url, make_user)
    press(page, page.locator("#resume-run"), button="right")
    plan_edit(
        run_id=run.pk, base_version=1, edit=UpdateStep("write-short-summary", title="A haiku")
    )
    expect(page.locator("#version-2")).to_contain_text("person")
    page.mouse.up(button="right")
    assert page.js_errors == []
