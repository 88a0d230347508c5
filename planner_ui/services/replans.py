"""Re-planning: a failed step has the planner revise what is left, keeping what is done.

While a revision is being made or waits for a person, the run dispatches nothing new; steps
already running finish. A revision becomes a plan version by the replanner, applied at once
or, by the run's setting (and always when it adds or changes a step holding an irreversible
or a network tool), after the person accepts it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planner_ui.agents.planner import make_plan
from planner_ui.agents.prompts import replan_message
from planner_ui.core.errors import AgentError, InvalidTransition, PlanValidationError
from planner_ui.core.events import EventType
from planner_ui.core.plan import SYNTHESIS_STEP_ID, Plan
from planner_ui.core.replan import gated_changes, merge_revision
from planner_ui.core.status import KEPT_BY_REPLAN, StepStatus
from planner_ui.core.validation import validate_plan
from planner_ui.models import PlanProposal, PlanVersion, Run, Step
from planner_ui.selectors.tools import tools_for_run
from planner_ui.tools import Tool

from .events import event_append
from .plans import steps_rematerialize
from .providers import run_provider
from .scheduler import dependencies_count, dispatch_ready, run_fail, run_finish_if_done

log = logging.getLogger(__name__)


def replan_make(run_id: int, failed_step_id: str) -> None:
    """The planner's part, run by a worker: propose a revision of what is left."""
    run = Run.objects.get(pk=run_id)
    if run.is_finished or not run.replanning:
        return
    version = run.plan_versions.latest("number")
    current = Plan.model_validate(version.plan)
    steps = {s.step_id: s for s in run.steps.all() if s.step_id != SYNTHESIS_STEP_ID}
    keep = {sid for sid, s in steps.items() if s.status in KEPT_BY_REPLAN}
    failures = [
        (s.step_id, s.title, s.error) for s in steps.values() if s.status == StepStatus.FAILED
    ]
    done = [
        (s.step_id, s.title, s.output) for s in steps.values() if s.status == StepStatus.SUCCEEDED
    ]
    tools = tools_for_run(run)
    specs = [tool.spec() for tool in tools.values()]
    try:
        provider = run_provider(run, "planner")
        message = replan_message(
            run.task, specs, current.model_dump_json(indent=2), done, failures, keep
        )
        result = make_plan(
            provider,
            run.task,
            specs,
            first_message=message,
            replacing=current,
            held=held_for_a_person(tools),
        )
        if result.plan is None:
            raise PlanValidationError(result.errors)
        merged = merge_revision(current, result.plan, keep)
        revised = validate_plan(merged.model_dump(), known_tools=sorted(tools))
    except AgentError as exc:
        _give_up(run_id, failed_step_id, f"re-planning failed: {exc}")
        return
    gated = gated_changes(current, revised, keep, held_for_a_person(tools))
    failed = steps[failed_step_id]
    note = f"re-planned after step '{failed_step_id}' failed: {failed.error[:300]}"
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_finished or not run.replanning:
            return
        run.replans += 1
        run.save(update_fields=["replans"])
        if run.replan_mode == Run.Replan.REVIEW or gated:
            proposal = PlanProposal.objects.create(
                run=run,
                kind=PlanProposal.Kind.REPLAN,
                base_version=version.number,
                note=note,
                state=PlanProposal.State.READY,
                plan=revised.model_dump(),
                model=result.model,
                gated_steps=gated,
            )
            event_append(
                run_id,
                EventType.PLAN_REPLAN_PROPOSED,
                {"proposal": proposal.pk, "gated": gated, "note": note},
                step_id=failed_step_id,
            )
            return
        _apply(run, revised, note, keep)


def held_for_a_person(tools: Mapping[str, Tool]) -> set[str]:
    """The tools a revision may not add to a step, or change a step holding, without a person:
    those that act on the world, and those that reach a host an argument names (a read's URL
    can carry the run's data out). Read off each tool, never off its name."""
    return {name for name, tool in tools.items() if tool.irreversible or tool.reaches_network}


def replan_accept(*, user: User, run_id: int, proposal_id: int) -> PlanVersion:
    with transaction.atomic():
        run, proposal = _lock_proposal(user, run_id, proposal_id)
        keep = {s.step_id for s in run.steps.all() if s.status in KEPT_BY_REPLAN}
        plan = Plan.model_validate(proposal.plan)
        proposal.state, proposal.decided_at = PlanProposal.State.ACCEPTED, timezone.now()
        proposal.save(update_fields=["state", "decided_at"])
        return _apply(run, plan, f"{proposal.note} (accepted by {user.get_username()})", keep)


def replan_discard(*, user: User, run_id: int, proposal_id: int) -> None:
    with transaction.atomic():
        run, proposal = _lock_proposal(user, run_id, proposal_id)
        proposal.state, proposal.decided_at = PlanProposal.State.DISCARDED, timezone.now()
        proposal.save(update_fields=["state", "decided_at"])
        event_append(run_id, EventType.PLAN_REVISION_DISCARDED, {"proposal": proposal.pk})
    _give_up(run_id, "", f"the re-plan was discarded by {user.get_username()}")


def _lock_proposal(user: User, run_id: int, proposal_id: int) -> tuple[Run, PlanProposal]:
    run = Run.objects.select_for_update().get(pk=run_id, owner=user)
    proposal = PlanProposal.objects.select_for_update().get(
        pk=proposal_id, run=run, kind=PlanProposal.Kind.REPLAN
    )
    if proposal.state != PlanProposal.State.READY or not run.replanning or run.is_finished:
        raise InvalidTransition(
            f"This re-plan is {proposal.state} and the run {run.get_status_display()}, so it "
            "cannot be decided now."
        )
    return run, proposal


def _apply(run: Run, plan: Plan, note: str, keep: set[str]) -> PlanVersion:
    """Adopt a revision: a new version, the steps not kept re-made, dispatch resumed."""
    last = run.plan_versions.order_by("-number").values_list("number", flat=True).first()
    assert last is not None  # a run being re-planned has a plan
    number = last + 1
    version = PlanVersion.objects.create(
        run=run,
        number=number,
        author=PlanVersion.Author.REPLANNER,
        plan=plan.model_dump(),
        note=note,
    )
    steps_rematerialize(run, plan, keep, f"dropped by re-plan v{number}")
    dependencies_count(run)
    run.replanning = False
    run.save(update_fields=["replanning"])
    event_append(
        run.pk,
        EventType.PLAN_VERSION,
        {"number": number, "author": version.author, "note": note, "steps": len(plan.steps)},
    )
    dispatch_ready(run)
    run_finish_if_done(run)
    return version


def _give_up(run_id: int, failed_step_id: str, reason: str) -> None:
    """No revision: fail what is left and the run, with the reason (run_fail ends the re-plan)."""
    failed = ", ".join(
        f"'{s.step_id}' ({s.error[:200]})"
        for s in Step.objects.filter(run_id=run_id, status=StepStatus.FAILED)
    )
    run_fail(run_id, f"Step {failed or failed_step_id} failed and {reason}.")
