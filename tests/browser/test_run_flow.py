"""A person's loop in a real browser: log in, submit, see the plan, approve, watch it finish."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run

from .flows import login, open_step, step_in_graph

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_submit_approve_and_watch_the_result_arrive_live(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    # What the run's socket brings: the page asks for the events that come together in one frame.
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.fill("#id_task", "1. Research tea\n2. Research coffee\n3. Compute 3 * 95 + 2 * 40")
    page.click("#plan-it")

    # The plan arrives over the WebSocket: no reload.
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
    expect(page.locator("#ws-state")).to_have_text("live")
    run = Run.objects.get()
    steps = list(run.steps.all())
    for step in steps:
        expect(step_in_graph(page, step.step_id)).to_be_visible()
    graph_ids = page.evaluate("window.planGraph.cy.nodes().map((n) => n.id())")
    assert sorted(graph_ids) == sorted(s.step_id for s in steps)
    edge_count = page.evaluate("window.planGraph.cy.edges().length")
    assert edge_count == sum(len(s.depends_on) for s in steps)

    page.click("#approve-plan")
    # Approval is a plain form POST that redirects back; from here on nothing reloads.
    expect(page.locator("#approve-plan")).to_have_count(0, timeout=15_000)
    page.wait_for_load_state()
    page.evaluate("window.__notReloaded = true")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)
    assert page.evaluate("window.__notReloaded === true"), "the result should arrive without reload"
    expect(page.locator("#run-status")).to_have_text("succeeded")
    for step in steps:
        expect(page.locator(f"#step-{step.step_id}")).to_have_attribute("data-status", "succeeded")
        assert page.evaluate(f"window.planGraph.status('{step.step_id}')") == "succeeded"
    expect(page.locator("#result .markdown h1")).to_be_visible()
    assert page.locator("#event-log li").count() >= len(steps) * 2
    # Some of what it showed live came in batches (a finish's events: the step's end, the step
    # it queued, and that step's start).
    assert any(isinstance(f, str) and f.startswith('{"type": "batch"') for f in frames)
    # No step was open while the run went on: no step's live text came (it shows only there).
    assert not any(isinstance(f, str) and f.startswith('{"type": "text"') for f in frames)
    # The calculator's call and result show once on their card, live and after a reload.
    open_step(page, "compute-3-95-2")
    calls = page.locator("#step-compute-3-95-2 .step-calls li")
    expect(calls).to_have_text(
        ['→ calculator {"expression":"3 * 95 + 2 * 40"}', "← 3 * 95 + 2 * 40 = 365"]
    )
    page.reload()
    open_step(page, "compute-3-95-2")
    expect(calls).to_have_count(2)
    expect(calls.nth(1)).to_have_text("← 3 * 95 + 2 * 40 = 365")
    assert page.js_errors == []


def test_another_users_run_page_is_not_found(page, daphne_url, make_user):
    bob = make_user("bob", "pw-for-tests-2")
    run = Run.objects.create(owner=bob, task="Bob's private task")
    make_user("carol", "pw-for-tests-3")
    login(page, daphne_url, "carol", "pw-for-tests-3")
    response = page.goto(f"{daphne_url}/runs/{run.pk}/")
    assert response.status == 404
    assert "Bob's private task" not in page.content()
