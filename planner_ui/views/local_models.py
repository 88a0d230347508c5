"""The submission form's local models, for an admin: start a GGUF file, watch it load, stop
it. `make run`'s model supervisor does the starting and stopping (services.local_models)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from planner_ui.selectors.local_models import local_models_panel
from planner_ui.services.local_models import (
    LocalModelRefused,
    local_model_start,
    local_model_stop,
)
from planner_ui.signed_in import SignedInRequest


@login_required
@require_GET
def local_models(request: SignedInRequest) -> HttpResponse:
    if not request.user.is_staff:
        return HttpResponseForbidden("Only an administrator manages local models.")
    context = {"local": local_models_panel()}
    return render(request, "planner_ui/_local_model_list.html", context)


@login_required
@require_POST
def local_model_start_view(request: SignedInRequest) -> HttpResponse:
    try:
        model = local_model_start(
            user=request.user,
            path=request.POST.get("model_path", ""),
            default_route=request.POST.get("default_route") == "on",
        )
    except LocalModelRefused as exc:
        # The path stays in its field, to be mended.
        return _answer(request, error=str(exc), model_path=request.POST.get("model_path", ""))
    return _answer(request, notice=f"Starting {model.name}: it answers as {model.route}.")


@login_required
@require_POST
def local_model_stop_view(request: SignedInRequest, model_id: int) -> HttpResponse:
    try:
        model = local_model_stop(user=request.user, model_id=model_id)
    except LocalModelRefused as exc:
        return _answer(request, error=str(exc))
    return _answer(request, notice=f"Stopping {model.name}.")


def _answer(
    request: SignedInRequest, *, notice: str = "", error: str = "", model_path: str = ""
) -> HttpResponse:
    """The panel for htmx; without JavaScript, back to the form with the outcome. A refusal
    is 403 for someone who is not an administrator (they have no panel), else 400."""
    if error and not request.user.is_staff:
        return HttpResponseForbidden(error)
    if not request.htmx:
        if error:
            messages.error(request, error)
        elif notice:
            messages.success(request, notice)
        return redirect("home")
    context = {
        "local": local_models_panel(),
        "notice": notice,
        "error": error,
        "model_path": model_path,
    }
    return render(request, "planner_ui/_local_models.html", context, status=400 if error else 200)
