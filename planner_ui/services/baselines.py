"""The single-agent baseline: the same task, one ReAct-style agent holding every tool, one
loop with one growing context, no plan and no synthesizer. Comparing a run with its baseline
is how a person sees whether decomposing the task paid for itself."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planner_ui.agents.prompts import BASELINE_ROLE
from planner_ui.core.events import EventType
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import PlanVersion, Run, Step
from planner_ui.selectors.tools import tools_for_user

from .events import event_append
from .runs import run_fields
from .scheduler import dispatch_ready
from .search import search_index_run

BASELINE_STEP_ID = "agent"


def baseline_create(run: Run, user: User) -> Run:
    """Start the baseline of `run`: its task, models, policy and budget, run by one agent."""
    original = run.baseline_of or run  # the baseline of a baseline is the original's
    fields = {name: getattr(original, name) for name in _CARRIED}
    return _single_agent_start(
        user, fields, original, note=f"single-agent baseline of run {original.pk}"
    )


def single_agent_create(owner: User, options: RunOptions) -> Run:
    """Start a task as one agent from a person's options, with no planned run beside it: an
    experiment's single-agent arm (services.evaluations)."""
    fields = run_fields(owner, options)
    return _single_agent_start(
        owner, {name: fields[name] for name in _CARRIED}, None, note="single agent"
    )


# What a single-agent run takes over from the options or from the run it is the baseline of.
_CARRIED = (
    "task",
    "routes",
    "executor_model",
    "tool_policy",
    "auto_tools",
    "allowed_hosts",
    "budget_tokens",
    "budget_usd",
)


def _single_agent_start(
    owner: User, fields: dict[str, Any], original: Run | None, *, note: str
) -> Run:
    tools = sorted(tools_for_user(original.owner if original else owner))
    plan = {
        "goal": "The whole task, by one agent",
        "steps": [
            {
                "id": BASELINE_STEP_ID,
                "title": "Do the whole task",
                "instruction": fields["task"],
                "role": BASELINE_ROLE,
                "tools": tools,
                "depends_on": [],
            }
        ],
    }
    with transaction.atomic():
        agent_run = Run.objects.create(
            owner=owner,
            baseline_of=original,
            status=RunStatus.RUNNING,
            auto_approve=True,
            replan_mode=Run.Replan.OFF,
            max_replans=0,
            started_at=timezone.now(),
            **fields,
        )
        version = PlanVersion.objects.create(
            run=agent_run, number=1, author=PlanVersion.Author.PERSON, plan=plan, note=note
        )
        agent_run.approved_plan = version
        agent_run.save()
        search_index_run(agent_run, steps=[])
        Step.objects.create(
            run=agent_run,
            step_id=BASELINE_STEP_ID,
            title="Do the whole task",
            instruction=fields["task"],
            role=BASELINE_ROLE,
            tools=tools,
            depends_on=[],
        )
        event_append(agent_run.pk, EventType.RUN_STATUS, {"status": agent_run.status})
        if original is not None:
            event_append(
                agent_run.pk,
                EventType.BASELINE_STARTED,
                {"of": original.pk, "max_iterations": max_iterations()},
            )
        dispatch_ready(agent_run)
    return agent_run


def is_single_agent(run: Run, step: Step) -> bool:
    """Whether the step is a single agent's whole task: it gets the longer leash."""
    return bool(run.baseline_of_id) or (
        step.step_id == BASELINE_STEP_ID and step.role == BASELINE_ROLE and not step.depends_on
    )


def max_iterations() -> int:
    # One agent does what a plan spreads over many steps, so it gets a longer leash.
    return settings.AGENTSITE_BASELINE_MAX_ITERATIONS
