"""Evaluations: a person's suites (paste YAML or JSON, import a shipped one, export), starting
an experiment from a suite, and an experiment's results with its plots and exports. Every page
is its owner's: another person's suite or experiment is a 404."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from planner_ui.core.errors import InvalidTransition
from planner_ui.core.evaluation import (
    MAX_REPEAT,
    MAX_SUITE_CHARS,
    EvaluationError,
    arm_parse,
    shipped_suites,
    suite_dump,
    suite_load,
)
from planner_ui.models import EvaluationSuite, Experiment
from planner_ui.selectors.evaluations import (
    experiment_get_for_user,
    experiment_list_for_user,
    experiment_results,
    results_plots,
    suite_get_for_user,
    suite_list_for_user,
)
from planner_ui.services.evaluations import (
    MAX_CONCURRENCY,
    experiment_cancel,
    experiment_create,
    experiment_pause,
    experiment_resume,
    suite_save,
)
from planner_ui.signed_in import SignedInRequest


@login_required
@require_GET
def evaluations(request: SignedInRequest) -> HttpResponse:
    context = {
        "suites": suite_list_for_user(request.user),
        "shipped": sorted(shipped_suites()),
        "experiments": experiment_list_for_user(request.user)[:50],
    }
    return render(request, "planner_ui/evaluations.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def suite_new(request: SignedInRequest) -> HttpResponse:
    """A new suite from pasted text; ?from=<shipped suite> starts from one of those."""
    if request.method == "POST":
        content = request.POST.get("content", "")
        try:
            content = _posted_suite(request)
            suite = suite_save(request.user, content)
        except EvaluationError as exc:
            return _suite_form(request, None, content, str(exc))
        messages.success(request, f"Saved suite {suite.name}.")
        return redirect("suite_detail", suite_id=suite.pk)
    content = shipped_suites().get(request.GET.get("from", ""), "")
    return _suite_form(request, None, content, "")


@login_required
@require_http_methods(["GET", "POST"])
def suite_detail(request: SignedInRequest, suite_id: int) -> HttpResponse:
    """The suite's text to edit, its tasks, and the form that starts an experiment on it."""
    row = suite_get_for_user(request.user, suite_id)
    if request.method == "POST":
        content = request.POST.get("content", "")
        try:
            content = _posted_suite(request)
            suite_save(request.user, content, row)
        except EvaluationError as exc:
            return _suite_form(request, row, content, str(exc))
        messages.success(request, f"Saved suite {row.name}.")
        return redirect("suite_detail", suite_id=row.pk)
    return _suite_form(request, row, row.content, "")


def _posted_suite(request: HttpRequest) -> str:
    """The suite's text: an uploaded file (import) wins over the text box."""
    upload = request.FILES.get("file")
    if upload is None:
        return request.POST.get("content", "")
    # Bytes, at most four per character: a file past that is refused unread.
    if (upload.size or 0) > 4 * MAX_SUITE_CHARS:
        raise EvaluationError(
            f"The file is larger than a suite may be ({MAX_SUITE_CHARS} characters)."
        )
    try:
        data: bytes = upload.read()
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EvaluationError(
            "The file is not text in UTF-8: export the suite as YAML or JSON."
        ) from None


def _suite_form(
    request: SignedInRequest, row: EvaluationSuite | None, content: str, error: str
) -> HttpResponse:
    try:
        parsed = suite_load(content) if content and not error else None
    except EvaluationError:
        parsed = None
    context = {
        "row": row,
        "content": content,
        "error": error,
        "parsed": parsed,
        "max_repeat": MAX_REPEAT,
        "max_concurrency": MAX_CONCURRENCY,
    }
    return render(request, "planner_ui/suite.html", context, status=400 if error else 200)


@login_required
@require_POST
def suite_delete(request: SignedInRequest, suite_id: int) -> HttpResponse:
    """Experiments on it keep their copy of it, and their results."""
    row = suite_get_for_user(request.user, suite_id)
    row.delete()
    messages.success(request, f"Deleted suite {row.name}; its experiments keep their copy.")
    return redirect("evaluations")


@login_required
@require_GET
def suite_export(request: SignedInRequest, suite_id: int, fmt: str) -> HttpResponse:
    """YAML as the person wrote it (comments kept); JSON as the schema dumps it."""
    row = suite_get_for_user(request.user, suite_id)
    if fmt == "yaml":
        body, content_type = row.content, "application/yaml"
    elif fmt == "json":
        body, content_type = suite_dump(suite_load(row.content), "json"), "application/json"
    else:
        raise Http404("Export as .yaml or .json.")
    return _download(body, content_type, f"{row.name}.{fmt}")


@login_required
@require_POST
def experiment_new(request: SignedInRequest, suite_id: int) -> HttpResponse:
    row = suite_get_for_user(request.user, suite_id)
    form = request.POST
    try:
        arms = [arm_parse(kind) for kind in form.getlist("arm")]
        arms += [arm_parse(line) for line in form.get("more_arms", "").splitlines() if line.strip()]
        experiment = experiment_create(
            request.user,
            suite_load(row.content),
            arms,
            repeat=_int(form.get("repeat"), "Repeat"),
            concurrency=_int(form.get("concurrency"), "Runs at once"),
            budget_usd=_usd(form.get("budget_usd", "")),
            tool_policy=form.get("tool_policy", "dry_run"),
            suite_row=row,
            judge=form.get("judge", ""),
        )
    except EvaluationError as exc:
        messages.error(request, str(exc))
        return redirect("suite_detail", suite_id=row.pk)
    return redirect("experiment_detail", experiment_id=experiment.pk)


def _int(value: str | None, name: str) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise EvaluationError(f"{name}: write a whole number.") from None


def _usd(value: str) -> Decimal | None:
    if not value.strip():
        return None
    try:
        amount = Decimal(value.strip().lstrip("$"))
    except InvalidOperation:
        raise EvaluationError("Budget: write an amount in USD, e.g. 0.50.") from None
    if not amount.is_finite():
        raise EvaluationError("Budget: write an amount in USD, e.g. 0.50.")
    return amount


@login_required
@require_GET
def experiment_detail(request: SignedInRequest, experiment_id: int) -> HttpResponse:
    """The results; while it runs, htmx asks again for the results part every 2 s."""
    experiment = experiment_get_for_user(request.user, experiment_id)
    results = experiment_results(experiment)
    context = {"results": results, "experiment": experiment, **results_plots(results)}
    template = (
        "planner_ui/_experiment_results.html" if request.htmx else "planner_ui/experiment.html"
    )
    return render(request, template, context)


@login_required
@require_POST
def experiment_cancel_view(request: SignedInRequest, experiment_id: int) -> HttpResponse:
    experiment = experiment_get_for_user(request.user, experiment_id)
    experiment_cancel(experiment.pk, request.user)
    return redirect("experiment_detail", experiment_id=experiment.pk)


@login_required
@require_POST
def experiment_pause_view(request: SignedInRequest, experiment_id: int) -> HttpResponse:
    return _steer(request, experiment_id, experiment_pause)


@login_required
@require_POST
def experiment_resume_view(request: SignedInRequest, experiment_id: int) -> HttpResponse:
    return _steer(request, experiment_id, experiment_resume)


def _steer(
    request: SignedInRequest, experiment_id: int, action: Callable[[int, User], Experiment]
) -> HttpResponse:
    experiment = experiment_get_for_user(request.user, experiment_id)
    try:
        action(experiment.pk, request.user)
    except InvalidTransition as exc:
        messages.error(request, str(exc))
    return redirect("experiment_detail", experiment_id=experiment.pk)


@login_required
@require_GET
def experiment_export(request: SignedInRequest, experiment_id: int, fmt: str) -> HttpResponse:
    """JSON: the figures per arm and every slot. CSV: one line per slot, for a spreadsheet."""
    experiment = experiment_get_for_user(request.user, experiment_id)
    results = experiment_results(experiment)
    name = f"experiment-{experiment.pk}-{experiment.suite_name}"
    if fmt == "json":
        body = json.dumps(results.as_dict(), indent=2)
        return _download(body, "application/json", f"{name}.json")
    if fmt != "csv":
        raise Http404("Export as .csv or .json.")
    out = io.StringIO()
    writer = csv.writer(out)
    columns = ["outcome", "model_calls", "tokens_in", "tokens_out", "cost_usd", "wall_s"]
    # Judging after the run's own figures: what the judge spent is not the run's.
    judging = ["judge_calls", "judge_tokens", "judge_cost_usd"]
    writer.writerow(
        ["task", "arm", "repetition", "run", "passed", *columns, "rechecks", *judging, "checks"]
    )
    for task in results.as_dict()["tasks"]:
        for arm, slots in task["arms"].items():
            for slot in slots:
                checks = "; ".join(detail for _, detail in slot["checks"])
                judged = slot["judging"]
                writer.writerow(
                    [task["id"], arm, slot["repetition"], slot["run"] or "", slot["passed"]]
                    + [slot[c] for c in columns]
                    + [slot["rechecks"], judged["model_calls"], judged["tokens"]]
                    + [judged["cost_usd"], checks]
                )
    return _download(out.getvalue(), "text/csv", f"{name}.csv")


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=filename
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response
