"""The executor's tool runner for one step: the run's policy decides, per call, whether it runs,
waits for a person, or is only recorded; irreversible calls, and calls that reach a host the
run does not allow, go through the outbox."""

from __future__ import annotations

import dataclasses
import re

from django.conf import settings

from planner_ui.agents.executor import AwaitingApproval, ToolRunner, call_tool
from planner_ui.core.effects import Decision, Effect, gated
from planner_ui.core.errors import MissingRunFile, RunStopped, StepFailed
from planner_ui.core.hosts import host_entry, hosts_outside
from planner_ui.core.messages import ToolCall
from planner_ui.models import Approval, Run, Step, ToolReceipt
from planner_ui.tools import Tool, ToolContext

from . import outbox
from .approvals import approval_find, approval_request
from .files import Workspace, workspace_sync
from .mail import run_mailer


def tool_context(workspace: Workspace) -> ToolContext:
    return ToolContext(
        run_id=workspace.run_id,
        step_id=workspace.step_id,
        workspace=workspace.path,
        settings=dict(settings.AGENTSITE_TOOL_SETTINGS),
        mailer=run_mailer(workspace.run_id, workspace.step_id),
    )


# Calls with these effects may change the step's local copy of the run's files.
CHANGES_FILES = frozenset({Effect.WRITE, Effect.DELETE, Effect.EXECUTE})


def tool_runner(run: Run, step: Step, ctx: ToolContext, workspace: Workspace) -> ToolRunner:
    """Each call decided by the run's policy, then the files it changed stored for every
    machine; a file the step needs and nobody wrote fails the step, naming the file."""
    decide = _decider(run, step.step_id, ctx, f"retry{step.retries}:" if step.retries else "")

    def run_call(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        content, is_error = decide(call, tool, iteration)
        if tool.effect in CHANGES_FILES:
            if problems := workspace_sync(workspace):
                content += "\n" + "\n".join(problems)
        if is_error and tool.name == "read_file":
            _needed_file_missing(step, workspace, str(call.arguments.get("path", "")))
        return content, is_error

    return run_call


def _needed_file_missing(step: Step, workspace: Workspace, path: str) -> None:
    """Fail the step when it asked for a file no step wrote, that its instruction names and it
    cannot write itself: it was meant to work on that file."""
    if not path or path in workspace.stored or "write_file" in step.tools:
        return
    if not re.search(rf"(?<![\w/.-]){re.escape(path)}(?![\w/-])", step.instruction):
        return
    files = ", ".join(sorted(workspace.stored)) or "none yet"
    raise MissingRunFile(
        f"needs the file '{path}', which no step of this run wrote (the run's files: {files})"
    )


def _decider(run: Run, step_id: str, ctx: ToolContext, key_prefix: str) -> ToolRunner:
    policy = run.policy
    allowed = tuple(run.allowed_hosts)
    run_ctx = dataclasses.replace(ctx, allowed_hosts=allowed)

    def run_call(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        # A cancelled or failed run stops at its next tool call, not only at its next model call.
        current = Run.objects.only("status").get(pk=run.pk)
        if current.is_finished:
            raise RunStopped(f"The run is {current.get_status_display()}, so no further tool call.")
        # The hosts the tool says this call reaches, against the run's list: data-driven, so
        # any tool that reports its hosts is held the same way.
        outside = hosts_outside(allowed, tool.reaches(call.arguments))
        decision = policy.decide(tool.name, tool.effect, outside)
        if decision is Decision.RUN and not gated(tool.effect, outside):
            return call_tool(tool, call.arguments, run_ctx)
        # Arguments that the tool would refuse are not worth a person's time.
        try:
            tool.parse(call.arguments)
        except Exception as exc:  # ToolError, or anything a tool's parse raises
            return str(exc), True
        key = f"{key_prefix}{iteration}:{call.id}"
        if decision is Decision.ASK and run.forked_from_id:
            # A call an original made is not made again (outbox): nothing to ask a person.
            if outbox.made_by_an_original(run.pk, tool.name, call.arguments) is not None:
                decision = Decision.RUN
        if decision is Decision.DRY_RUN:
            return outbox.record_dry_run(
                run_id=run.pk, step_id=step_id, call_key=key, tool=tool, arguments=call.arguments
            )
        if decision is Decision.RUN:
            try:
                return outbox.perform_once(
                    run_id=run.pk,
                    step_id=step_id,
                    call_key=key,
                    tool=tool,
                    arguments=call.arguments,
                    ctx=run_ctx,
                    authorized_by=f"the run's policy: it {policy.describe()}",
                )
            except outbox.OutcomeUnknown as unknown:
                return _unknown_outcome(run, step_id, key, call, tool, run_ctx, unknown.receipt)
        approval = approval_find(run.pk, step_id, key)
        if approval is None:
            approval_request(run.pk, step_id, key, tool, call.arguments, hosts=outside)
            raise AwaitingApproval(call, key)
        if approval.state == Approval.State.PENDING:
            raise AwaitingApproval(call, key)
        if approval.state == Approval.State.REJECTED:
            reason = approval.reason or "no reason given"
            return (
                f"A person rejected this {tool.name} call: {reason}. It was not performed. "
                "Do not call it again; finish the step without it, or say what you would do.",
                True,
            )
        if approval.state == Approval.State.WITHDRAWN:
            raise RunStopped(f"The approval was withdrawn: {approval.reason}.")
        arguments = (
            approval.approved_arguments
            if approval.approved_arguments is not None
            else approval.arguments
        )
        # The person saw the exact URL: its host is allowed for this call (not its redirects).
        approved_hosts = [host_entry(*endpoint) for endpoint in tool.reaches(arguments)]
        call_ctx = dataclasses.replace(run_ctx, allowed_hosts=(*allowed, *approved_hosts))
        try:
            content, is_error = outbox.perform_once(
                run_id=run.pk,
                step_id=step_id,
                call_key=key,
                tool=tool,
                arguments=arguments,
                ctx=call_ctx,
                authorized_by=approval.decided_by.get_username() if approval.decided_by else "",
                approval=approval,
            )
        except outbox.OutcomeUnknown as unknown:
            return _unknown_outcome(run, step_id, key, call, tool, call_ctx, unknown.receipt)
        if approval.edited:
            # The model must know what was really done, not what it asked for.
            content = f"(A person edited the arguments before approving: {arguments})\n{content}"
        return content, is_error

    return run_call


def _unknown_outcome(
    run: Run,
    step_id: str,
    key: str,
    call: ToolCall,
    tool: Tool,
    ctx: ToolContext,
    receipt: ToolReceipt,
) -> tuple[str, bool]:
    """A worker died during this call: a person says what happened, and until then the step
    waits (the rest of the run goes on). Nothing is repeated unless they say so."""
    question = f"{key}:outcome"
    decided = approval_find(run.pk, step_id, question)
    if decided is None:
        approval_request(
            run.pk, step_id, question, tool, receipt.arguments, kind=Approval.Kind.OUTCOME
        )
        raise AwaitingApproval(call, question)
    if decided.state == Approval.State.PENDING:
        raise AwaitingApproval(call, question)
    if decided.state == Approval.State.WITHDRAWN:
        raise RunStopped(f"The question was withdrawn: {decided.reason}.")
    by = decided.decided_by.get_username() if decided.decided_by else "a person"
    if decided.resolution == Approval.Resolution.HAPPENED:
        if receipt.state != ToolReceipt.State.DONE:
            return outbox.outcome_confirmed(receipt, by), False
        return receipt.result, receipt.is_error
    if decided.resolution == Approval.Resolution.RETRY:
        if receipt.state != ToolReceipt.State.DONE:
            return outbox.perform_again(receipt, tool, ctx)
        return receipt.result, receipt.is_error
    reason = f": {decided.reason}" if decided.reason else ""
    raise StepFailed(
        f"the outcome of the {tool.name} call was unknown, and {by} failed the step{reason}"
    )
