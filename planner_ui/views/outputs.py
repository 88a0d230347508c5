"""What a folded text holds past its opening: a step's output and a run's result, fetched when
a person unfolds them (run.js). A long one is sent as its opening with the page (core.fold):
whole, the outputs were half of a finished 1,000-step run's page. Without htmx (no script) the
same text is a page of its own, which the fold links to."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from planner_ui.selectors.runs import run_get_for_user
from planner_ui.signed_in import SignedInRequest


@login_required
@require_GET
def step_output(request: SignedInRequest, run_id: int, step_id: str) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    step = get_object_or_404(run.steps.only("step_id", "title", "output"), step_id=step_id)
    heading = f"Output of step {step.step_id}"
    return _whole(request, run.pk, step.output, heading, step.title, f"#step-{step.step_id}")


@login_required
@require_GET
def run_result(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    return _whole(request, run.pk, run.result, "Result", run.task, "#result")


def _whole(
    request: SignedInRequest, run_id: int, text: str, heading: str, about: str, anchor: str
) -> HttpResponse:
    context = {"run_id": run_id, "text": text, "heading": heading, "about": about}
    if request.htmx:
        return render(request, "planner_ui/_markdown.html", context)
    context["back"] = anchor
    return render(request, "planner_ui/whole_text.html", context)
