"""Headless Chromium through Playwright, against Daphne and a real worker."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls of the tests are
# still plain synchronous calls, so Django's guard against async contexts does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or None


# One Chromium for the session, however many test folders ask for it (tests/security imports
# these fixtures too): a second sync Playwright cannot start while the first runs.
_shared: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if _shared["users"] == 0:
        playwright = sync_playwright().start()
        path = chromium_path()
        _shared["playwright"] = playwright
        _shared["browser"] = (
            playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
            if path
            else playwright.chromium.launch(args=CHROMIUM_ARGS, headless=True)
        )
    _shared["users"] += 1
    yield _shared["browser"]
    _shared["users"] -= 1
    if _shared["users"] == 0:
        _shared.pop("browser").close()
        _shared.pop("playwright").stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page whose test fails on anything the Content-Security-Policy refused: the browser
    tests are the proof that the policy blocks nothing the pages need. (So wait_for_function
    takes a function, "() => ...": an expression it would eval in the page, which is refused.)"""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    refused: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda message: (
            refused.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    page.js_errors = errors
    page.csp_violations = refused
    yield page
    context.close()
    if refused:
        pytest.fail("the Content-Security-Policy refused:\n" + "\n".join(refused))
