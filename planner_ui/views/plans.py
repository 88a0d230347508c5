"""Plan editing over plain forms: every edit works from the keyboard, with or without htmx.

An htmx request gets the run's main fragment back (with the outcome on top); a plain form post
is redirected to the run page with the outcome as a message."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core.bounds import row_id
from planner_ui.core.diff import diff_graph, plan_diff
from planner_ui.core.edits import (
    AddDependency,
    AddStep,
    DeleteStep,
    DependentsPolicy,
    Edit,
    RemoveDependency,
    UpdateStep,
)
from planner_ui.core.errors import InvalidTransition, PlanValidationError
from planner_ui.core.plan import Plan
from planner_ui.models import PlanProposal, PlanVersion
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.services.plans import PlanConflict, plan_edit, plan_export, plan_import, plan_undo
from planner_ui.services.proposals import proposal_accept, proposal_discard, proposal_request
from planner_ui.signed_in import SignedInRequest

from .runs import render_run

MAX_IMPORT_BYTES = 200_000


class FormProblem(ValueError):
    """The submitted form itself was incomplete or malformed."""


def _field(data: QueryDict, name: str) -> str:
    value = data.get(name)
    if value is None:
        raise FormProblem(f"the form has no '{name}' field")
    return value


def _edit_from_form(data: QueryDict) -> Edit:
    op = data.get("op", "")
    if op == "update":
        return UpdateStep(
            step_id=_field(data, "step_id"),
            title=data.get("title"),
            instruction=data.get("instruction"),
            role=data.get("role"),
            # Unticking every box is a real change, so the form says the list was shown.
            tools=tuple(data.getlist("tools")) if "tools_shown" in data else None,
        )
    if op == "add":
        return AddStep(
            step_id=data.get("step_id", "").strip(),
            title=_field(data, "title"),
            instruction=_field(data, "instruction"),
            role=_field(data, "role"),
            tools=tuple(data.getlist("tools")),
            depends_on=tuple(data.getlist("depends_on")),
        )
    if op == "delete":
        try:
            policy = DependentsPolicy(data.get("dependents", DependentsPolicy.RECONNECT))
        except ValueError:
            raise FormProblem(
                "'dependents' must be one of " + ", ".join(p.value for p in DependentsPolicy)
            ) from None
        return DeleteStep(step_id=_field(data, "step_id"), dependents=policy)
    if op == "add_dependency":
        return AddDependency(step_id=_field(data, "step_id"), depends_on=_field(data, "depends_on"))
    if op == "remove_dependency":
        return RemoveDependency(
            step_id=_field(data, "step_id"), depends_on=_field(data, "depends_on")
        )
    raise FormProblem(
        f"unknown edit '{op}'; expected update, add, delete, add_dependency, "
        "remove_dependency or undo"
    )


def _respond(
    request: SignedInRequest, run_id: int, *, notice: str = "", error: str = "", status: int = 200
) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    if request.htmx:
        return render_run(request, run, fragment=True, notice=notice, error=error, status=status)
    if error:
        messages.error(request, error)
    elif notice:
        messages.success(request, notice)
    return redirect("run_detail", run_id=run_id)


def _number(data: QueryDict, name: str, what: str) -> int:
    number = row_id(_field(data, name))
    if number is None:
        raise FormProblem(f"'{name}' must be {what}")
    return number


def _base_version(data: QueryDict) -> int:
    return _number(data, "base_version", "a version number")


def _save_and_respond(
    request: SignedInRequest, run_id: int, save: Callable[[], PlanVersion | str], refused: str
) -> HttpResponse:
    """Run one change and answer with its outcome; every refusal says why and changes nothing.

    `save` returns the new version, or a notice when the change makes no version (yet)."""
    try:
        result = save()
    except (PlanConflict, InvalidTransition) as exc:
        return _respond(request, run_id, error=str(exc), status=409)
    except PlanValidationError as exc:
        text = f"{refused}, and the plan is as it was: " + "; ".join(exc.errors)
        return _respond(request, run_id, error=text, status=400)
    except FormProblem as exc:
        return _respond(request, run_id, error=f"The form was incomplete: {exc}.", status=400)
    if isinstance(result, str):
        return _respond(request, run_id, notice=result)
    return _respond(request, run_id, notice=f"Saved version {result.number}: {result.note}.")


@login_required
@require_POST
def plan_change(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)

    def save() -> PlanVersion:
        base = _base_version(request.POST)
        if request.POST.get("op") == "undo":
            return plan_undo(run_id=run.pk, base_version=base)
        return plan_edit(run_id=run.pk, base_version=base, edit=_edit_from_form(request.POST))

    return _save_and_respond(request, run.pk, save, "The change was refused")


@login_required
@require_POST
def plan_import_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)

    def save() -> PlanVersion:
        base = _base_version(request.POST)
        upload = request.FILES.get("plan_file")
        if upload is not None:
            if (upload.size or 0) > MAX_IMPORT_BYTES:
                raise PlanValidationError(
                    [f"the file is {upload.size} bytes; at most {MAX_IMPORT_BYTES}"]
                )
            text = upload.read().decode("utf-8", errors="replace")
        else:
            text = request.POST.get("plan_json", "")
        if not text.strip():
            raise FormProblem("choose a JSON file or paste a plan")
        return plan_import(run_id=run.pk, base_version=base, text=text)

    return _save_and_respond(request, run.pk, save, "The imported plan was refused")


@login_required
@require_GET
def plan_json(request: SignedInRequest, run_id: int, number: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    version = get_object_or_404(run.plan_versions, number=number)
    response = HttpResponse(plan_export(version), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-plan-v{number}.json"'
    return response


@login_required
@require_GET
def plan_diff_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    # Looked up by what was asked for, which may be no number: that is a KeyError too.
    versions: dict[int | None, PlanVersion] = {v.number: v for v in run.plan_versions.all()}
    try:
        old, new = (
            versions[row_id(request.GET.get("from"))],
            versions[row_id(request.GET.get("to"))],
        )
    except KeyError:
        numbers = ", ".join(str(n) for n in versions) or "none"
        return HttpResponse(
            f"Choose two versions of this plan to compare; it has: {numbers}.",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    before, after = Plan.model_validate(old.plan), Plan.model_validate(new.plan)
    template = "planner_ui/_plan_diff.html" if request.htmx else "planner_ui/plan_diff.html"
    context = {
        "run": run,
        "old": old,
        "new": new,
        "diff": plan_diff(before, after),
        "graph": diff_graph(before, after),
    }
    return render(request, template, context)


# A conflict's choice comes as choice:<Conflict.key> = mine | theirs (core.merge).
CHOICE_PREFIX = "choice:"


def _choices(data: QueryDict) -> dict[str, str]:
    return {
        name.removeprefix(CHOICE_PREFIX): data.get(name, "")
        for name in data
        if name.startswith(CHOICE_PREFIX)
    }


@login_required
@require_POST
def plan_revision(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Ask the planner for a revision, or accept or discard the one it proposed."""
    run = run_get_for_user(request.user, run_id)

    def save() -> PlanVersion | str:
        action = request.POST.get("action", "")
        if action == "request":
            proposal_request(
                run_id=run.pk,
                base_version=_base_version(request.POST),
                note=request.POST.get("note", ""),
            )
            return "The planner is revising the plan; its proposal will appear here."
        if action not in ("accept", "discard"):
            raise FormProblem("'action' must be request, accept or discard")
        proposal_id = _number(request.POST, "proposal", "a proposal number")
        try:
            if action == "accept":
                return proposal_accept(
                    run_id=run.pk,
                    proposal_id=proposal_id,
                    base_version=_base_version(request.POST),
                    choices=_choices(request.POST),
                )
            proposal_discard(run_id=run.pk, proposal_id=proposal_id)
        except PlanProposal.DoesNotExist:
            raise FormProblem("there is no such proposal for this run") from None
        return "Discarded the planner's proposal; the plan is as it was."

    return _save_and_respond(request, run.pk, save, "The revision was refused")
