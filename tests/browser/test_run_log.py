"""The run page's live log: the latest events on load, earlier ones a page at a time on asking,
and no more than a few pages while it grows live (run.js, views.log)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run
from planner_ui.services.events import events_append
from planner_ui.services.runs import run_plan
from planner_ui.views.log import LOG_PAGE

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def _queued(run: Run, count: int) -> None:
    step_id = run.steps.exclude(role="synthesizer").first().step_id
    events_append(run.pk, [("step.queued", {}, step_id)] * count)


def test_a_long_log_shows_its_latest_page_and_goes_back_on_asking(page, daphne_url, make_user):
    alice = make_user("alice", "pw-for-tests-1")
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    _queued(run, LOG_PAGE + 40)
    last = run.events.order_by("-seq").first().seq
    replayed: list[str] = []
    page.on("websocket", lambda ws: replayed.append(ws.url))

    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    page.locator("#live-log summary").click()
    rows = page.locator("#event-log li.ev")
    # The socket replayed the last page only: the rest of the log is in the page's render.
    expect(rows).to_have_count(LOG_PAGE)
    assert replayed[-1].split("after=")[1].startswith(f"{last - LOG_PAGE}&")
    expect(rows.first).to_have_attribute("data-seq", str(last))

    page.locator("#log-earlier").click()
    expect(rows).to_have_count(last)  # all of it: fewer than a page was left
    expect(rows.last).to_have_attribute("data-seq", "1")
    expect(page.locator("#log-earlier")).to_have_count(0)
    seqs = [int(s) for s in rows.evaluate_all("(rows) => rows.map((r) => r.dataset.seq)")]
    assert seqs == list(range(last, 0, -1))  # newest first, none twice, none missing
    assert page.js_errors == []


def test_a_live_log_keeps_a_few_pages_and_offers_the_rest(page, daphne_url, make_user):
    alice = make_user("alice", "pw-for-tests-1")
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    first = run.events.order_by("-seq").first().seq
    expect(page.locator("#log-earlier")).to_have_count(0)

    _queued(run, 3 * LOG_PAGE + 5)  # live, over the socket
    last = run.events.order_by("-seq").first().seq
    rows = page.locator("#event-log li.ev")
    expect(rows.first).to_have_attribute("data-seq", str(last))
    # Past three pages the oldest lines went, down to two pages, and can be asked for again.
    count = rows.count()
    assert 2 * LOG_PAGE <= count <= 3 * LOG_PAGE
    oldest = int(rows.last.get_attribute("data-seq"))
    assert oldest == last - count + 1 and oldest > first
    page.locator("#live-log summary").click()
    page.locator("#log-earlier").click()
    expect(rows).to_have_count(count + LOG_PAGE)
    expect(rows.last).to_have_attribute("data-seq", str(oldest - LOG_PAGE))
    assert page.js_errors == []
