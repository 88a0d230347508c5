"""The API tokens page: make a personal token (shown once), see when each was last used,
revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from planner_ui.models import ApiToken
from planner_ui.services.tokens import TokenRefused, token_create, token_revoke
from planner_ui.signed_in import SignedInRequest

# Where a token just made waits for the page that shows it: the next GET takes it out.
NEW_TOKEN_KEY = "api_token_made"


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: SignedInRequest) -> HttpResponse:
    """POST makes a token and redirects, so reloading the page never makes another; the GET
    after it shows the token once, from the session, which forgets it as it is shown."""
    if request.method == "POST":
        try:
            _, made = token_create(user=request.user, name=request.POST.get("name", ""))
        except TokenRefused as exc:
            messages.error(request, str(exc))
        else:
            request.session[NEW_TOKEN_KEY] = made
        return redirect("api_tokens")
    context = {
        "tokens": ApiToken.objects.filter(user=request.user),
        "made": request.session.pop(NEW_TOKEN_KEY, None),
    }
    # The secret is in this response only: it must not be cached anywhere on the way.
    response = render(request, "planner_ui/api_tokens.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_token_revoke(request: SignedInRequest, token_id: int) -> HttpResponse:
    try:
        token = token_revoke(user=request.user, token_id=token_id)
    except ApiToken.DoesNotExist:
        raise Http404("No such token.") from None
    messages.success(request, f"Revoked {token.prefix}… ({token.name}): it no longer works.")
    return redirect("api_tokens")
