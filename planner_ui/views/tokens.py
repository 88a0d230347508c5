"""The API tokens page: make a personal token (shown once), see when each was last used,
revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from planner_ui.models import ApiToken
from planner_ui.services.tokens import TokenRefused, token_create, token_revoke


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    made = None
    if request.method == "POST":
        try:
            token, made = token_create(user=request.user, name=request.POST.get("name", ""))
        except TokenRefused as exc:
            messages.error(request, str(exc))
            return redirect("api_tokens")
    context = {
        "tokens": ApiToken.objects.filter(user=request.user),
        "made": made,
    }
    # The secret is in this response only: it must not be cached anywhere on the way.
    response = render(request, "planner_ui/api_tokens.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = token_revoke(user=request.user, token_id=token_id)
    except ApiToken.DoesNotExist:
        raise Http404("No such token.") from None
    messages.success(request, f"Revoked {token.prefix}… ({token.name}): it no longer works.")
    return redirect("api_tokens")
