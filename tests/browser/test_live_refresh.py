"""In the browser: a button pressed on the run page does what it says, even when an event's
refresh replaces the part of the page it is in before the person lets go; and the same on the
pages that poll."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.core.edits import UpdateStep
from planner_ui.core.evaluation import arm_parse, shipped_suites, suite_load
from planner_ui.models import LocalModel
from planner_ui.services.evaluations import (
    experiment_advance,
    experiment_cancel,
    experiment_create,
)
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
    (run.js gives the refresh, the cards and the timeline one each; a poll is its element's)
    that have come back and been dealt with, swapped or set aside, and window.answered[id] is
    the last one's text. By the element that asked, which an outerHTML swap takes out of the
    page: htmx then tells its parent."""
    page.evaluate(
        """() => {
          window.fetched = {};
          window.answered = {};
          document.body.addEventListener("htmx:afterRequest", (e) => {
            const id = e.detail.requestConfig.elt.id;
            if (e.detail.requestConfig.verb !== "get") return;
            window.fetched[id] = (window.fetched[id] || 0) + 1;
            window.answered[id] = e.detail.xhr.responseText;
          });
        }"""
    )


def fetched(page, source: str, at_least: int) -> None:
    """Wait until `at_least` fetches from `source` have come back (count_fetches)."""
    page.wait_for_function(f"() => (window.fetched[{source!r}] || 0) >= {at_least}", timeout=30_000)


def answered(page, source: str, text: str) -> None:
    """Wait until the last fetch from `source` to come back had `text` in it (count_fetches)."""
    page.wait_for_function(
        f"() => (window.answered[{source!r}] || '').includes({text!r})", timeout=30_000
    )


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


def test_a_press_on_a_polled_part_outlives_the_poll_that_ends_it(page, daphne_url, make_user):
    """An experiment's results ask again every 2 s while it runs, and no page script holds
    their answer: a run's link, opened into a new tab as the answer came that the experiment
    had ended, opened nothing. That answer, the last one, still shows after the release."""
    alice = make_user("alice", "pw-for-tests-1")
    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("plan")], concurrency=1)
    experiment_advance(experiment.pk, judging=False)  # its first run starts; no worker runs it
    run_id = experiment.slots.get(run__isnull=False).run_id
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/evaluations/experiments/{experiment.pk}/")
    count_fetches(page)
    # Control: into a new tab, so that this page stays to show what its poll brought.
    page.keyboard.down("Control")
    press(page, page.locator("#tasks-table a.slot-run"))
    experiment_cancel(experiment.pk, alice)  # as from another tab
    answered(page, "experiment-results", 'data-status="cancelled"')
    with page.context.expect_page(timeout=10_000) as opened:
        page.mouse.up()
    page.keyboard.up("Control")

    expect(opened.value).to_have_url(re.compile(rf"/runs/{run_id}/$"))
    expect(page.locator("#experiment-results")).to_have_attribute("data-status", "cancelled")
    expect(page.locator("#experiment-progress")).to_contain_text("Cancelled by alice.")
    assert page.js_errors == []


def test_a_press_on_a_polled_button_outlives_the_poll(page, daphne_url, django_user_model):
    """The local models' list asks again every 2 s while a model loads: Stop, pressed as the
    answer came that it was ready, stopped nothing."""
    django_user_model.objects.create_user("root", password="pw-for-tests-1", is_staff=True)
    loading = LocalModel.State.LOADING
    model = LocalModel.objects.create(path="/models/tiny.gguf", name="tiny", state=loading)
    login(page, daphne_url, "root", "pw-for-tests-1")
    page.click("#run-options summary")
    count_fetches(page)
    press(page, page.locator("#local-models .local-model-stop"))
    # The supervisor has it loaded: the list's answer stops polling.
    LocalModel.objects.filter(pk=model.pk).update(state=LocalModel.State.READY)
    answered(page, "local-model-list", 'data-state="ready"')
    page.mouse.up()

    expect(page.locator("#local-models .notice")).to_have_text("Stopping tiny.")
    expect(page.locator(f"#local-model-{model.pk}")).to_contain_text("stopping")
    model.refresh_from_db()
    assert not model.wanted
    assert page.js_errors == []
