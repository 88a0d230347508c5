"""Every main page, checked by axe-core (the copy that axe-playwright-python ships, injected
into the page: no network) for serious and critical violations, and laid out without a
horizontal scroll bar at 800 and 390 px wide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from .flows import login, open_step, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

SERIOUS = {"serious", "critical"}
# A chain: the run is still under way when it is paused, and stays so.
TASK = (
    "Research the history of tea, then research the history of coffee, then research the "
    "history of mate, then write a short summary"
)


def serious_violations(page: Any) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(str(node["target"]) for node in v["nodes"][:5])
        for v in results.response["violations"]
        if v["impact"] in SERIOUS
    ]


def horizontal_overflow(page: Any) -> int:
    """How many pixels the page is wider than the window: 0 when nothing sticks out."""
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def visit_every_page(page: Any, base_url: str) -> Iterator[str]:
    """Goes to each main page in turn and yields its name once it has loaded: home, the plan
    of a run, a running run (paused), a finished run, saving its plan as a template, the
    template and the list of templates, the inbox, the history and the API page."""
    page.goto(base_url + "/")
    yield "home"
    submit_task(page, TASK)
    open_step(page, "research-history-tea")
    yield "plan"
    plan_url = page.url
    page.click("#approve-plan")
    expect(page.locator("#pause-run")).to_be_visible(timeout=30_000)
    page.click("#pause-run")
    expect(page.locator("#run-paused")).to_be_visible()
    yield "running"
    page.click("#resume-run")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)
    page.goto(plan_url)
    open_step(page, "write-short-summary")
    yield "finished"
    page.click("#save-as-template")
    yield "save as template"
    page.get_by_label("Name").fill("Histories")
    page.locator("#id_literal_0").fill("history of tea")
    page.locator("#id_parameter_0").fill("topic")
    page.click("#save-template")
    expect(page.locator("#template-run-form")).to_be_visible()
    page.locator("#template-versions summary").click()
    yield "template"
    page.goto(base_url + "/templates/")
    yield "templates"
    page.goto(base_url + "/approvals/")
    yield "inbox"
    page.goto(base_url + "/runs/")
    yield "history"
    page.goto(base_url + "/settings/api-tokens/")
    yield "api tokens"


def test_no_serious_or_critical_accessibility_violations(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("ally", "pw-for-tests-1")
    login(page, daphne_url, "ally", "pw-for-tests-1")
    found = {}
    for name in visit_every_page(page, daphne_url):
        violations = serious_violations(page)
        if violations:
            found[name] = violations
    assert found == {}, "\n".join(f"{name}: {v}" for name, vs in found.items() for v in vs)


@pytest.mark.parametrize("width", [800, 390])
def test_no_page_scrolls_sideways(page, daphne_url, celery_worker_process, make_user, width):
    page.set_viewport_size({"width": width, "height": 900})
    make_user(f"narrow{width}", "pw-for-tests-1")
    login(page, daphne_url, f"narrow{width}", "pw-for-tests-1")
    wide = {}
    for name in visit_every_page(page, daphne_url):
        overflow = horizontal_overflow(page)
        if overflow > 0:
            wide[name] = overflow
    assert wide == {}, f"pages wider than {width} px, by so many px: {wide}"
