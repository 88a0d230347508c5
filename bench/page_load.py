"""What a big page costs the browser that shows it (bench.pages --browser): the server's time is
half of what a person waits for; the rest is Chromium parsing the HTML, running the page's
scripts (the graph's layout among them) and laying it out.

Each page is loaded in headless Chromium (Debian's `chromium`, through Playwright) from a
Daphne serving the bench's database, as the run's owner, `repeat` times after a first load
that warms the static files' cache. For each load: when the response ended, when the DOM was
ready (DOMContentLoaded handled: the graph is laid out by then), the load event, when the main
thread was last busy (the end of the last long task, over 50 ms, before it stayed quiet for
`QUIET_S`), how long long tasks kept it busy in all, the DOM's elements and the JavaScript
heap."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUIET_S = 1.0  # no long task for this long: the page is done with its work
LONGEST_S = 60.0

# Before any of the page's own scripts: long tasks are only seen by an observer already there.
_OBSERVE = """
window.__benchLongTasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    window.__benchLongTasks.push([entry.startTime, entry.duration]);
  }
}).observe({type: "longtask", buffered: true});
"""

_READ = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const tasks = window.__benchLongTasks;
  return {
    response_ms: nav.responseEnd,
    dom_ready_ms: nav.domContentLoadedEventEnd,
    load_ms: nav.loadEventEnd,
    busy_until_ms: tasks.reduce(
      (end, [start, length]) => Math.max(end, start + length), nav.loadEventEnd),
    long_tasks_ms: tasks.reduce((sum, [, length]) => sum + length, 0),
    elements: document.getElementsByTagName("*").length,
    heap_mb: performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null,
  };
}"""

FIGURES = ("response_ms", "dom_ready_ms", "load_ms", "busy_until_ms", "long_tasks_ms")


@dataclass
class Load:
    page: str
    figures: dict[str, float]  # medians of FIGURES, and the last load's elements and heap


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if not path:
        raise SystemExit(
            "--browser needs Chromium: ./scripts/ensure-chromium.sh, or set CHROMIUM_PATH"
        )
    return path


@contextmanager
def served(log_dir: Path) -> Iterator[str]:
    """Daphne on this process's settings (the bench's folder, database and Redis): its URL."""
    from django.conf import settings

    from agentsite import embedded

    port = embedded.free_port()
    env = {
        "DJANGO_SETTINGS_MODULE": "agentsite.settings",
        "AGENTSITE_VAR_DIR": str(settings.VAR_DIR),
        "REDIS_URL": settings.REDIS_URL,
    }
    log_dir.mkdir(parents=True, exist_ok=True)
    daphne = embedded.start_daphne(
        env=env, host="127.0.0.1", port=port, log_path=log_dir / "pages-daphne.log"
    )
    try:
        embedded.wait_for_http(f"http://127.0.0.1:{port}/", timeout=60.0)
        yield f"http://127.0.0.1:{port}"
    finally:
        embedded.stop_processes([daphne])


@contextmanager
def browser_opened(base_url: str, session: tuple[str, str]) -> Iterator[Any]:
    """A Chromium context logged in with `session` (the cookie's name and value)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the bench's ORM calls beside it
    # are still plain synchronous calls, which Django's guard against async contexts refuses.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            headless=True,
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": session[0], "value": session[1], "url": base_url}])
            context.add_init_script(_OBSERVE)
            yield context
        finally:
            browser.close()


def load(context: Any, page_name: str, url: str, repeat: int) -> Load:
    """Load `url` repeat + 1 times, each in a new tab; the first is not counted."""
    runs: list[dict[str, float]] = []
    for _ in range(repeat + 1):
        tab = context.new_page()
        try:
            response = tab.goto(url, wait_until="load", timeout=LONGEST_S * 1000)
            if response is None or response.status != 200:
                raise SystemExit(f"{url}: {response.status if response else 'no response'}")
            runs.append(_quiet(tab))
        finally:
            tab.close()
    counted = runs[1:]
    figures = {name: statistics.median(run[name] for run in counted) for name in FIGURES}
    figures["elements"] = counted[-1]["elements"]
    figures["heap_mb"] = counted[-1]["heap_mb"]
    return Load(page_name, figures)


def _quiet(tab: Any) -> dict[str, float]:
    """The page's figures once no long task has come for QUIET_S."""
    deadline = time.monotonic() + LONGEST_S
    seen, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = tab.evaluate("() => window.__benchLongTasks.length")
        if count != seen:
            seen, still_since = count, time.monotonic()
        elif time.monotonic() - still_since >= QUIET_S:
            break
        time.sleep(0.1)
    figures: dict[str, float] = tab.evaluate(_READ)
    return figures


# What the socket makes the run page do (run.js, refreshMain): #run-main fetched again and
# swapped in, whole (a run's status, a new plan version) or without the plan's workspace, which
# the page keeps (an approval, a file: `keep` is the workspace's key). Resolves once htmx has
# settled it, with the time from the request to then.
_REFRESH = """([url, light]) => new Promise((resolve) => {
  const started = performance.now();
  document.body.addEventListener("htmx:afterSettle", (e) => {
    if (e.detail.target && e.detail.target.id === "run-main") resolve(performance.now() - started);
  }, {once: true});
  const key = document.getElementById("plan-workspace").dataset.key;
  const asked = light ? url + "?keep=" + encodeURIComponent(key) : url;
  htmx.ajax("GET", asked, {source: "#run-main", target: "#run-main", swap: "innerHTML"});
})"""


def refreshed(context: Any, url: str, repeat: int, *, light: bool) -> dict[str, float]:
    """The run page at `url` refreshed `repeat` times as the socket refreshes it (`light`: an
    event that changes only its step's card): the median time until each was settled, and its
    long tasks' median until the page was quiet again."""
    tab = context.new_page()
    settled, busy = [], []
    try:
        tab.goto(url, wait_until="load", timeout=LONGEST_S * 1000)
        _quiet(tab)
        fragment = tab.evaluate("() => document.getElementById('run-page').dataset.fragmentUrl")
        for _ in range(repeat):
            tab.evaluate("() => { window.__benchLongTasks.length = 0; }")
            settled.append(tab.evaluate(_REFRESH, [fragment, light]))
            busy.append(_quiet(tab)["long_tasks_ms"])
    finally:
        tab.close()
    return {"settled_ms": statistics.median(settled), "long_tasks_ms": statistics.median(busy)}


_ENDED = """() => {
  const header = document.getElementById("run-header");
  return Boolean(header) && header.dataset.status === "succeeded";
}"""


def watched(context: Any, url: str, execute: Callable[[], None]) -> dict[str, Any]:
    """The run page open while `execute` runs the whole run in this process (at the offline
    model's zero latency: events come as fast as the app makes them): how long it took, how
    long until the page said the run had ended (None: not within LONGEST_S after), its main
    thread's long tasks meanwhile, and what it fetched."""
    tab = context.new_page()
    fetched: Counter[str] = Counter()

    def note(request: Any) -> None:
        path = request.url.split("?")[0]
        if "/static/" not in path:
            fetched[path.rstrip("/").rsplit("/", 1)[-1]] += 1

    try:
        tab.goto(url, wait_until="load", timeout=LONGEST_S * 1000)
        _quiet(tab)
        tab.evaluate("() => { window.__benchLongTasks.length = 0; }")
        tab.on("request", note)
        started = time.monotonic()
        execute()
        ran_s = time.monotonic() - started
        try:
            tab.wait_for_function(_ENDED, timeout=LONGEST_S * 1000)
            shown_s: float | None = time.monotonic() - started
        except Exception:  # Playwright's TimeoutError: the page never said so
            shown_s = None
        long_tasks = tab.evaluate("() => window.__benchLongTasks.reduce((s, [, d]) => s + d, 0)")
    finally:
        tab.close()
    return {
        "ran_s": ran_s,
        "shown_s": shown_s,
        "long_tasks_ms": long_tasks,
        # By the URL's last part: the run's id (its page), "steps" (cards), "timeline".
        "fetched": dict(fetched),
    }
