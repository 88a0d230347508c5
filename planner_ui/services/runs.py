"""Run lifecycle: create, plan, approve, finish."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planner_ui.agents.planner import make_plan
from planner_ui.core.bounds import too_long
from planner_ui.core.effects import PolicyMode, ToolPolicy
from planner_ui.core.errors import AgentError, InvalidTransition, PlanConflict, RunStopped
from planner_ui.core.events import EventType
from planner_ui.core.hosts import HostListError, hosts_in_text, parse_hosts
from planner_ui.core.plan import Plan
from planner_ui.core.routing import RouteError
from planner_ui.core.run_options import RunOptions
from planner_ui.core.run_rules import (
    approval_refusal,
    cancel_refusal,
    pause_refusal,
    resume_refusal,
)
from planner_ui.core.status import RunStatus
from planner_ui.core.validation import validate_plan
from planner_ui.models import ExperimentRun, PlanVersion, Run
from planner_ui.selectors.search import PlanExample, plan_examples_for
from planner_ui.selectors.tools import tools_for_run, tools_for_user
from planner_ui.tools import Tool

from .events import event_append
from .plans import materialize_steps
from .providers import routes_for_run, run_provider
from .scheduler import dispatch_ready, plan_enqueue, run_end, run_fail, run_finish_if_done
from .search import search_index_run

log = logging.getLogger(__name__)


class RunInputError(AgentError):
    """A person's input for a run was refused; the message says why and `field` names the
    option it is about (the form and the API point at it)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        self.field = field
        super().__init__(message)


def run_create(*, owner: User, options: RunOptions) -> Run:
    """Create a run and queue its planning.

    `tool_policy` says what happens to irreversible tool calls: "ask" a person each time,
    "auto" run the `auto_tools` without asking (and ask for the others), or "dry_run".

    `routes` are the person's choices of model per part ("planner", "executor",
    "executor:<role>", "synthesizer"); the rest come from the settings. The whole table is
    stored with the run, so every worker serves it with the same models.
    """
    fields = run_fields(owner, options)
    with transaction.atomic():
        run = Run.objects.create(owner=owner, **fields)
        search_index_run(run, steps=[])
        event_append(run.pk, EventType.RUN_STATUS, {"status": run.status})
        plan_enqueue(run)
    return run


def run_create_with_plan(
    *, owner: User, options: RunOptions, plan: Plan, note: str, **fields: Any
) -> Run:
    """Create a run whose first plan version is `plan` (a person's choice: the planner is
    skipped), waiting for approval like any plan. `fields` are more of the run's own (where it
    came from). The caller approves it when the options say so, once its own work is done."""
    with transaction.atomic():
        run = Run.objects.create(
            owner=owner,
            **run_fields(owner, options),
            status=RunStatus.AWAITING_PLAN_APPROVAL,
            **fields,
        )
        version = PlanVersion.objects.create(
            run=run, number=1, author=PlanVersion.Author.PERSON, plan=plan.model_dump(), note=note
        )
        materialize_steps(run, plan)
        search_index_run(run, steps=[])
        event_append(run.pk, EventType.RUN_STATUS, {"status": run.status})
        event_append(
            run.pk,
            EventType.PLAN_VERSION,
            {
                "number": version.number,
                "author": version.author,
                "note": version.note,
                "steps": len(plan.steps),
            },
        )
    return run


def run_start_from(*, owner: User, options: RunOptions, source: Run) -> Run:
    """A run of the person's task that starts from the plan a past run of theirs ran (its
    approved version, else its latest), checked against the tools they have now: the plan
    waits for their review, as a template's does. PlanValidationError if it no longer fits."""
    if source.owner_id != owner.pk:
        raise RunInputError("Start only from a run of your own.", field="start_from")
    version = source.approved_plan or source.plan_versions.order_by("-number").first()
    if version is None:
        raise RunInputError(f"Run {source.pk} has no plan to start from.", field="start_from")
    plan = validate_plan(version.plan, known_tools=sorted(tools_for_user(owner)))
    run = run_create_with_plan(
        owner=owner,
        options=options,
        plan=plan,
        note=f"from run {source.pk}, plan v{version.number}",
        started_from=source,
    )
    if run.auto_approve:
        run = run_approve_plan(run.pk)
    return run


def run_fields(owner: User, options: RunOptions) -> dict[str, Any]:
    """The fields of a new run from a person's options, checked against this installation;
    RunInputError says what is wrong. Shared by planned runs and single-agent ones."""
    task = options.task.strip()
    budget_tokens, budget_usd = options.budget_tokens, options.budget_usd
    if not task:
        raise RunInputError("Describe the task: it is empty.", field="task")
    if refusal := too_long("The task", task, settings.AGENTSITE_MAX_TASK_CHARS):
        raise RunInputError(refusal, field="task")
    if budget_tokens is not None and budget_tokens <= 0:
        raise RunInputError(
            "A token budget must be a positive number of tokens.", field="budget_tokens"
        )
    if budget_usd is not None and budget_usd <= 0:
        raise RunInputError("A budget in USD must be more than 0.", field="budget_usd")
    try:
        table = routes_for_run(options.routes)
    except RouteError as exc:
        raise RunInputError(str(exc), field="routes") from exc
    policy = _policy(options.tool_policy, options.auto_tools, tools_for_user(owner))
    replan_mode = options.replan_mode or settings.AGENTSITE_REPLAN_MODE
    if replan_mode not in Run.Replan.values:
        raise RunInputError(
            f"Unknown re-planning setting {replan_mode!r}; use {', '.join(Run.Replan.values)}.",
            field="replan_mode",
        )
    max_replans = options.max_replans
    max_replans = settings.AGENTSITE_MAX_REPLANS if max_replans is None else max_replans
    if not 0 <= max_replans <= 10:
        raise RunInputError("Re-plans per run must be between 0 and 10.", field="max_replans")
    return {
        "task": task,
        "auto_approve": options.auto_approve,
        "routes": {part: route.label for part, route in table.items()},
        "executor_model": table["executor"].label,
        "budget_tokens": budget_tokens,
        "budget_usd": budget_usd,
        "tool_policy": policy.mode,
        "auto_tools": sorted(policy.auto_tools),
        "replan_mode": replan_mode,
        "max_replans": max_replans,
        "allowed_hosts": _allowed_hosts(task, options.allowed_hosts),
    }


def _allowed_hosts(task: str, given: Sequence[str] | None) -> list[str]:
    """The person's list, checked; when they gave none, the hosts their task names."""
    if given is None:
        return hosts_in_text(task)
    try:
        return parse_hosts(given)
    except HostListError as exc:
        raise RunInputError(str(exc), field="allowed_hosts") from exc


def policy_for(owner: User, mode: str, auto_tools: Sequence[str]) -> ToolPolicy:
    """A policy for irreversible calls as a run of `owner` would take it; RunInputError if not."""
    return _policy(mode, auto_tools, tools_for_user(owner))


def _policy(mode: str, auto_tools: Sequence[str], tools: dict[str, Tool]) -> ToolPolicy:
    try:
        policy = ToolPolicy.of(mode, auto_tools)
    except ValueError:
        modes = ", ".join(PolicyMode)
        raise RunInputError(
            f"Unknown policy {mode!r} for irreversible calls; use {modes}.", field="tool_policy"
        ) from None
    gated = {name for name, tool in tools.items() if tool.irreversible}
    unknown = sorted(set(policy.auto_tools) - gated)
    if unknown:
        raise RunInputError(
            f"Only irreversible tools need auto-approval, and {', '.join(unknown)} is not one; "
            f"the irreversible tools are {', '.join(sorted(gated))}.",
            field="auto_tools",
        )
    if policy.mode is PolicyMode.AUTO and not policy.auto_tools:
        raise RunInputError(
            "Choose the tools to run without asking, or ask for every call.", field="auto_tools"
        )
    return policy


def run_plan(run_id: int) -> None:
    """Ask the planner for a plan (with one repair); store it or fail the run with the errors."""
    run = Run.objects.get(pk=run_id)
    if run.status != RunStatus.PLANNING or run.plan_versions.exists():
        return  # a redelivered task: planning already happened
    # An experiment's runs are measured against each other: none learns from another.
    measured = ExperimentRun.objects.filter(run_id=run_id).exists()
    examples = plan_examples_for(
        run.owner,
        run.task,
        limit=0 if measured else settings.AGENTSITE_PLAN_EXAMPLES,
        exclude_run_id=run.pk,
    )
    try:
        provider = run_provider(run, "planner")
        specs = [tool.spec() for tool in tools_for_run(run).values()]
        result = make_plan(provider, run.task, specs, examples=_for_prompt(examples))
    except RunStopped:
        return  # the run failed with the reason already (its budget)
    except AgentError as exc:
        run_fail(run_id, f"The planner failed, so nothing ran: {exc}")
        return
    for number, attempt in enumerate(result.attempts, start=1):
        if attempt.errors:
            event_append(
                run_id, EventType.PLAN_INVALID, {"attempt": number, "errors": attempt.errors}
            )
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.PLANNING:
            return  # stopped while the planner worked (its budget spent)
        run.planner_model = result.model
        run.plan_examples = [example.as_record() for example in examples]
        if result.plan is None:
            run.save()
            errors = "; ".join(result.errors)
            run_end(
                run,
                RunStatus.FAILED,
                f"The planner's plan was invalid twice, so nothing ran: {errors}",
            )
            return
        version = PlanVersion.objects.create(
            run=run, number=1, author=PlanVersion.Author.PLANNER, plan=result.plan.model_dump()
        )
        materialize_steps(run, result.plan)
        run.move_to(RunStatus.AWAITING_PLAN_APPROVAL)
        run.save()
        event_append(
            run_id,
            EventType.PLAN_VERSION,
            {
                "number": version.number,
                "author": version.author,
                "model": result.model,
                "steps": len(result.plan.steps),
            },
        )
        event_append(run_id, EventType.RUN_STATUS, {"status": run.status})
    if run.auto_approve:
        run_approve_plan(run_id)


def _for_prompt(examples: Sequence[PlanExample]) -> list[tuple[str, str, str]]:
    return [
        (example.label, example.task, json.dumps(example.plan, ensure_ascii=False))
        for example in examples
    ]


def run_approve_plan(run_id: int, version_number: int | None = None) -> Run:
    """Approve the latest plan version and dispatch every step that is ready.

    With `version_number`, approve exactly that version: if the plan changed since the person
    looked at it, the approval is refused instead of running something they did not see."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if refusal := approval_refusal(run):
            raise InvalidTransition(refusal)
        version = run.plan_versions.latest("number")
        if version_number is not None and version_number != version.number:
            raise PlanConflict(version_number, version.number)
        run.approved_plan = version
        run.move_to(RunStatus.RUNNING)
        run.started_at = timezone.now()
        run.save()
        event_append(run_id, EventType.PLAN_APPROVED, {"number": version.number})
        event_append(run_id, EventType.RUN_STATUS, {"status": run.status})
        dispatch_ready(run)
    return run


def run_pause(run_id: int, user: User) -> Run:
    """Start no new step until resumed. Steps already started carry on to the end of their
    step (a step waiting for an approval goes on once it is decided); a run still planning
    makes its plan and starts none of its steps. The pause is kept in the database, so
    restarts do not lift it."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if refusal := pause_refusal(run):
            raise InvalidTransition(refusal)
        run.paused_at = timezone.now()
        run.save(update_fields=["paused_at"])
        event_append(run_id, EventType.RUN_PAUSED, {"by": user.get_username()})
    return run


def run_resume(run_id: int, user: User) -> Run:
    """Go on from a pause: the steps that became ready meanwhile start now."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if refusal := resume_refusal(run):
            raise InvalidTransition(refusal)
        run.paused_at = None
        run.save(update_fields=["paused_at"])
        event_append(run_id, EventType.RUN_RESUMED, {"by": user.get_username()})
        if run.status == RunStatus.RUNNING:
            # Before its plan is approved, a run has no step to start: its approval does that.
            dispatch_ready(run)
            run_finish_if_done(run)
    return run


def run_cancel(run_id: int, user: User) -> Run:
    """Stop a run for good: nothing new starts, pending approvals are withdrawn, and steps that
    are running stop at their next model or tool call. Everything up to now stays recorded."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if refusal := cancel_refusal(run):
            raise InvalidTransition(refusal)
        run_end(run, RunStatus.CANCELLED, f"Cancelled by {user.get_username()}.")
    return run
