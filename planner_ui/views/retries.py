"""Going back over a run from one of its steps: retry it (and the steps after it), or fork a
new run from it that reuses what came before."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core.errors import InvalidTransition
from planner_ui.core.run_rules import (
    fork_refusal,
    fork_step_refusal,
    retry_refusal,
    step_retry_refusal,
)
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.selectors.step_record import step_record
from planner_ui.services.retries import run_fork, step_retry
from planner_ui.signed_in import SignedInRequest

from .runs import render_run, run_action


@login_required
@require_GET
def step_again(request: SignedInRequest, run_id: int, step_id: str) -> HttpResponse:
    """A step's retry and fork forms, fetched when its "Retry or fork" first opens (run.js):
    sent inside every card, they were the largest part of a finished 1,000-step run's cards.
    Without htmx (no script), the same forms on a page of their own, which post plainly. A
    step that may no longer be retried nor forked from says why (the run went on since)."""
    run = run_get_for_user(request.user, run_id)
    step = get_object_or_404(run.steps, step_id=step_id)
    retry = retry_refusal(run) or step_retry_refusal(step.step_id, step.status)
    fork = fork_refusal(run)
    if fork is None:
        rows = run.steps.values_list("step_id", "depends_on", "status")
        fork = fork_step_refusal(
            step.step_id,
            {row_id: depends_on for row_id, depends_on, _ in rows},
            {row_id: status for row_id, _, status in rows},
        )
    context = {
        "run": run,
        "step": step_record(step),
        "retryable": retry is None,
        "forkable": fork is None,
        "refusal": retry or fork,
        "retry_url": reverse("step_retry", args=[run.pk, step.step_id]),
        "fork_url": reverse("run_fork", args=[run.pk, step.step_id]),
    }
    if request.htmx:
        return render(request, "planner_ui/_step_again_forms.html", context)
    return render(request, "planner_ui/step_again.html", context)


@login_required
@require_POST
def step_retry_view(request: SignedInRequest, run_id: int, step_id: str) -> HttpResponse:
    downstream = request.POST.get("downstream") == "on"
    done = f"Step '{step_id}' runs again" + (", and the steps after it." if downstream else ".")
    return run_action(
        request,
        run_id,
        lambda pk, user: step_retry(
            run_id=pk,
            step_id=step_id,
            user=user,
            instruction=request.POST.get("instruction", ""),
            downstream=downstream,
        ),
        done,
    )


@login_required
@require_POST
def run_fork_view(request: SignedInRequest, run_id: int, step_id: str) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    try:
        fork = run_fork(run_id=run.pk, step_id=step_id, user=request.user)
    except InvalidTransition as exc:
        if request.htmx:
            return render_run(request, run, fragment=True, error=str(exc), status=409)
        messages.error(request, str(exc))
        return redirect("run_detail", run_id=run.pk)
    messages.success(
        request,
        f"Run {fork.pk} is a fork of run {run.pk} from step '{step_id}': the steps before it are "
        "reused. Check the plan and approve it to run the rest.",
    )
    url = reverse("run_detail", args=[fork.pk])
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)
