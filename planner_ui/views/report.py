"""A run's report and timeline: the report downloads as JSON, Markdown or an HTML page; the
timeline is a fragment the run page fetches again as steps move, and the estimate's per-step
table one it fetches when the estimate is opened."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from planner_ui.selectors.estimate import run_estimate
from planner_ui.selectors.report import (
    REPORT_PAGE_POLICY,
    report_html,
    report_markdown,
    run_report,
)
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.selectors.timeline import run_timeline
from planner_ui.signed_in import SignedInRequest

REPORT_KINDS = {
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
}


@login_required
@require_GET
def run_report_download(request: SignedInRequest, run_id: int, kind: str) -> HttpResponse:
    # The kind ends up in the file name of a header: only the three there are.
    if kind not in REPORT_KINDS:
        raise Http404("A report downloads as report.json, report.md or report.html.")
    run = run_get_for_user(request.user, run_id)
    report = run_report(run)
    if kind == "json":
        body = json.dumps(report, indent=2, ensure_ascii=False)
    else:
        body = report_markdown(report) if kind == "md" else report_html(report)
    response = HttpResponse(body, content_type=REPORT_KINDS[kind])
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.{kind}"'
    response["X-Content-Type-Options"] = "nosniff"
    # Should a browser show it anyway: nothing loads, nothing runs (the page's own policy).
    response["Content-Security-Policy"] = REPORT_PAGE_POLICY + "; sandbox"
    return response


@login_required
@require_GET
def run_estimate_part(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Each step's actual figures beside its estimate: the table the run page's folded estimate
    fetches when it is opened."""
    run = run_get_for_user(request.user, run_id)
    # The steps without their outputs, which the table does not show (5 MB at 1,000 steps).
    context = {"run": run, "estimate": run_estimate(run, list(run.steps.defer("output")))}
    return render(request, "planner_ui/_run_estimate_table.html", context)


@login_required
@require_GET
def run_timeline_part(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    context = {"run": run, "timeline": run_timeline(run), "oob": True}
    return render(request, "planner_ui/_run_timeline.html", context)
