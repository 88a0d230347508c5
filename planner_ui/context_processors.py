"""The pending-approvals count every page's header shows."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.http import HttpRequest

from planner_ui.selectors.approvals import pending_count


def approvals(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    # Counted only when a template shows it, once: the run page's live fragment, re-rendered on
    # every event, never does.
    return {"approvals_pending_count": cache(lambda: pending_count(user))}
