"""The run page's live log going back: the page shows the latest events and fetches earlier
ones a page at a time when asked (run.js), where it used to replay the whole log over its
socket on every load (5,000 events for a 1,000-step run)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from planner_ui.core.bounds import MAX_BIGINT, row_id
from planner_ui.core.frames import event_fitted
from planner_ui.selectors.runs import events_before, run_get_for_user
from planner_ui.signed_in import SignedInRequest

# Events the page shows before it is asked for more, and a page of earlier ones (run.js reads
# it from the page: one number for both).
LOG_PAGE = 300
# A log line needs a few fields of its event; an output or a tool's result in it is cut to this
# (the step's card has it whole).
EVENT_CHARS = 4096


@login_required
@require_GET
def run_log_earlier(request: SignedInRequest, run_id: int) -> JsonResponse:
    """`?before=<seq>`: up to LOG_PAGE events before it (without it: the latest), newest
    first, each cut to fit a log line; `more` says whether earlier ones are left."""
    run = run_get_for_user(request.user, run_id)
    before = row_id(request.GET.get("before", str(MAX_BIGINT)), maximum=MAX_BIGINT)
    if before is None:
        return JsonResponse(
            {"error": "before: the seq of an event, a whole number from 1 to 2^63 - 1"}, status=400
        )
    found = events_before(run.pk, before, LOG_PAGE + 1)
    events = [_fitted(event) for event in found[:LOG_PAGE]]
    return JsonResponse({"events": events, "more": len(found) > LOG_PAGE})


def _fitted(event: dict[str, object]) -> object:
    message = event_fitted(json.dumps({"type": "event", "event": event}), EVENT_CHARS)
    return json.loads(message)["event"]
