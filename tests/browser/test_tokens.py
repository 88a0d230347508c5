"""In the browser: a token is made once, however often the page is reloaded, and its Copy
button puts it on the clipboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from planner_ui.models import ApiToken

from .flows import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_make_a_token_reload_and_copy_it(page, live_server, make_user):
    make_user("alice", "pw-for-tests-1")
    login(page, live_server.url, "alice", "pw-for-tests-1")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.click("#api-tokens-link")
    page.fill("#token-name", "nightly script")
    page.click("#token-form button[type=submit]")
    value = page.locator("#new-token-value")
    expect(value).to_contain_text("ast_")
    token = value.inner_text().strip()

    page.click("#copy-token")
    expect(page.locator("#copy-token-state")).to_have_text("Copied.")
    assert page.evaluate("() => navigator.clipboard.readText()") == token

    page.reload()
    expect(page.locator("#tokens-table tbody tr")).to_have_count(1)
    expect(page.locator("#new-token-value")).to_have_count(0)
    assert ApiToken.objects.count() == 1
    assert page.js_errors == [] and page.csp_violations == []
