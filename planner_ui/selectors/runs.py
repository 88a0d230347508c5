from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from planner_ui.core.events import EventType
from planner_ui.core.outcome import RunOutcome
from planner_ui.core.plan import Plan
from planner_ui.core.replan import changed_steps
from planner_ui.core.search import search_terms
from planner_ui.core.status import RunStatus
from planner_ui.core.step_record import graph_node
from planner_ui.models import Approval, PlanTemplate, Run, RunEvent, SearchDocument, Step
from planner_ui.tools import Tool

from .estimate import critical_step_ids
from .search import matching
from .step_record import step_record
from .tools import tools_for_run

# The history's filter beside the outcomes: runs that have not finished yet.
UNFINISHED = "unfinished"


@dataclass(frozen=True)
class RunFilters:
    """What the history and the API's run list narrow the runs to; empty means any."""

    q: str = ""  # words of the task, a step's output or the deliverable (full text)
    outcome: str = ""  # a RunOutcome, or UNFINISHED
    status: str = ""  # a RunStatus
    template: int | None = None  # runs from any version of this template
    model: str = ""  # a "provider:model" the run planned or executed with
    since: date | None = None  # created on or after this day (UTC)
    until: date | None = None  # created on or before this day (UTC)


def run_list_for_user(
    user: User, outcome: str = "", filters: RunFilters | None = None
) -> QuerySet[Run]:
    """The user's runs, newest first; only those with `outcome` (a RunOutcome, or UNFINISHED)
    when given, and those `filters` allow."""
    filters = filters or RunFilters(outcome=outcome)
    outcome = outcome or filters.outcome
    runs = Run.objects.filter(owner=user).order_by("-created_at", "-id")
    if outcome == UNFINISHED:
        runs = runs.filter(outcome="")
    elif outcome:
        runs = runs.filter(outcome=RunOutcome(outcome))
    if filters.status:
        runs = runs.filter(status=RunStatus(filters.status))
    if filters.template is not None:
        runs = runs.filter(template_version__template_id=filters.template)
    if filters.model:
        runs = runs.filter(Q(planner_model=filters.model) | Q(executor_model=filters.model))
    if filters.since:
        runs = runs.filter(created_at__date__gte=filters.since)
    if filters.until:
        runs = runs.filter(created_at__date__lte=filters.until)
    if terms := search_terms(filters.q):
        # Each word, the last as typed so far (a prefix): the box searches as the person types.
        documents = SearchDocument.objects.filter(owner=user, run__isnull=False)
        found = matching(documents, terms, match_all=True, prefix_last=True)
        runs = runs.filter(pk__in=found.values("run_id"))
    return runs


def run_models_for_user(user: User) -> list[str]:
    """The models the user's runs planned or executed with, for the history's filter."""
    runs = Run.objects.filter(owner=user)
    planners = runs.exclude(planner_model="").values_list("planner_model", flat=True)
    executors = runs.exclude(executor_model="").values_list("executor_model", flat=True)
    return sorted(set(planners.distinct()) | set(executors.distinct()))


def run_templates_for_user(user: User) -> QuerySet[PlanTemplate]:
    """The templates the user's runs came from, for the history's filter."""
    return PlanTemplate.objects.filter(versions__runs__owner=user).distinct().order_by("name")


def run_get_for_user(user: User, run_id: int) -> Run:
    """The user's run, or 404: another user's run is indistinguishable from a missing one."""
    return get_object_or_404(Run, pk=run_id, owner=user)


def run_user_can_watch(user: User, run_id: int) -> bool:
    return bool(user.is_authenticated) and Run.objects.filter(pk=run_id, owner=user).exists()


def events_after(run_id: int, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
    events = RunEvent.objects.filter(run_id=run_id, seq__gt=seq).order_by("seq")[:limit]
    return [e.as_message() for e in events]


def events_before(run_id: int, seq: int, limit: int) -> list[dict[str, Any]]:
    """The `limit` events before `seq`, newest first: the run page's log going back."""
    events = RunEvent.objects.filter(run_id=run_id, seq__lt=seq).order_by("-seq")[:limit]
    return [e.as_message() for e in events]


def tool_calls_by_step(
    run: Run, step_ids: list[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each step's tool calls and results (of `step_ids`, or all), in order, from the log."""
    calls: dict[str, list[dict[str, Any]]] = {}
    events = run.events.filter(type__in=[EventType.STEP_TOOL_CALL, EventType.STEP_TOOL_RESULT])
    if step_ids is not None:
        events = events.filter(step_id__in=step_ids)
    events = events.order_by("seq")
    for event in events:
        calls.setdefault(event.step_id, []).append({"type": event.type, **event.payload})
    return calls


def approvals_by_step(run: Run, step_ids: list[str]) -> dict[str, list[Approval]]:
    """Each step's approvals, oldest first, for its card in the side panel."""
    by_step: dict[str, list[Approval]] = {}
    for approval in run.approvals.filter(step_id__in=step_ids).order_by("pk"):
        by_step.setdefault(approval.step_id, []).append(approval)
    return by_step


def run_graph(
    run: Run, tools: Mapping[str, Tool] | None = None, steps: Sequence[Step] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Nodes and edges for the plan graph, from the run's current steps; `tools` are the run's
    (tools_for_run) and `steps` all its steps, for a caller that has them already."""
    steps = list(run.steps.all()) if steps is None else steps
    path = critical_step_ids(steps)
    revised = _revised_by_replanner(run)
    on_path, critical_edges = set(path), set(zip(path, path[1:], strict=False))
    tools = tools_for_run(run) if tools is None else tools
    return {
        "nodes": [
            graph_node(
                step_record(s),
                # The irreversible ones, by effect: the graph marks the steps that hold them.
                effects={
                    t: str(tools[t].effect) for t in s.tools if t in tools and tools[t].irreversible
                },
                # On the chain with the most model calls one after another (core.estimate).
                critical=s.step_id in on_path,
                # What the last re-plan added or changed, and why, for the node's tooltip.
                revised=revised.get(s.step_id, ""),
                error=s.error[:300],
            )
            for s in steps
        ],
        "edges": [
            {"source": dep, "target": s.step_id, "critical": (dep, s.step_id) in critical_edges}
            for s in steps
            for dep in s.depends_on
        ],
    }


def _revised_by_replanner(run: Run) -> dict[str, str]:
    """Steps the latest version changed, when a re-plan made it: id → the re-plan's note."""
    versions = list(run.plan_versions.order_by("-number")[:2])
    if len(versions) < 2 or versions[0].author != "replanner":
        return {}
    latest, before = versions
    changed = changed_steps(
        Plan.model_validate(before.plan), Plan.model_validate(latest.plan), set()
    )
    return {step_id: latest.note for step_id in changed}
