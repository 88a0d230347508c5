"""`python -m bench.pages` (`make bench-pages`): what a big plan costs the pages that show it.

For each size, a layered plan of that many steps is made as the benchmark's runs are (scripted,
the offline model), and its pages are fetched in this process through Django's test client, as
the run's owner: the plan editor while it awaits approval and what opening one step's editor
fetches, then, once every step has run here (`step_execute`, as bench.step_cpu does), the run
page, its step cards, timeline, plan JSON and the API's run, events and report, and what
opening a step's "Retry or fork" and unfolding its output and the result fetch. For each page:
the server's time (median of `--repeat`), the response's size and its database statements.
Statements must not grow with the plan (a query per step is the classic way a page dies at 1,000
steps); time and size grow at most linearly. With `--browser`, the plan editor and the finished
run page are also loaded in headless Chromium from a Daphne (bench.page_load): what the browser
adds to the server's time before a person can use the page; and the run page is watched while
the run executes here, to see whether it keeps up with the events and says when the run ends.
Run it on SQLite and with DATABASE_URL on PostgreSQL."""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import ExitStack
from typing import Any

from bench import page_load, shapes
from bench.in_process import app_in_process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pages", description=__doc__)
    parser.add_argument("--sizes", default="100,1000", help="plan steps, comma-separated")
    parser.add_argument("--width", type=int, default=32, help="widest layer of the plans")
    parser.add_argument("--repeat", type=int, default=3, help="fetches of each page")
    parser.add_argument(
        "--browser",
        action="store_true",
        help="also load the editor and the run page in headless Chromium (bench.page_load)",
    )
    args = parser.parse_args(argv)
    rows: list[tuple[int, str, float, int, int]] = []
    loads: list[tuple[int, page_load.Load]] = []
    watches: list[tuple[int, dict[str, Any]]] = []
    refreshes: list[tuple[int, str, dict[str, float]]] = []
    with app_in_process():
        from django.conf import settings
        from django.db import connection

        with ExitStack() as stack:
            base_url = (
                stack.enter_context(page_load.served(settings.VAR_DIR / "logs"))
                if args.browser
                else None
            )
            for size in (int(s) for s in args.sizes.split(",")):
                rows += _measure(size, args.width, args.repeat, base_url, loads, watches, refreshes)
    print(f"\n{connection.vendor}, layered plans of width {args.width}, median of {args.repeat}")
    print(f"{'steps':>6} {'page':28} {'server ms':>10} {'KB':>8} {'statements':>11}")
    for size, page, ms, size_bytes, statements in rows:
        print(f"{size:6d} {page:28} {ms:10.1f} {size_bytes / 1024:8.1f} {statements:11d}")
    if loads:
        print(
            "\nin Chromium, ms from the navigation's start: the response's end, the DOM ready "
            "(scripts run, graph laid out), the load event, the main thread's last long task; "
            "long tasks' time in all; the DOM's elements and the JavaScript heap"
        )
        print(
            f"{'steps':>6} {'page':28} {'response':>9} {'DOM ready':>10} {'load':>7} "
            f"{'busy until':>11} {'long tasks':>11} {'elements':>9} {'heap MB':>8}"
        )
        for size, load in loads:
            f = load.figures
            print(
                f"{size:6d} {load.page:28} {f['response_ms']:9.0f} {f['dom_ready_ms']:10.0f} "
                f"{f['load_ms']:7.0f} {f['busy_until_ms']:11.0f} {f['long_tasks_ms']:11.0f} "
                f"{f['elements']:9.0f} {f['heap_mb'] or 0:8.1f}"
            )
    if refreshes:
        print(
            "\nthe finished run page refreshed as the socket refreshes it: whole (a run's "
            "status, a plan version) and light (an approval, a file: the plan's workspace "
            "kept); ms until swapped in and settled, and its long tasks"
        )
        for size, kind, refresh in refreshes:
            print(
                f"{size:6d} steps, {kind:5}: settled in {refresh['settled_ms']:.0f} ms, long "
                f"tasks {refresh['long_tasks_ms']:.0f} ms"
            )
    if watches:
        print(
            "\nthe run page open while the run executes here (zero latency): seconds until the "
            "steps were done and until the page said the run had ended, its long tasks "
            "meanwhile, and what it fetched (its page, step cards, timeline)"
        )
        for size, watch in watches:
            shown = f"{watch['shown_s']:.1f} s" if watch["shown_s"] is not None else "never"
            fetched = watch["fetched"]
            print(
                f"{size:6d} steps: ran {watch['ran_s']:.1f} s, shown ended {shown}, long tasks "
                f"{watch['long_tasks_ms']:.0f} ms; fetched {fetched.get('steps', 0)} card "
                f"batches, {fetched.get('timeline', 0)} timelines, "
                f"{sum(fetched.values()) - fetched.get('steps', 0) - fetched.get('timeline', 0)} "
                "others"
            )
    return 0


def _measure(
    size: int,
    width: int,
    repeat: int,
    base_url: str | None,
    loads: list[tuple[int, page_load.Load]],
    watches: list[tuple[int, dict[str, Any]]],
    refreshes: list[tuple[int, str, dict[str, float]]],
) -> list[tuple[int, str, float, int, int]]:
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from bench.scheduler import bench_user, runs_delete, scripted_run_create
    from planner_ui.core.status import StepStatus
    from planner_ui.models import Run, Step
    from planner_ui.services.runs import run_approve_plan
    from planner_ui.services.steps import step_execute
    from planner_ui.services.tokens import token_create
    from planner_ui.views.runs import workspace_key

    user = bench_user()
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    token, raw = token_create(user=user, name="bench pages")
    shape = shapes.build("layered", size, seed=1, width=width)
    run = scripted_run_create(user, shape)
    measured = []

    def fetch(page: str, url: str, headers: dict[str, str] | None = None) -> None:
        times, body, statements = [], b"", 0
        for _ in range(repeat + 1):  # the first warms caches up and is not counted
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url, headers=headers, HTTP_AUTHORIZATION=f"Bearer {raw}")
                elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code}")
            body = b"".join(response) if response.streaming else response.content
            times.append(elapsed)
            statements = len(queries)
        measured.append((size, page, 1000 * statistics.median(times[1:]), len(body), statements))

    stack = ExitStack()
    context = None
    if base_url is not None:
        session = (settings.SESSION_COOKIE_NAME, client.cookies[settings.SESSION_COOKIE_NAME].value)
        context = stack.enter_context(page_load.browser_opened(base_url, session))

    def shown(page: str, url: str) -> None:
        if base_url is not None and context is not None:
            loads.append((size, page_load.load(context, page, base_url + url, repeat)))

    try:
        fetch("plan editor (awaiting)", reverse("run_detail", args=[run.pk]))
        shown("plan editor (awaiting)", reverse("run_detail", args=[run.pk]))
        # What opening one step's editor fetches (its forms are not in the page).
        middle = shape.plan()["steps"][size // 2]["id"]
        editor = reverse("step_editor", args=[run.pk, middle])
        htmx = {"HX-Request": "true"}
        fetch("a step's edit forms", editor, htmx)

        def execute() -> None:
            run_approve_plan(run.pk)
            while ready := list(
                Step.objects.filter(run_id=run.pk, status=StepStatus.QUEUED).values_list(
                    "step_id", flat=True
                )
            ):
                for step_id in ready:
                    step_execute(run.pk, step_id, "bench-pages")

        if context is not None and base_url is not None:
            url = base_url + reverse("run_detail", args=[run.pk])
            watches.append((size, page_load.watched(context, url, execute)))
        else:
            execute()
        some = ",".join(step["id"] for step in shape.plan()["steps"][:20])
        pages: list[tuple[str, Any]] = [
            ("run page (finished)", reverse("run_detail", args=[run.pk])),
            ("20 step cards", reverse("run_step_cards", args=[run.pk]) + f"?steps={some}"),
            ("timeline", reverse("run_timeline", args=[run.pk])),
            ("plan JSON", reverse("plan_json", args=[run.pk, 1])),
            ("API run", f"/api/v1/runs/{run.pk}"),
            ("API events (first page)", f"/api/v1/runs/{run.pk}/events"),
            ("API report", f"/api/v1/runs/{run.pk}/report"),
        ]
        for page, url in pages:
            fetch(page, url)
        # What the page fetches when the socket refreshes it: whole, and keeping its workspace.
        fragment = reverse("run_detail", args=[run.pk])
        fetch("run fragment, whole refresh", fragment, htmx)
        now = Run.objects.get(pk=run.pk)
        key = workspace_key(now, list(now.plan_versions.all()), list(now.steps.all()))
        fetch("run fragment, light refresh", f"{fragment}?keep={key}", htmx)
        shown("run page (finished)", reverse("run_detail", args=[run.pk]))
        if context is not None and base_url is not None:
            url = base_url + reverse("run_detail", args=[run.pk])
            for light in (False, True):
                figures = page_load.refreshed(context, url, repeat, light=light)
                refreshes.append((size, "light" if light else "whole", figures))
        # What opening a step's "Retry or fork", and unfolding a long output and the result,
        # fetch: the page sends none of those forms and only the texts' openings.
        fetch("a step's retry and fork forms", reverse("step_again", args=[run.pk, middle]), htmx)
        fetch("a step's whole output", reverse("step_output", args=[run.pk, middle]), htmx)
        fetch("the whole result", reverse("run_result", args=[run.pk]), htmx)
    finally:
        stack.close()
        runs_delete([run.pk])
        token.delete()
    return measured


if __name__ == "__main__":
    raise SystemExit(main())
