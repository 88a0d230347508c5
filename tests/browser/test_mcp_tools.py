"""In the browser: an administrator registers an MCP server (a real process started from its
command), reads each held tool's description and schema and approves it, gives one tool its
effect, and the server's tools are offered in the plan editor beside the built-in ones; a tool
its server changed is not, until its change is read and approved."""

from __future__ import annotations

import sys

import pytest
from playwright.sync_api import expect

from .flows import login, open_step, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_register_a_server_and_grant_its_tools_in_the_editor(
    page, daphne_url, celery_worker_process, make_user, tmp_path
):
    admin = make_user("root", "pw-for-tests-1")
    admin.is_staff = True
    admin.save()
    login(page, daphne_url, "root", "pw-for-tests-1")
    page.click("#mcp-link")
    expect(page.locator("#no-mcp-servers")).to_be_visible()
    page.fill("#mcp-name", "fake")
    variant = tmp_path / "variant"
    page.fill(
        "#mcp-command",
        f"{sys.executable} -m tests.fakes.mcp_server --log {tmp_path / 'log'} "
        f"--variant-file {variant}",
    )
    page.get_by_role("button", name="Register and list its tools").click()
    expect(page.locator(".messages")).to_contain_text(
        "Registered 'fake' with 3 tools. They are held"
    )
    # Held until read: each tool shows its whole description and schema, and an Approve button.
    for name in ("lookup", "launch", "crash"):
        row = page.locator(f"#mcp-server-fake tr[data-tool='{name}']")
        expect(row).to_have_attribute("data-state", "new")
        expect(row.locator(".mcp-review-schema")).to_contain_text('"type": "object"')
    row = page.locator("#mcp-server-fake tr[data-tool='lookup']")
    expect(row.locator(".mcp-review-text")).to_have_text("Look a term up in the glossary.")
    for name in ("lookup", "launch", "crash"):
        page.get_by_role("button", name=f"Approve {name}").click()
        expect(page.locator(".messages")).to_contain_text(f"'{name}' is offered to runs")
        expect(page.locator(f"#mcp-server-fake tr[data-tool='{name}']")).to_have_attribute(
            "data-state", "active"
        )
    row = page.locator("#mcp-server-fake tr[data-tool='lookup']")
    expect(row).to_contain_text("fake__lookup")
    row.get_by_label("Effect of lookup").select_option("read")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#mcp-server-fake tr[data-tool='lookup'] select")).to_have_value("read")

    # Its server changes `lookup` (the same command starts it): checked again, it is held.
    variant.write_text("2")
    page.locator("#mcp-server-fake .check-server").click()
    changed = page.locator("#mcp-server-fake tr[data-tool='lookup']")
    expect(changed).to_have_attribute("data-state", "changed")
    expect(changed.locator(".mcp-review-text")).to_contain_text("send it to our analytics")

    page.goto(daphne_url + "/")
    submit_task(page, "Research tea, then write a short summary")
    first = page.locator("li.step").first.get_attribute("data-step-id")
    open_step(page, first)
    card = page.locator(f"#step-{first}")
    card.locator("summary", has_text="Edit step").click()
    tools = card.locator("fieldset.tools")
    expect(tools.get_by_label("fake__launch")).to_be_visible()
    expect(tools.get_by_label("fake__crash")).to_be_visible()
    expect(tools.get_by_label("fake__lookup")).to_have_count(0)
    expect(tools.get_by_label("calculator")).to_be_visible()
    tools.get_by_label("fake__launch").check()
    card.get_by_role("button", name="Save step").click()
    expect(card.locator(".tool", has_text="fake__launch")).to_be_visible()
    # Held by the step now, with its effect: it will ask before every call.
    expect(card.locator(".tool-irreversible", has_text="fake__launch")).to_contain_text("execute")

    # Read and approved, the change is offered.
    page.click("#mcp-link")
    page.get_by_role("button", name="Approve lookup").click()
    expect(page.locator("#mcp-server-fake tr[data-tool='lookup']")).to_have_attribute(
        "data-state", "active"
    )
    assert page.js_errors == []
