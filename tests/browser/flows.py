"""What most browser tests do first: log in, and submit a task until its plan awaits approval;
and what some do next: run it to the end, and make it go on as another tab would."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect


def login(page, base_url: str, username: str, password: str) -> None:
    page.goto(base_url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="What should the agents do?")).to_be_visible()
    # The heading shows while the page still parses; htmx wires the form's live fields up
    # once it has loaded, and typing before that sends nothing (seen once in CI: the allowed
    # hosts' request never came).
    page.wait_for_load_state()


def submit_task(page, task: str) -> None:
    """Submit `task` from the form and wait until its plan waits for approval."""
    page.fill("#id_task", task)
    page.click("#plan-it")
    expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)


def step_in_graph(page, step_id: str):
    """The step's button over its box in the graph: what the keyboard and screen readers use."""
    return page.locator(f'.plan-graph-step[data-step-id="{step_id}"]')


def open_step(page, step_id: str) -> None:
    """Open a step's card in the side panel beside the graph, from the keyboard."""
    step_in_graph(page, step_id).focus()
    step_in_graph(page, step_id).press("Enter")
    expect(page.locator(f"#step-{step_id}")).to_be_visible()


def press(page, locator, button: str = "left") -> None:
    """Put the mouse's button down in the middle of `locator` and leave it down: the first
    half of a click, which a person takes a tenth of a second to finish."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down(button=button)


def approve_and_finish(page) -> None:
    """Approve the plan on the page and wait until the run has delivered its result."""
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)


def retried_in_another_tab(page, run, step_id: str) -> None:
    """Retry `step_id` of the finished `run` (alone), as its owner would from another tab, and
    return once the page has been rendered again for it and the run has succeeded again."""
    from planner_ui.models import Run
    from planner_ui.services.retries import step_retry
    from tests.conftest import wait_until

    page.evaluate("document.getElementById('run-main').firstElementChild.dataset.old = 'yes'")
    step_retry(run_id=run.pk, step_id=step_id, user=run.owner, downstream=False)
    page.wait_for_function("() => !document.querySelector('#run-main [data-old]')", timeout=30_000)
    wait_until(lambda: Run.objects.get(pk=run.pk).status == "succeeded", timeout=60)
    expect(page.locator("#run-header")).to_have_attribute("data-status", "succeeded")


def routed_until(page, condition, what: str, timeout_s: float = 30.0) -> None:
    """Wait, letting Playwright call the route handlers meanwhile, until `condition()` holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        page.wait_for_timeout(50)
