"""In the browser: a run's files appear on its page as steps write them, and download."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import Run, RunFile

from .flows import login, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_a_file_a_step_wrote_is_listed_and_downloads(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Save a list of three teas to teas.md. Then read teas.md and summarize it.")
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=60_000)

    link = page.locator("#run-files a", has_text="teas.md")
    expect(link).to_be_visible()
    expect(page.locator("#run-files tr[data-path='teas.md'] code")).to_have_text(
        "save-list-three-teas"
    )
    with page.expect_download() as download:
        link.click()
    saved = download.value.path().read_bytes()
    stored = RunFile.objects.get(run=Run.objects.get(), path="teas.md")
    assert saved == bytes(stored.content) and saved
