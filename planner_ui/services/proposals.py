"""Revision on request: the person asks, the planner proposes, the person accepts or discards.

Every such revision waits for the person; the steps it adds or changes that hold an irreversible
or a network tool are named on it (gated_steps), as on a re-plan."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from planner_ui.agents.planner import revise_plan
from planner_ui.core.errors import AgentError, InvalidTransition
from planner_ui.core.plan import Plan
from planner_ui.core.replan import gated_changes
from planner_ui.models import PlanProposal, PlanVersion
from planner_ui.selectors.tools import tools_for_run

from .events import event_append
from .plans import _lock_for_change, _save_version
from .providers import run_provider
from .replans import held_for_a_person
from .scheduler import revision_enqueue

MAX_NOTE_CHARS = 2000


def proposal_request(*, run_id: int, base_version: int, note: str) -> PlanProposal:
    note = note.strip()
    if not note:
        raise InvalidTransition("Say what the planner should change: the request is empty.")
    if len(note) > MAX_NOTE_CHARS:
        raise InvalidTransition(
            f"The request is {len(note)} characters long; at most {MAX_NOTE_CHARS} are allowed."
        )
    with transaction.atomic():
        run, current = _lock_for_change(run_id, base_version)
        if run.proposals.filter(state=PlanProposal.State.PENDING).exists():
            raise InvalidTransition("The planner is already working on a revision.")
        proposal = PlanProposal.objects.create(run=run, base_version=current.number, note=note)
        event_append(run_id, "plan.revision_requested", {"proposal": proposal.pk, "note": note})
        revision_enqueue(run_id, proposal.pk)
    return proposal


def proposal_make(proposal_id: int) -> None:
    """The planner's part, run by a worker; idempotent."""
    proposal = PlanProposal.objects.select_related("run").get(pk=proposal_id)
    if proposal.state != PlanProposal.State.PENDING:
        return
    run = proposal.run
    current = run.plan_versions.get(number=proposal.base_version)
    tools = tools_for_run(run)
    try:
        provider = run_provider(run, "planner")
        result = revise_plan(
            provider,
            run.task,
            [tool.spec() for tool in tools.values()],
            Plan.model_validate(current.plan),
            proposal.note,
        )
    except AgentError as exc:
        proposal.state, proposal.error = PlanProposal.State.FAILED, str(exc)
    else:
        proposal.model = result.model
        if result.plan is None:
            proposal.state = PlanProposal.State.FAILED
            proposal.error = "The revised plan was invalid twice: " + "; ".join(result.errors)
        else:
            proposal.state, proposal.plan = PlanProposal.State.READY, result.plan.model_dump()
            proposal.gated_steps = gated_changes(
                Plan.model_validate(current.plan), result.plan, set(), held_for_a_person(tools)
            )
    proposal.save()
    event_append(
        run.pk,
        "plan.revision_ready",
        {"proposal": proposal.pk, "state": proposal.state, "error": proposal.error},
    )


def _decide(run_id: int, proposal_id: int) -> tuple[PlanProposal, object, object]:
    proposal = PlanProposal.objects.select_for_update().get(pk=proposal_id, run_id=run_id)
    if proposal.state != PlanProposal.State.READY:
        raise InvalidTransition(f"This revision is {proposal.state}, so it cannot be decided now.")
    run, current = _lock_for_change(run_id, proposal.base_version)
    return proposal, run, current


def proposal_accept(*, run_id: int, proposal_id: int) -> PlanVersion:
    """Adopt the proposal as a new version by the planner, if the plan has not moved since."""
    with transaction.atomic():
        proposal, run, current = _decide(run_id, proposal_id)
        version = _save_version(
            run,
            Plan.model_validate(proposal.plan),
            PlanVersion.Author.PLANNER,
            f"revised on request: {proposal.note[:200]}",
            current.number + 1,
        )
        proposal.state, proposal.decided_at = PlanProposal.State.ACCEPTED, timezone.now()
        proposal.save()
    return version


def proposal_discard(*, run_id: int, proposal_id: int) -> None:
    with transaction.atomic():
        proposal = PlanProposal.objects.select_for_update().get(pk=proposal_id, run_id=run_id)
        if proposal.state not in (PlanProposal.State.READY, PlanProposal.State.FAILED):
            raise InvalidTransition(
                f"This revision is {proposal.state}, so it cannot be discarded now."
            )
        proposal.state, proposal.decided_at = PlanProposal.State.DISCARDED, timezone.now()
        proposal.save()
        event_append(run_id, "plan.revision_discarded", {"proposal": proposal.pk})
