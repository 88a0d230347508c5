"""The timeline in a real browser: a Gantt chart with a time axis, the graph's status colours
and the same critical path as the graph."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from bench import shapes
from bench.scheduler import scripted_run_create
from planner_ui.models import Run
from tests.browser.flows import login, step_in_graph, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

TASK = "Research tea, coffee and mate, then write a short summary"
# graph.js COLORS: the border of a succeeded step and of a queued one.
SUCCEEDED = "rgb(31, 157, 85)"
QUEUED = "rgb(91, 141, 239)"
# Every element a selector matches, read at one moment: its text, left edge and data-step-id.
_ALL = """(selector) => Array.from(document.querySelectorAll(selector), (el) => ({
    text: el.innerText, left: el.getBoundingClientRect().left, stepId: el.dataset.stepId}))"""


def test_the_timeline_has_a_time_axis_and_marks_the_graphs_critical_path(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, TASK)
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)
    run = Run.objects.get()
    steps = run.steps.count()
    timeline = page.locator("#run-timeline")
    expect(timeline.locator(".timeline-row[data-status='succeeded']")).to_have_count(steps)
    # Drawn once the run had ended: no refresh is left to come after this one. (The first
    # check keeps the second from passing on a figure the page no longer draws.)
    active = timeline.locator("#timeline-active")
    expect(active).to_contain_text("active")
    expect(active).not_to_contain_text("so far")

    # The axis: marks from 0 in active time, left to right.
    # The page swaps the whole timeline in again a moment after the last event, so each
    # reading is taken in one call: marks measured one by one could straddle the swap, and
    # a mark measured after it left the page sits at 0.
    ticks = page.evaluate(_ALL, "#run-timeline #gantt-axis .gantt-tick")
    assert len(ticks) >= 3
    assert ticks[0]["text"].startswith("0")
    lefts = [t["left"] for t in ticks]
    assert lefts == sorted(lefts)
    # The planner's row, then a row per step, each queued then running.
    expect(timeline.locator(".timeline-row[data-row='planning'] .seg")).to_have_count(1)
    for row in timeline.locator(".timeline-row[data-step-id]").all():
        expect(row.locator(".seg-queued")).to_have_count(1)
        expect(row.locator(".seg-running.ended-succeeded")).to_have_count(1)

    # The same critical path as the graph, in the same order.
    graph_path = page.evaluate("window.planGraph.criticalPath()")
    critical = ".timeline-row[data-critical='yes']"
    expect(timeline.locator(critical)).to_have_count(len(graph_path))
    marked = page.evaluate(_ALL, f"#run-timeline {critical}")
    assert [m["stepId"] for m in marked] == graph_path
    assert timeline.locator("#gantt").get_attribute("data-critical-path") == " ".join(graph_path)
    # In parallel research, not every step is critical.
    assert 1 < len(graph_path) < steps

    # The graph's colours.
    colour = "(el) => getComputedStyle(el).backgroundColor"
    assert timeline.locator(".seg-running.ended-succeeded").first.evaluate(colour) == SUCCEEDED
    assert timeline.locator(".seg-queued").first.evaluate(colour) == QUEUED
    assert page.js_errors == []


def test_a_timeline_out_of_sight_waits_until_it_is_scrolled_to(
    page, daphne_url, celery_worker_process, make_user
):
    """Watching a run, the timeline below the fold is not fetched at each step's event (a
    1,000-step run's is 0.6 MB and 0.2 s of the server's time); scrolled to, it is brought up
    to date while the run goes on."""
    user = make_user("tim", "pw-for-tests-tl")
    run = scripted_run_create(user, shapes.build("chain", 20, seed=5, width=1))
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.set_viewport_size({"width": 1280, "height": 500})
    login(page, daphne_url, "tim", "pw-for-tests-tl")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    timeline = page.locator("#run-timeline")
    assert timeline.bounding_box()["y"] > 500 + 200  # below the fold, past the margin

    page.click("#approve-plan")
    # Two steps of twenty ended: the socket told the page, and the timeline stayed as it was.
    # (The graph is mounted again once the approval's answer is in: until then there is none.)
    page.wait_for_function(
        "() => window.planGraph && ['s01', 's02'].every("
        "(id) => window.planGraph.status(id) === 'succeeded')"
    )
    assert not [url for url in asked if "/timeline/" in url]
    # The step's keyboard button, over its box in the graph, says so too.
    expect(step_in_graph(page, "s02")).to_have_attribute("data-status", "succeeded")
    expect(step_in_graph(page, "s02")).to_have_attribute("aria-label", re.compile(r"succeeded"))

    timeline.scroll_into_view_if_needed()
    expect(timeline.locator('.timeline-row[data-step-id="s02"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    assert [url for url in asked if "/timeline/" in url]
    expect(timeline.locator("#timeline-active")).to_contain_text("so far")  # still running
