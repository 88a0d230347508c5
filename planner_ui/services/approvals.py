"""Approval gates: an executor's irreversible call, or a read from a host the run does not
allow, waits here for a person's decision.

A decision is one conditional UPDATE from pending, so two tabs or two people deciding at once
produce exactly one decision, and exactly one resumption of the step; the loser is told what
happened instead.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planner_ui.core.approval_form import arguments_from_form, form_fields
from planner_ui.core.bounds import JsonRefused, loads_bounded
from planner_ui.core.errors import AgentError, ArgumentsInvalid, ToolError
from planner_ui.core.events import EventType
from planner_ui.core.hosts import url_endpoint
from planner_ui.models import Approval
from planner_ui.selectors.tools import tool_for_approval
from planner_ui.tools import Tool
from planner_ui.tools.netpolicy import check_url

from .events import event_append, owner_notify
from .mcp import net_allow
from .scheduler import step_resume

MAX_ARGUMENTS_CHARS = 20_000
# Arguments edited field by field: a model may send a 20,000-character email body, and a
# person who corrects one word in it must be able to send it back.
MAX_FORM_ARGUMENTS_CHARS = 100_000


class ApprovalRefused(AgentError):
    """A decision could not be taken; the message says why (already decided, bad arguments)."""


class ArgumentsRefused(ApprovalRefused):
    """The edited arguments of an approval were refused (too long, not JSON, or not what the
    tool takes); nothing was decided. `problems` maps an argument's name to what is wrong with
    it, for a form to show at its field."""

    def __init__(self, message: str, problems: Mapping[str, str] | None = None) -> None:
        self.problems = dict(problems or {})
        super().__init__(message)


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
                EventType.APPROVAL_REQUESTED,
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
    user: User,
    approval: Approval,
    approve: bool,
    arguments_json: str | None = None,
    fields: Mapping[str, str] | None = None,
    reason: str = "",
    resolution: str = "",
) -> Approval:
    """Approve (optionally with edited arguments) or reject a pending call of the user's run.

    Edited arguments come as JSON text (`arguments_json`), or as the fields of the approval's
    form (`fields`, as posted: core.approval_form); either way they are checked as the model's
    were, by the tool, before anything is decided.

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
    edited = fields is not None or (arguments_json is not None and arguments_json.strip())
    if approve and edited:
        tool = tool_for_approval(approval.run, approval.tool)
        if tool is None:
            raise ArgumentsRefused(
                f"'{approval.tool}' is no longer a tool of yours (its server was removed), so "
                "its arguments cannot be checked: approve the call as it is, or reject it."
            )
        if fields is not None:
            arguments = _form_arguments(tool, approval.arguments, fields)
        else:
            arguments = _json_arguments(arguments_json or "")
        _check_edited(tool, approval.arguments, arguments)
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
            EventType.APPROVAL_DECIDED,
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


def _json_arguments(text: str) -> Any:
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise ArgumentsRefused(
            f"The edited arguments are {len(text)} characters long; at most "
            f"{MAX_ARGUMENTS_CHARS} are allowed."
        )
    try:
        return loads_bounded(text)
    except JsonRefused as exc:
        raise ArgumentsRefused(f"The edited arguments were refused: {exc}.") from exc
    except json.JSONDecodeError as exc:
        raise ArgumentsRefused(f"The edited arguments are not valid JSON: {exc}") from exc


def _form_arguments(
    tool: Tool, original: dict[str, Any], posted: Mapping[str, str]
) -> dict[str, Any]:
    fields = form_fields(tool.form_schema(), original)
    arguments, errors = arguments_from_form(fields, original, posted)
    if errors:
        said = "; ".join(errors.values())
        raise ArgumentsRefused(f"The edited arguments were refused: {said}", errors)
    size = len(json.dumps(arguments))
    if size > MAX_FORM_ARGUMENTS_CHARS:
        raise ArgumentsRefused(
            f"The edited arguments are {size} characters long as JSON; at most "
            f"{MAX_FORM_ARGUMENTS_CHARS} are allowed."
        )
    return arguments


def _check_edited(tool: Tool, original: dict[str, Any], arguments: Any) -> None:
    """Edited arguments pass what the model's passed (the tool's schema and its own checks),
    and a URL the person typed that names an address the network policy refuses is refused
    now rather than when the call is made (a host name is resolved, and checked, only then:
    no DNS lookup in a page's request)."""
    try:
        tool.parse(arguments)
    except ArgumentsInvalid as exc:
        refused = {path.split(".")[0]: said for path, said in reversed(exc.problems.items())}
        raise ArgumentsRefused(f"The edited arguments were refused: {exc}", refused) from exc
    except ToolError as exc:
        raise ArgumentsRefused(f"The edited arguments were refused: {exc}") from exc
    problems: dict[str, str] = {}
    for name in tool.url_arguments:
        url = arguments.get(name)
        endpoint = url_endpoint(url) if isinstance(url, str) and url != original.get(name) else None
        if endpoint is None or not _is_address(endpoint[0]):
            continue
        try:
            check_url(url, net_allow(), tool=tool.name, resolve=lambda host, port: [host])
        except ToolError as exc:
            problems[name] = str(exc)
    if problems:
        said = "; ".join(problems.values())
        raise ArgumentsRefused(f"The edited arguments were refused: {said}", problems)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
