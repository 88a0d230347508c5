"""The single-agent baseline: the same task, one ReAct-style agent holding every tool, one
loop with one growing context, no plan and no synthesizer. Comparing a run with its baseline
is how a person sees whether decomposing the task paid for itself."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from planner_ui.agents.prompts import BASELINE_ROLE
from planner_ui.core.events import EventType
from planner_ui.core.status import RunStatus
from planner_ui.models import PlanVersion, Run, Step
from planner_ui.selectors.tools import tools_for_run

from .events import event_append
from .scheduler import dispatch_ready

BASELINE_STEP_ID = "agent"


def baseline_create(run: Run, user: AbstractBaseUser) -> Run:
    """Start the baseline of `run`: its task, models, policy and budget, run by one agent."""
    original = run.baseline_of or run  # the baseline of a baseline is the original's
    plan = {
        "goal": "The whole task, by one agent",
        "steps": [
            {
                "id": BASELINE_STEP_ID,
                "title": "Do the whole task",
                "instruction": original.task,
                "role": BASELINE_ROLE,
                "tools": sorted(tools_for_run(original)),
                "depends_on": [],
            }
        ],
    }
    with transaction.atomic():
        baseline = Run.objects.create(
            owner=user,
            task=original.task,
            baseline_of=original,
            status=RunStatus.RUNNING,
            auto_approve=True,
            routes=original.routes,
            executor_model=original.executor_model,
            tool_policy=original.tool_policy,
            auto_tools=original.auto_tools,
            allowed_hosts=original.allowed_hosts,
            budget_tokens=original.budget_tokens,
            budget_usd=original.budget_usd,
            replan_mode=Run.Replan.OFF,
            max_replans=0,
            started_at=timezone.now(),
        )
        version = PlanVersion.objects.create(
            run=baseline,
            number=1,
            author=PlanVersion.Author.PERSON,
            plan=plan,
            note=f"single-agent baseline of run {original.pk}",
        )
        baseline.approved_plan = version
        baseline.save()
        Step.objects.create(
            run=baseline,
            step_id=BASELINE_STEP_ID,
            title="Do the whole task",
            instruction=original.task,
            role=BASELINE_ROLE,
            tools=sorted(tools_for_run(original)),
            depends_on=[],
        )
        event_append(baseline.pk, EventType.RUN_STATUS, {"status": baseline.status})
        event_append(
            baseline.pk,
            EventType.BASELINE_STARTED,
            {"of": original.pk, "max_iterations": max_iterations()},
        )
        dispatch_ready(baseline)
    return baseline


def max_iterations() -> int:
    # One agent does what a plan spreads over many steps, so it gets a longer leash.
    return settings.AGENTSITE_BASELINE_MAX_ITERATIONS
