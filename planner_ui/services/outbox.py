"""Irreversible calls, performed at most once: a receipt is written before the call and its
result after, under an idempotency key that a re-run of the step derives again unchanged."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from planner_ui.agents.executor import call_tool
from planner_ui.core.effects import Decision
from planner_ui.core.errors import ToolUnavailable
from planner_ui.models import Approval, ToolReceipt
from planner_ui.tools import Tool, ToolContext

from .events import event_append

log = logging.getLogger(__name__)

UNKNOWN_OUTCOME = (
    "The outcome of this {tool} call is unknown: the worker performing it stopped before it "
    "reported back. It was not repeated, so that it cannot happen twice."
)


class OutcomeUnknown(Exception):  # noqa: N818 - a state for a person to decide, not an error
    """The call's receipt is in flight from a worker that died: nobody knows if it happened.
    The gate puts the question to a person; the call is never repeated on a guess."""

    def __init__(self, receipt: ToolReceipt) -> None:
        super().__init__(f"the outcome of {receipt.tool} ({receipt.idempotency_key}) is unknown")
        self.receipt = receipt


def idempotency_key(run_id: int, step_id: str, call_key: str) -> str:
    return f"agentsite-run{run_id}-{step_id}-{call_key}"


def perform_once(
    *,
    run_id: int,
    step_id: str,
    call_key: str,
    tool: Tool,
    arguments: dict[str, Any],
    ctx: ToolContext,
    authorized_by: str,
    approval: Approval | None = None,
) -> tuple[str, bool]:
    """Perform an irreversible call unless its receipt says it was performed; return its result."""
    key = idempotency_key(run_id, step_id, call_key)
    receipt, created = _claim(
        run_id, step_id, key, tool, arguments, Decision.RUN, authorized_by, approval
    )
    if not created:
        return _reuse(receipt)
    try:
        content, is_error = call_tool(
            tool, arguments, dataclasses.replace(ctx, idempotency_key=key)
        )
    except ToolUnavailable as exc:
        if not exc.sent:  # the server never got the request: nothing happened, say so
            _close(receipt, str(exc), True)
        raise
    _close(receipt, content, is_error)
    return content, is_error


def perform_again(receipt: ToolReceipt, tool: Tool, ctx: ToolContext) -> tuple[str, bool]:
    """A person said a call of unknown outcome did not happen: make it again, under the same
    idempotency key, so a receiver that did get it the first time can drop this one."""
    ToolReceipt.objects.filter(pk=receipt.pk).update(state=ToolReceipt.State.IN_FLIGHT)
    key_ctx = dataclasses.replace(ctx, idempotency_key=receipt.idempotency_key)
    content, is_error = call_tool(tool, receipt.arguments, key_ctx)
    _close(receipt, content, is_error)
    return content, is_error


def outcome_confirmed(receipt: ToolReceipt, by: str) -> str:
    """A person said a call of unknown outcome happened: its receipt is closed as done."""
    content = f"{by} confirmed that this {receipt.tool} call happened; its result was not recorded."
    _close(receipt, content, False)
    return content


def record_dry_run(
    *,
    run_id: int,
    step_id: str,
    call_key: str,
    tool: Tool,
    arguments: dict[str, Any],
) -> tuple[str, bool]:
    """Record a call the run's dry-run policy keeps from happening, and tell the model so."""
    key = idempotency_key(run_id, step_id, call_key)
    content = (
        f"[dry run] {tool.name} was not performed: this run records irreversible calls instead "
        f"of making them. Recorded: {json.dumps(arguments, ensure_ascii=False)[:2000]}"
    )
    receipt, created = _claim(
        run_id, step_id, key, tool, arguments, Decision.DRY_RUN, "the run's dry-run policy"
    )
    if created:
        _close(receipt, content, False)
    return content, False


def _claim(
    run_id: int,
    step_id: str,
    key: str,
    tool: Tool,
    arguments: dict[str, Any],
    decision: Decision,
    authorized_by: str,
    approval: Approval | None = None,
) -> tuple[ToolReceipt, bool]:
    """The receipt for `key`, created in flight (and committed) if this is the first time."""
    try:
        with transaction.atomic():
            receipt = ToolReceipt.objects.create(
                run_id=run_id,
                step_id=step_id,
                idempotency_key=key,
                tool=tool.name,
                effect=tool.effect,
                arguments=arguments,
                decision=decision,
                authorized_by=authorized_by,
                approval=approval,
            )
            event_append(
                run_id,
                "tool.performing",
                {
                    "receipt": receipt.pk,
                    "tool": tool.name,
                    "key": key,
                    "decision": decision,
                    "authorized_by": authorized_by,
                },
                step_id=step_id,
            )
        return receipt, True
    except IntegrityError:
        return ToolReceipt.objects.get(idempotency_key=key), False


def _reuse(receipt: ToolReceipt) -> tuple[str, bool]:
    if receipt.state == ToolReceipt.State.DONE:
        log.info("reusing the result of %s", receipt.idempotency_key)
        return receipt.result, receipt.is_error
    # In flight with no result: the worker died during the call. Never guess, never repeat:
    # a person decides (services.gate).
    message = UNKNOWN_OUTCOME.format(tool=receipt.tool)
    if ToolReceipt.objects.filter(pk=receipt.pk, state=ToolReceipt.State.IN_FLIGHT).update(
        state=ToolReceipt.State.UNKNOWN, result=message, is_error=True, finished_at=timezone.now()
    ):
        event_append(
            receipt.run_id,
            "tool.unknown",
            {"receipt": receipt.pk, "tool": receipt.tool, "key": receipt.idempotency_key},
            step_id=receipt.step_id,
        )
        receipt.refresh_from_db()
    raise OutcomeUnknown(receipt)


def _close(receipt: ToolReceipt, content: str, is_error: bool) -> None:
    with transaction.atomic():
        ToolReceipt.objects.filter(pk=receipt.pk).update(
            state=ToolReceipt.State.DONE,
            result=content,
            is_error=is_error,
            finished_at=timezone.now(),
        )
        event_append(
            receipt.run_id,
            "tool.receipt",
            {"receipt": receipt.pk, "tool": receipt.tool, "is_error": is_error},
            step_id=receipt.step_id,
        )
