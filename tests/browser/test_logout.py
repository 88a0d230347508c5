"""In the browser: logging out in one tab ends the live feed of a run page open in another tab
of the same browser, which says it is no longer logged in (before, it went on streaming)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_logging_out_in_one_tab_ends_the_run_page_feed_in_another(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Research tea")
    expect(page.locator("#ws-state")).to_have_text("live")
    run = Run.objects.get()

    other_tab = page.context.new_page()
    other_tab.goto(f"{daphne_url}/runs/")
    other_tab.get_by_role("button", name="Log out").click()
    other_tab.wait_for_load_state()

    expect(page.locator("#ws-state")).to_have_text("not logged in", timeout=10_000)
    assert Run.objects.get().pk == run.pk
    other_tab.close()
