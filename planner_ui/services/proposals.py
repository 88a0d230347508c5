"""Revision on request: the person asks, the planner proposes, the person accepts or discards.

Every such revision waits for the person; the steps it adds or changes that hold an irreversible
or a network tool are named on it (gated_steps), as on a re-plan.

Accepting merges the proposal with what people changed since the planner's last version
(core.merge): their renames, added steps and removed arrows stay, and where both sides changed
the same thing the person's choice decides."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone

from planner_ui.agents.planner import revise_plan
from planner_ui.core.errors import AgentError, InvalidTransition
from planner_ui.core.events import EventType
from planner_ui.core.merge import plan_merge
from planner_ui.core.plan import Plan
from planner_ui.core.replan import gated_changes
from planner_ui.core.validation import validate_plan
from planner_ui.models import PlanProposal, PlanVersion
from planner_ui.selectors.proposals import planners_last_version
from planner_ui.selectors.tools import tools_for_run

from .events import event_append
from .plans import plan_lock_for_change, plan_version_save
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
        run, current = plan_lock_for_change(run_id, base_version)
        if run.proposals.filter(state=PlanProposal.State.PENDING).exists():
            raise InvalidTransition("The planner is already working on a revision.")
        proposal = PlanProposal.objects.create(run=run, base_version=current.number, note=note)
        event_append(
            run_id, EventType.PLAN_REVISION_REQUESTED, {"proposal": proposal.pk, "note": note}
        )
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
        EventType.PLAN_REVISION_READY,
        {"proposal": proposal.pk, "state": proposal.state, "error": proposal.error},
    )


def proposal_accept(
    *,
    run_id: int,
    proposal_id: int,
    base_version: int | None = None,
    choices: Mapping[str, str] | None = None,
) -> PlanVersion:
    """Adopt the proposal, merged with the current version, as a new version by the planner.

    `base_version` is the version the person saw the merge against (None: the current one);
    `choices` decide each conflict ("mine" or "theirs", by Conflict.key). The merged plan is
    validated as any plan; an undecided conflict or a cycle the merge closes is refused."""
    with transaction.atomic():
        proposal = PlanProposal.objects.select_for_update().get(pk=proposal_id, run_id=run_id)
        if proposal.state != PlanProposal.State.READY:
            raise InvalidTransition(
                f"This revision is {proposal.state}, so it cannot be decided now."
            )
        run = proposal.run
        latest = run.plan_versions.order_by("-number").values_list("number", flat=True).first()
        assert latest is not None  # a revision is proposed for a run that has a plan
        run, current = plan_lock_for_change(
            run_id, latest if base_version is None else base_version
        )
        base = planners_last_version(run, proposal.base_version)
        merge = plan_merge(
            Plan.model_validate(base.plan),
            Plan.model_validate(current.plan),
            Plan.model_validate(proposal.plan),
        )
        merged = merge.plan(choices or {})
        plan = validate_plan(merged.model_dump(), known_tools=sorted(tools_for_run(run)))
        note = f"revised on request: {proposal.note[:200]}"
        if current.number != base.number:
            note += f" (merged with the changes since version {base.number})"
        version = plan_version_save(run, plan, PlanVersion.Author.PLANNER, note, current.number + 1)
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
        event_append(run_id, EventType.PLAN_REVISION_DISCARDED, {"proposal": proposal.pk})
