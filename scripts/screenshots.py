#!/usr/bin/env python3
"""Regenerate the README's screenshots from the real app: `make screenshots`.

Starts the app as `make run` does (agentsite.launcher: embedded Redis, Daphne, a Celery worker)
on a fresh SQLite database in a temporary folder, on the offline model with a latency that
lets a run be caught half way, and drives Chromium through the README's first example:

  docs/plan.png      the plan, waiting for approval
  docs/live.png      a step card while its executor writes
  docs/run.png       the run executing, the synthesizer running
  docs/timeline.png  the finished run's timeline
  docs/usage.png     the finished run's models and usage
  docs/evaluation.png  an experiment's results: the shipped parallel suite in two arms

Nothing of the developer's environment reaches the app (keys, routes, database, Redis): the
pictures are the same on every machine. Chromium is Debian's (CHROMIUM_PATH overrides).

  python scripts/screenshots.py [--out docs] [--only plan,run] [--latency 0.8]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentsite.embedded import free_port  # noqa: E402

# The first of the README's "Try:" tasks: parallel research, a comparison, a synthesis.
TASK = "Compare Python and Go for writing a command-line tool"
RUN_SHOTS = ("plan", "live", "run", "timeline", "usage")
SHOTS = (*RUN_SHOTS, "evaluation")
# What a developer's shell may hold and a new user's does not.
DROPPED = ("DJANGO_", "AGENTSITE_", "REDIS_URL", "DATABASE_URL", "CELERY_", "ANTHROPIC_", "OPENAI_")
VIEWPORT = {"width": 1280, "height": 900}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 90_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where the PNGs go")
    parser.add_argument("--only", default=",".join(SHOTS), help="which, comma-separated")
    parser.add_argument(
        "--latency",
        default="0.8",
        help="seconds per offline model call: long enough to catch a step while it writes",
    )
    args = parser.parse_args(argv)
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    if unknown := only - set(SHOTS):
        parser.error(f"unknown screenshots {sorted(unknown)}; there are {', '.join(SHOTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    with _app(args.latency) as (base_url, username, password):
        saved = _shoot(base_url, username, password, args.out, only)
    for path in saved:
        print(f"saved {path}")
    return 0


@contextmanager
def _app(latency: str) -> Iterator[tuple[str, str, str]]:
    """The app on its embedded defaults in a temporary folder; its URL and demo login."""
    with tempfile.TemporaryDirectory(prefix="shots-", dir="/tmp") as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
        env.update(
            AGENTSITE_VAR_DIR=folder,
            AGENTSITE_ALLOW_MODEL_REQUESTS="false",
            AGENTSITE_OFFLINE_LATENCY_S=latency,
        )
        port = free_port()
        launcher = subprocess.Popen(
            [sys.executable, "-m", "agentsite.launcher", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            login = _wait_for_login(launcher)
            base_url = f"http://127.0.0.1:{port}"
            _wait_ready(base_url, launcher)
            yield base_url, *login
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGTERM)
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(launcher.pid, signal.SIGKILL)


def _wait_for_login(launcher: subprocess.Popen) -> tuple[str, str]:
    seen: list[str] = []
    assert launcher.stdout is not None
    for line in launcher.stdout:
        seen.append(line)
        if found := re.search(r"Log in as (\S+) / (\S+)", line):
            return found.group(1), found.group(2)
    raise SystemExit("The app stopped before it printed its login:\n" + "".join(seen))


def _wait_ready(base_url: str, launcher: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if launcher.poll() is not None:
            raise SystemExit("The app stopped while starting (see its output above).")
        try:
            with urllib.request.urlopen(base_url + "/accounts/login/", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"The app never answered on {base_url}.")


# The id of a running step, or null (waited for).
_RUNNING_STEP = """() => {
  const step = document.querySelector('.step[data-status="running"]');
  return step ? step.dataset.stepId : null;
}"""


def _shoot(base_url: str, username: str, password: str, out: Path, only: set[str]) -> list[Path]:
    from playwright.sync_api import expect, sync_playwright

    saved: list[Path] = []

    def save(name: str, target) -> None:  # a page (whole) or a locator (its box)
        if name in only:
            path = out / f"{name}.png"
            if hasattr(target, "set_viewport_size"):
                target.screenshot(path=str(path), full_page=True)
            else:
                target.screenshot(path=str(path))
            saved.append(path)

    chromium = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base_url + "/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        if only & set(RUN_SHOTS):  # the run's pictures, one run for all of them
            page.fill("#id_task", TASK)
            page.click("#plan-it")
            expect(page.locator("#approve-plan")).to_be_visible()
            page.wait_for_function(
                "() => window.planGraph && window.planGraph.cy.nodes().length > 0"
            )
            save("plan", page)

            page.click("#approve-plan")
            # Step cards sit in the side panel beside the graph, closed until a step is opened,
            # and the page is sent the live text of the open step only: open a running step's
            # card, as a person would, and wait for a few of its words.
            writing_id = page.wait_for_function(_RUNNING_STEP).json_value()
            button = page.locator(f'.plan-graph-step[data-step-id="{writing_id}"]')
            button.focus()
            button.press("Enter")
            writing = page.locator(f"#step-{writing_id}")
            expect(writing).to_be_visible()
            expect(writing.locator(".step-live")).to_contain_text(re.compile(r"\w+ \w+ \w+"))
            save("live", writing)

            page.wait_for_function("() => window.planGraph.status('synthesis') === 'running'")
            save("run", page)

            expect(page.locator("#result")).to_be_visible()
            page.wait_for_timeout(1_000)  # the timeline's last refresh follows the run's end
            save("timeline", page.locator("#run-timeline"))
            usage = page.locator("#run-usage")
            usage.locator("summary").click()  # folded on the page; the picture shows it open
            expect(usage.locator(".usage-grid")).to_be_visible()
            save("usage", usage)

        if "evaluation" in only:
            page.goto(base_url + "/evaluations/suites/new/?from=parallel")
            page.click("#save-suite")
            page.fill("#concurrency", "4")
            page.click("#start-experiment")
            # Eight runs, four at a time, every model call at the offline latency.
            expect(page.locator("#experiment-results")).to_have_attribute(
                "data-status", "finished", timeout=5 * TIMEOUT_MS
            )
            save("evaluation", page.locator("#experiment"))
        browser.close()
    return saved


if __name__ == "__main__":
    sys.exit(main())
