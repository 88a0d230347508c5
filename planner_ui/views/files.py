"""A run's files, downloaded by its owner: always as an attachment, never rendered by the
browser, whatever a step wrote into them."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from planner_ui.selectors.files import run_file_for_user
from planner_ui.signed_in import SignedInRequest


@login_required
@require_GET
def run_file_download(request: SignedInRequest, run_id: int, path: str) -> HttpResponse:
    found = run_file_for_user(request.user, run_id, path)
    if found is None:
        raise Http404("No such file in this run.")
    response = HttpResponse(bytes(found.content), content_type="application/octet-stream")
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=path.rsplit("/", 1)[-1]
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
