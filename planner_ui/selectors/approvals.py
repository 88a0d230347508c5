"""Approvals and receipts as the pages show them, always scoped to the user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from planner_ui.models import Approval, Run

RECENTLY_DECIDED = 20


def pending_count(user: AbstractBaseUser) -> int:
    return Approval.objects.filter(run__owner=user, state=Approval.State.PENDING).count()


def approval_get_for_user(user: AbstractBaseUser, approval_id: int) -> Approval | None:
    """One approval request of the user's runs, with its run; None for anyone else's."""
    return (
        Approval.objects.select_related("run", "decided_by")
        .filter(pk=approval_id, run__owner=user)
        .first()
    )


def inbox_for_user(user: AbstractBaseUser) -> dict[str, Any]:
    mine = Approval.objects.filter(run__owner=user).select_related("run", "decided_by")
    return {
        "pending": list(mine.filter(state=Approval.State.PENDING).order_by("created_at")),
        "decided": list(
            mine.exclude(state=Approval.State.PENDING).order_by("-decided_at", "-id")[
                :RECENTLY_DECIDED
            ]
        ),
    }


def run_approvals(run: Run) -> dict[str, Any]:
    approvals = list(run.approvals.select_related("decided_by"))
    return {
        "pending_approvals": [a for a in approvals if a.state == Approval.State.PENDING],
        "decided_approvals": [a for a in approvals if a.state != Approval.State.PENDING],
        "receipts": list(run.receipts.select_related("approval")),
    }
