"""In the browser: a person removes their MCP server after confirming, and the page says so."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import McpServer, McpServerTool

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_remove_a_server_after_confirming(page, live_server, make_user):
    alice = make_user("alice", "pw-for-tests-1")
    server = McpServer.objects.create(
        owner=alice, name="notes", transport="http", url="https://mcp.example.com/mcp"
    )
    McpServerTool.objects.create(server=server, name="lookup", digest="0" * 64)
    login(page, live_server.url, "alice", "pw-for-tests-1")
    page.click("#mcp-link")
    remove = page.locator("#mcp-server-notes .remove-server")
    # Dismissed, nothing happens.
    page.once("dialog", lambda dialog: dialog.dismiss())
    remove.click()
    expect(page.locator("#mcp-server-notes")).to_be_visible()
    assert McpServer.objects.filter(pk=server.pk).exists()

    messages: list[str] = []

    def accept(dialog) -> None:
        messages.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    remove.click()
    expect(page.locator(".messages")).to_contain_text("Removed 'notes' and its 1 tool")
    expect(page.locator("#mcp-server-notes")).to_have_count(0)
    assert messages and "Remove the server 'notes'?" in messages[0]
    assert not McpServer.objects.exists() and not McpServerTool.objects.exists()
    assert page.js_errors == [] and page.csp_violations == []
