"""Irreversible calls, performed at most once: a receipt is written before the call and its
result after, under an idempotency key that a re-run of the step derives again unchanged.

A fork's keys are its own, so its steps that run again would make their calls afresh: the same
call (tool and arguments) that a run it was forked from made is not made again, whichever step
of the fork asks for it. Its receipt points at the original's, and the model gets its result."""

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
from planner_ui.core.events import EventType
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.stores import sql
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
    """Perform an irreversible call unless its receipt says it was performed, or a run this one
    was forked from made the same call; return its result."""
    key = idempotency_key(run_id, step_id, call_key)
    if (earlier := made_by_an_original(run_id, tool.name, arguments)) is not None:
        return _take_over(run_id, step_id, key, tool, arguments, earlier)
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


# Forks of forks: how far back a fork's originals are looked for. A chain this long is made by
# hand, one fork at a time; the bound only keeps a loop in bad data from hanging a worker.
MAX_FORK_DEPTH = 50


def made_by_an_original(
    run_id: int, tool_name: str, arguments: dict[str, Any]
) -> ToolReceipt | None:
    """The receipt of the call that made this one (same tool, same arguments) in a run that
    `run_id` was forked from, directly or not; None when none did, or the run is no fork."""
    originals = _originals(run_id)
    if not originals:
        return None
    candidates = ToolReceipt.objects.filter(
        run_id__in=originals, tool=tool_name, decision=Decision.RUN
    ).order_by("started_at", "id")
    # Compared here, not in SQL: JSON equality differs between SQLite and PostgreSQL, and a
    # fork's originals hold few receipts of one tool.
    for receipt in candidates:
        if receipt.arguments == arguments:
            return _first_made(receipt)
    return None


def _originals(run_id: int) -> list[int]:
    """The runs `run_id` was forked from, nearest first."""
    found: list[int] = []
    parent = Run.objects.filter(pk=run_id).values_list("forked_from_id", flat=True).first()
    while parent is not None and parent not in found and len(found) < MAX_FORK_DEPTH:
        found.append(parent)
        parent = Run.objects.filter(pk=parent).values_list("forked_from_id", flat=True).first()
    return found


def _first_made(receipt: ToolReceipt) -> ToolReceipt:
    """The receipt of the run that made the call, past the copies forks took of it."""
    seen = {receipt.pk}
    while receipt.reused_from_id is not None and receipt.reused_from_id not in seen:
        seen.add(receipt.reused_from_id)
        receipt = ToolReceipt.objects.get(pk=receipt.reused_from_id)
    return receipt


def _take_over(
    run_id: int,
    step_id: str,
    key: str,
    tool: Tool,
    arguments: dict[str, Any],
    earlier: ToolReceipt,
) -> tuple[str, bool]:
    """The fork's receipt for a call an original made: its result, not a second call. If the
    original's outcome is unknown, so is the fork's, and a person decides (services.gate)."""
    done = earlier.state == ToolReceipt.State.DONE
    try:
        with transaction.atomic():
            sql.durable()
            receipt = ToolReceipt.objects.create(
                run_id=run_id,
                step_id=step_id,
                idempotency_key=key,
                tool=tool.name,
                effect=tool.effect,
                arguments=arguments,
                decision=Decision.RUN,
                authorized_by=f"not made again: run {earlier.run_id} made this call",
                state=ToolReceipt.State.DONE if done else ToolReceipt.State.UNKNOWN,
                result=earlier.result if done else UNKNOWN_OUTCOME.format(tool=tool.name),
                is_error=earlier.is_error if done else True,
                finished_at=timezone.now(),
                reused_from=earlier,
            )
            event_append(
                run_id,
                EventType.TOOL_RECEIPT,
                {"receipt": receipt.pk, "tool": tool.name, "is_error": receipt.is_error},
                step_id=step_id,
            )
    except IntegrityError:  # this step ran before (its worker was lost): the same receipt
        receipt = ToolReceipt.objects.get(idempotency_key=key)
    if receipt.state != ToolReceipt.State.DONE:
        raise OutcomeUnknown(receipt)
    note = (
        f"(This run is a fork of run {earlier.run_id}, which already made this exact "
        f"{tool.name} call: it was not made again. Its result follows.)\n"
    )
    return note + receipt.result, receipt.is_error


def perform_again(receipt: ToolReceipt, tool: Tool, ctx: ToolContext) -> tuple[str, bool]:
    """A person said a call of unknown outcome did not happen: make it again, under the same
    idempotency key, so a receiver that did get it the first time can drop this one."""
    with transaction.atomic():
        sql.durable()
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
    """The receipt for `key`, created in flight (and committed, on disk) if this is the first
    time: a receipt a crash could take back would let the call be made twice."""
    try:
        with transaction.atomic():
            sql.durable()
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
                EventType.TOOL_PERFORMING,
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
            EventType.TOOL_UNKNOWN,
            {"receipt": receipt.pk, "tool": receipt.tool, "key": receipt.idempotency_key},
            step_id=receipt.step_id,
        )
        receipt.refresh_from_db()
    raise OutcomeUnknown(receipt)


def _close(receipt: ToolReceipt, content: str, is_error: bool) -> None:
    """The call's result, on disk: lost, the receipt would stay in flight and a person be asked
    about a call whose result was known."""
    with transaction.atomic():
        sql.durable()
        ToolReceipt.objects.filter(pk=receipt.pk).update(
            state=ToolReceipt.State.DONE,
            result=content,
            is_error=is_error,
            finished_at=timezone.now(),
        )
        event_append(
            receipt.run_id,
            EventType.TOOL_RECEIPT,
            {"receipt": receipt.pk, "tool": receipt.tool, "is_error": is_error},
            step_id=receipt.step_id,
        )
