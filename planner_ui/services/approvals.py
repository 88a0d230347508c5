"""Approval gates: an executor's irreversible call, or a read from a host the run does not
allow, waits here for a person's decision.

A decision is one conditional UPDATE from pending, so two tabs or two people deciding at once
produce exactly one decision, and exactly one resumption of the step; the loser is told what
happened instead.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from planner_ui.core.bounds import JsonRefused, loads_bounded
from planner_ui.core.errors import AgentError, ToolError
from planner_ui.models import Approval
from planner_ui.selectors.tools import tool_for_approval
from planner_ui.tools import Tool

from .events import event_append, owner_notify
from .scheduler import step_resume

MAX_ARGUMENTS_CHARS = 20_000


class ApprovalRefused(AgentError):
    """A decision could not be taken; the message says why (already decided, bad arguments)."""


class ArgumentsRefused(ApprovalRefused):
    """The edited arguments of an approval were refused (too long, not JSON, or not what the
    tool takes); nothing was decided."""


def approval_find(run_id: int, step_id: str, call_key: str) -> Approval | None:
    return Approval.objects.filter(run_id=run_id, step_id=step_id, call_key=call_key).first()


def approval_request(
    run_id: int,
    step_id: str,
    call_key: str,
    tool: Tool,
    arguments: dict[str, Any],
    *,
    kind: str = Approval.Kind.CALL,
    hosts: list[str] | None = None,
) -> Approval:
    """Store the exact call an executor wants to make (or whose outcome nobody knows) for a
    person to decide; idempotent for a re-run of the step. `hosts` are those it reaches that
    the run does not allow (a read held for them shows them)."""
    with transaction.atomic():
        approval, created = Approval.objects.get_or_create(
            run_id=run_id,
            step_id=step_id,
            call_key=call_key,
            defaults={
                "tool": tool.name,
                "effect": tool.effect,
                "arguments": arguments,
                "kind": kind,
                "hosts": hosts or [],
            },
        )
        if created:
            event_append(
                run_id,
                "approval.requested",
                {
                    "approval": approval.pk,
                    "tool": tool.name,
                    "effect": str(tool.effect),
                    "arguments": arguments,
                    "kind": kind,
                    "hosts": hosts or [],
                },
                step_id=step_id,
            )
            owner_notify(run_id)
    return approval


def approval_decide(
    *,
    user: AbstractBaseUser,
    approval: Approval,
    approve: bool,
    arguments_json: str | None = None,
    reason: str = "",
    resolution: str = "",
) -> Approval:
    """Approve (optionally with edited arguments) or reject a pending call of the user's run.

    `approval` is the row the caller fetched for this user (selectors.approvals
    approval_get_for_user); the decision itself is a conditional UPDATE from pending."""
    if approval.run.owner_id != user.pk:
        raise ApprovalRefused("This request is not yours to decide: it belongs to another run.")
    if approval.kind == Approval.Kind.OUTCOME:
        if resolution not in Approval.Resolution.values:
            raise ApprovalRefused(
                "Say what happened to this call: it happened, it did not happen (retry with "
                "the same idempotency key), or fail the step."
            )
        approve = resolution != Approval.Resolution.FAIL
    elif resolution:
        raise ApprovalRefused(
            "Only a call whose outcome is unknown is resolved; approve or reject."
        )
    arguments = None
    if approve and arguments_json is not None and arguments_json.strip():
        tool = tool_for_approval(approval.run, approval.tool)
        if tool is None:
            raise ArgumentsRefused(
                f"'{approval.tool}' is no longer a tool of yours (its server was removed), so "
                "its arguments cannot be checked: approve the call as it is, or reject it."
            )
        arguments = _edited_arguments(tool, arguments_json)
    reason = reason.strip()[:2000]
    with transaction.atomic():
        decided = Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
            state=Approval.State.APPROVED if approve else Approval.State.REJECTED,
            approved_arguments=arguments,
            reason="" if approve else reason,
            resolution=resolution,
            decided_by=user,
            decided_at=timezone.now(),
        )
        # Read back fresh rather than into the caller's object, which other threads may share.
        approval = Approval.objects.select_related("decided_by").get(pk=approval.pk)
        if not decided:
            raise ApprovalRefused(_already(approval, approve))
        event_append(
            approval.run_id,
            "approval.decided",
            {
                "approval": approval.pk,
                "tool": approval.tool,
                "state": approval.state,
                "by": user.get_username(),
                "edited": approval.edited,
                "reason": approval.reason,
                "resolution": approval.resolution,
            },
            step_id=approval.step_id,
        )
        step_resume(approval.run_id, approval.step_id)
        owner_notify(approval.run_id)
    return approval


def _edited_arguments(tool: Tool, text: str) -> dict[str, Any]:
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise ArgumentsRefused(
            f"The edited arguments are {len(text)} characters long; at most "
            f"{MAX_ARGUMENTS_CHARS} are allowed."
        )
    try:
        arguments = loads_bounded(text)
    except JsonRefused as exc:
        raise ArgumentsRefused(f"The edited arguments were refused: {exc}.") from exc
    except json.JSONDecodeError as exc:
        raise ArgumentsRefused(f"The edited arguments are not valid JSON: {exc}") from exc
    try:
        tool.parse(arguments)
    except ToolError as exc:
        raise ArgumentsRefused(f"The edited arguments were refused: {exc}") from exc
    return arguments


def _already(approval: Approval, approve: bool) -> str:
    who = approval.decided_by.get_username() if approval.decided_by else "the system"
    when = (
        timezone.localtime(approval.decided_at).strftime("%H:%M:%S") if approval.decided_at else ""
    )
    wanted = "approved" if approve else "rejected"
    if approval.state == Approval.State.WITHDRAWN:
        return f"This request was withdrawn ({approval.reason}), so it cannot be {wanted}."
    return (
        f"This request was already {approval.state} by {who} at {when}, "
        f"so it cannot be {wanted} now."
    )
