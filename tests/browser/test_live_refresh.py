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


def count_fetches(page) -> None:
    """From now on, window.fetched[id] counts the page's fetches made from the element `id`
    (run.js gives the refresh, the cards and the timeline one each) that have come back and been
    dealt with, swapped or set aside."""
    page.evaluate(
        """() => {
          window.fetched = {};
          document.body.addEventListener("htmx:afterRequest", (e) => {
            const id = e.detail.elt.id;
            if (e.detail.requestConfig.verb !== "get") return;
            window.fetched[id] = (window.fetched[id] || 0) + 1;
          });
        }"""
    )


def fetched(page, source: str, at_least: int) -> None:
    """Wait until `at_least` fetches from `source` have come back (count_fetches)."""
    page.wait_for_function(f"() => (window.fetched[{source!r}] || 0) >= {at_least}", timeout=30_000)


def step_event(run, step_id: str) -> None:
    """An event about the step, as a worker's tool call would send: the page fetches the step's
    card and the timeline again."""
    event_append(
        run.pk,
        "step.tool_call",
        {"call_id": "c1", "tool": "web_search", "arguments": {"query": "tea"}},
        step_id=step_id,
    )


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
    count_fetches(page)
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
    fetched(page, "run-main", 1)
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
    count_fetches(page)
    card = page.locator("#step-write-short-summary")
    press(page, card.locator("summary", has_text="Edit step"))
    step_event(run, "write-short-summary")
    fetched(page, "cards-requests", 1)
    page.mouse.up()

    # The press opened the editor, and the card fetched again once it was let go keeps it open.
    fetched(page, "cards-requests", 2)
    expect(card.locator("details.step-editor")).to_have_attribute("open", "")
    expect(card.get_by_label("Instruction")).to_be_visible()
    assert page.js_errors == []


def test_a_press_on_the_report_outlives_the_timeline_fetched_again(page, daphne_url, make_user):
    """The report's links sit in the timeline, which a running run fetches again a few times a
    second: "Markdown", pressed as it came back, downloaded nothing."""
    run = paused_run_page(page, daphne_url, make_user)
    count_fetches(page)
    press(page, page.locator("#report-md"))
    step_event(run, "research-history-tea")
    fetched(page, "timeline-requests", 1)
    with page.expect_download(timeout=10_000) as download:
        page.mouse.up()
    assert download.value.path().read_text().startswith("# Run ")
    # The timeline held back is fetched once the link is let go.
    fetched(page, "timeline-requests", 2)
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
