"""Approvals and receipts as the pages show them, always scoped to the user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from planner_ui.models import Approval, Run

RECENTLY_DECIDED = 20


def pending_count(user: User) -> int:
    return Approval.objects.filter(run__owner=user, state=Approval.State.PENDING).count()


def approval_get_for_user(user: User, approval_id: int) -> Approval | None:
    """One approval request of the user's runs, with its run; None for anyone else's."""
    return (
        Approval.objects.select_related("run", "decided_by")
        .filter(pk=approval_id, run__owner=user)
        .first()
    )


def inbox_for_user(user: User, *, run_id: int | None = None, tool: str = "") -> dict[str, Any]:
    """The user's approval requests across runs, narrowed to one run or one tool if asked;
    with the runs and tools that have requests waiting, to narrow by."""
    everything = Approval.objects.filter(run__owner=user)
    waiting = everything.filter(state=Approval.State.PENDING)
    mine = everything.select_related("run", "decided_by")
    if run_id is not None:
        mine = mine.filter(run_id=run_id)
    if tool:
        mine = mine.filter(tool=tool)
    decided = list(
        mine.exclude(state=Approval.State.PENDING).order_by("-decided_at", "-id")[:RECENTLY_DECIDED]
    )
    return {
        "filter_runs": list(
            Run.objects.filter(approvals__in=waiting).distinct().values_list("pk", "task")
        ),
        "filter_tools": sorted(set(waiting.values_list("tool", flat=True))),
        "filter_run": run_id,
        "filter_tool": tool,
        "pending": list(mine.filter(state=Approval.State.PENDING).order_by("created_at")),
        "resolutions": Approval.Resolution.choices,
        "decided": decided,
        # How the runs of those decisions went on: a rejected call shows as a warning there.
        "decided_runs": list(dict.fromkeys(approval.run for approval in decided)),
    }


def run_approvals(run: Run) -> dict[str, Any]:
    approvals = list(run.approvals.select_related("decided_by"))
    return {
        "pending_approvals": [a for a in approvals if a.state == Approval.State.PENDING],
        "decided_approvals": [a for a in approvals if a.state != Approval.State.PENDING],
        "receipts": list(run.receipts.select_related("approval")),
        "resolutions": Approval.Resolution.choices,
    }
