"""The executor's tool runner for one step: the run's policy decides, per call, whether it runs,
waits for a person, or is only recorded; irreversible calls go through the outbox."""

from __future__ import annotations

from django.conf import settings

from planner_ui.agents.executor import AwaitingApproval, ToolRunner, call_tool
from planner_ui.core.effects import Decision
from planner_ui.core.errors import RunStopped
from planner_ui.core.messages import ToolCall
from planner_ui.models import Approval, Run
from planner_ui.tools import Tool, ToolContext

from . import outbox
from .approvals import approval_find, approval_request
from .mail import mail_send


def tool_context(run_id: int, step_id: str) -> ToolContext:
    workspace = settings.AGENTSITE_WORKSPACES_DIR / f"run-{run_id}"
    workspace.mkdir(parents=True, exist_ok=True)
    return ToolContext(
        run_id=run_id,
        step_id=step_id,
        workspace=workspace,
        settings=dict(settings.AGENTSITE_TOOL_SETTINGS),
        mailer=mail_send,
    )


def tool_runner(run: Run, step_id: str, ctx: ToolContext) -> ToolRunner:
    policy = run.policy

    def run_call(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        # A cancelled or failed run stops at its next tool call, not only at its next model call.
        current = Run.objects.only("status").get(pk=run.pk)
        if current.is_finished:
            raise RunStopped(f"The run is {current.get_status_display()}, so no further tool call.")
        decision = policy.decide(tool.name, tool.effect)
        if decision is Decision.RUN and not tool.irreversible:
            return call_tool(tool, call.arguments, ctx)
        # Arguments that the tool would refuse are not worth a person's time.
        try:
            tool.parse(call.arguments)
        except Exception as exc:  # ToolError, or anything a tool's parse raises
            return str(exc), True
        key = f"{iteration}:{call.id}"
        if decision is Decision.DRY_RUN:
            return outbox.record_dry_run(
                run_id=run.pk, step_id=step_id, call_key=key, tool=tool, arguments=call.arguments
            )
        if decision is Decision.RUN:
            return outbox.perform_once(
                run_id=run.pk,
                step_id=step_id,
                call_key=key,
                tool=tool,
                arguments=call.arguments,
                ctx=ctx,
                authorized_by=f"the run's policy: it {policy.describe()}",
            )
        approval = approval_find(run.pk, step_id, key)
        if approval is None:
            approval_request(run.pk, step_id, key, tool, call.arguments)
            raise AwaitingApproval(call)
        if approval.state == Approval.State.PENDING:
            raise AwaitingApproval(call)
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
        content, is_error = outbox.perform_once(
            run_id=run.pk,
            step_id=step_id,
            call_key=key,
            tool=tool,
            arguments=arguments,
            ctx=ctx,
            authorized_by=approval.decided_by.get_username() if approval.decided_by else "",
            approval=approval,
        )
        if approval.edited:
            # The model must know what was really done, not what it asked for.
            content = f"(A person edited the arguments before approving: {arguments})\n{content}"
        return content, is_error

    return run_call
