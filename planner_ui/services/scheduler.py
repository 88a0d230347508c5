"""What runs next, and when a run ends: the one home of dispatch, which decides the work the
Celery workers are handed (services.sender sends it; the sweep sends again what was lost).

Every function that takes a `run` expects the caller to hold its row lock inside a
transaction, and hands work on once it commits: the rules are docs/write-protocol.md's (lock
order, rule 3; queued from, rule 2; the shared finish, rule 4; after commit, rule 9).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import transaction
from django.utils import timezone

from planner_ui.core import dag
from planner_ui.core.events import EventType
from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.status import (
    UNFINISHED_STEP_STATUSES,
    RunStatus,
    StepStatus,
    step_sources,
)
from planner_ui.models import Approval, ExperimentRun, Run, Step
from planner_ui.stores import sql

from .event_buffer import Event, EventBuffer
from .events import event_append, events_append, owner_notify
from .outcomes import run_outcome_set
from .search import search_index_run
from .sender import TaskName, task_send

# --- handing work to the workers -------------------------------------------------------------


def plan_enqueue(run: Run) -> None:
    """Have a worker ask the planner for the run's plan."""
    task_send(TaskName.PLAN_RUN, run.pk, run_id=run.pk)


def revision_enqueue(run_id: int, proposal_id: int) -> None:
    """Have a worker ask the planner for the revision a person requested."""
    task_send(TaskName.REVISE_PLAN, proposal_id, run_id=run_id)


# --- dispatch --------------------------------------------------------------------------------


def dependencies_count(run: Run) -> None:
    """Set every step's dependents and count of dependencies not yet succeeded, from the steps
    as they are: after the steps are made or re-made from a plan."""
    steps = list(run.steps.all())
    done = {s.step_id for s in steps if s.status == StepStatus.SUCCEEDED}
    dependents = dag.dependents({s.step_id: s.depends_on for s in steps})
    for step in steps:
        step.dependents = sorted(dependents.get(step.step_id, ()))
        step.waiting_on = sum(1 for dep in step.depends_on if dep not in done)
    Step.objects.bulk_update(steps, ["dependents", "waiting_on"])


class Carry:
    """The step a finishing worker runs next itself, if its finish made one ready: claimed for
    it in the finish's own transaction, its event through the finish's buffer, and sent to no
    queue (see steps.step_execute).

    `claim(step_id, events)` claims a step the count-down queued. On PostgreSQL the finish's
    statement claims it for `worker` instead (COUNT_DOWN_AFTER_FINISH), and `took(row,
    events)` makes the step of its row (steps._CLAIM_WHOLE's shape) and tells of its start."""

    def __init__(
        self,
        claim: Callable[[str, EventBuffer], int | None],
        *,
        worker: str = "",
        took: Callable[[Sequence[Any], EventBuffer], int] | None = None,
    ) -> None:
        self.claim = claim
        self.worker = worker
        self.took = took
        self.pk: int | None = None


class Counted(NamedTuple):
    """What a count-down did: the steps it queued, in the plan's order; whether any child still
    waits; and, where it claimed the first of them for a carry-on, that step's row."""

    ready: list[str]
    waiting: bool
    carried: Sequence[Any] | None = None


def dispatch_ready(run: Run) -> list[str]:
    """Queue the run's pending steps whose dependencies all succeeded (a step's end queues
    its own dependents as it counts them down: _count_down)."""
    if not _may_dispatch(run):
        return []
    return _dispatch(run, Counted(_queue_ready(run.pk), False), None, None)


def _may_dispatch(run: Run) -> bool:
    """Whether steps may start: not while the plan is being revised, or a person paused it."""
    return not (run.replanning or run.paused_at)


def _dispatch(
    run: Run, counted: Counted, carry: Carry | None, events: EventBuffer | None
) -> list[str]:
    """Hand steps just moved to queued on: their events (through a finish's buffer, if one
    queued them), the carried one to the caller, the rest to the queue once the transaction
    commits."""
    ready = counted.ready
    queued: list[Event] = [(EventType.STEP_QUEUED, {}, step_id) for step_id in ready]
    if events is None:
        events_append(run.pk, queued)
    else:
        events.append_all(run.pk, queued)
    sent = ready
    if carry is not None and counted.carried is not None:
        assert carry.took is not None  # only a carry that can take a row is given one
        carry.pk = carry.took(counted.carried, events or EventBuffer())
        sent = ready[1:]
    elif carry is not None and ready:
        carry.pk = carry.claim(ready[0], events or EventBuffer())
        if carry.pk is not None:
            sent = ready[1:]
    for step_id in sent:
        task_send(TaskName.EXECUTE_STEP, run.pk, step_id, run_id=run.pk, step_id=step_id)
    return ready


# The statuses a step is queued from (pending), as the transition table allows.
_QUEUED_FROM = sorted(s.value for s in step_sources(StepStatus.QUEUED, {StepStatus.PENDING}))
# A carried step goes from pending through queued to running in one statement: each move must
# be the table's (this raises when the module loads if the second stops being one).
step_sources(StepStatus.RUNNING, {StepStatus.QUEUED})


def _count_down(run: Run, step_ids: list[str]) -> Counted:
    """One dependency fewer to wait on for each of `step_ids`, after one of theirs succeeded,
    and those left with none queued in the same UPDATE where the run lets steps start: the
    steps it queued, in the plan's order, and whether any of `step_ids` still waits (so the run
    is not over). Counting down and queuing were two statements, each a round trip under the
    children's row locks (on PostgreSQL a finish counts down in its own statement:
    COUNT_DOWN_AFTER_FINISH)."""
    if not step_ids:
        return Counted([], False)
    table = sql.table(Step)
    # The children's rows are locked in one order, by step id. Locked in the order each
    # UPDATE's scan met them, two finishes counting down children they share deadlocked on
    # PostgreSQL (seen in the benchmark: the server failed one of the finishes a second on).
    rows_of = (
        f"id IN (SELECT id FROM {table} WHERE run_id = %s "
        f"AND step_id IN ({sql.marks(len(step_ids))}) ORDER BY step_id{sql.locking('update')})"
    )
    if not _may_dispatch(run):
        counted = sql.rows(
            f"UPDATE {table} SET waiting_on = waiting_on - 1 WHERE {rows_of} RETURNING status",
            [run.pk, *step_ids],
        )
        return Counted([], any(status == StepStatus.PENDING for (status,) in counted))
    # SET reads the row as it was; RETURNING sees it as it is now. A step this statement
    # queued carries this very queued_at (one queued before by another way keeps its own).
    becomes = f"waiting_on = 1 AND status IN ({sql.marks(len(_QUEUED_FROM))})"
    now = sql.when(timezone.now())
    counted = sql.rows(
        f"UPDATE {table} SET waiting_on = waiting_on - 1, "
        f"status = CASE WHEN {becomes} THEN %s ELSE status END, "
        f"queued_at = CASE WHEN {becomes} THEN %s ELSE queued_at END "
        f"WHERE {rows_of} RETURNING step_id, position, status, queued_at = %s",
        [*_QUEUED_FROM, StepStatus.QUEUED.value, *_QUEUED_FROM, now, run.pk, *step_ids, now],
    )
    queued = sorted((position, step_id) for step_id, position, _, moved in counted if moved)
    waiting = any(status == StepStatus.PENDING for _, _, status, _ in counted)
    return Counted([step_id for _, step_id in queued], waiting)


# PostgreSQL: the count-down of a finish, and the claim of the child it readies first in the
# plan's order for the finishing worker to carry on to (rule 7), as the tail of the finish's
# own statement (steps._FINISH_COUNTING, which names the step's run `run_state`, the step as
# it finished `finished`, and whether to carry on: `carry`). Apart, they were three round
# trips with the rows locked: the finish, the count-down, the claim. The children are locked
# by step id, as _count_down locks them, after the run's row and the step's; the carried step
# goes from pending through queued to running at once (both moves the transition table's:
# _QUEUED_FROM, then steps' _QUEUED) and comes back in steps._CLAIM_WHOLE's shape, with its
# parents' outputs. The other parents are read with a share lock, not from the statement's
# snapshot: that was taken before the statement waited for the children's locks, and a
# sibling that held them committed its own output meanwhile; a share lock sees the row as last
# committed (a key share does not: it neither waits for nor looks past an update that left the
# key alone). No one writes a finished step's row but under its run's row locked for update,
# which the finish's lock of the run holds off: the share lock waits for nothing. The carried
# step starts when the last of its parents finished, this one or another: a sibling that
# stamped its end after this finish stamped its own can still commit first, while this
# statement is on its way or waits for the children's locks.
COUNT_DOWN_AFTER_FINISH = (
    "children AS MATERIALIZED ("
    "SELECT child.id, child.run_id, child.position, child.step_id, child.depends_on, "
    "child.waiting_on = 1 AND child.status IN ({pending}) "
    "AND (SELECT NOT replanning AND paused_at IS NULL FROM run_state) AS ready "
    f"FROM {sql.table(Step)} AS child WHERE child.run_id = %s AND child.step_id = ANY(ARRAY("
    "SELECT jsonb_array_elements_text(dependents) FROM finished)) "
    "AND (SELECT status = %s FROM run_state) ORDER BY child.step_id FOR UPDATE), "
    "carried AS MATERIALIZED ("
    "SELECT id FROM children WHERE ready AND %s ORDER BY position, step_id LIMIT 1), "
    "parents AS MATERIALIZED (SELECT parent.step_id, parent.title, parent.output, "
    "parent.finished_at "
    f"FROM {sql.table(Step)} AS parent WHERE parent.run_id = %s AND parent.step_id = ANY(ARRAY("
    "SELECT jsonb_array_elements_text(children.depends_on) FROM children "
    "JOIN carried USING (id))) AND parent.step_id NOT IN (SELECT step_id FROM finished) "
    "FOR SHARE), "
    f"counted AS (UPDATE {sql.table(Step)} AS step SET waiting_on = step.waiting_on - 1, "
    "status = CASE WHEN carried.id IS NOT NULL THEN %s "
    "WHEN children.ready THEN %s ELSE step.status END, "
    "queued_at = CASE WHEN carried.id IS NOT NULL "
    "THEN GREATEST(%s, (SELECT max(finished_at) FROM parents)) "
    "WHEN children.ready THEN %s ELSE step.queued_at END, "
    "attempts = step.attempts + CASE WHEN carried.id IS NOT NULL THEN 1 ELSE 0 END, "
    "started_at = CASE WHEN carried.id IS NOT NULL "
    "THEN GREATEST(%s, (SELECT max(finished_at) FROM parents)) ELSE step.started_at END, "
    "heartbeat_at = CASE WHEN carried.id IS NOT NULL "
    "THEN statement_timestamp() ELSE step.heartbeat_at END, "
    "worker = CASE WHEN carried.id IS NOT NULL THEN %s ELSE step.worker END "
    "FROM children LEFT JOIN carried USING (id) "
    f"LEFT JOIN {sql.table(Run)} AS run_now "
    "ON run_now.id = children.run_id AND carried.id IS NOT NULL "
    "WHERE step.id = children.id "
    "RETURNING step.step_id AS counted_step, step.position, step.status AS counted_status, "
    "children.ready, carried.id IS NOT NULL AS carried, "
    f"{sql.columns(Step, prefix='step.')}, {sql.columns(Run, prefix='run_now.')}, "
    "CASE WHEN carried.id IS NOT NULL THEN (SELECT json_agg(json_build_array("
    "parent.step_id, parent.title, parent.output)) FROM (SELECT step_id, title, output "
    "FROM parents UNION ALL SELECT step_id, title, output FROM finished) AS parent) END "
    "AS context) "
).format(pending=", ".join(f"'{status}'" for status in _QUEUED_FROM))
_CARRIED_FROM = 5  # where the carried step's row starts in a row of `counted`


def count_down_params(run_id: int, carry: Carry | None, at: datetime) -> list[Any]:
    """COUNT_DOWN_AFTER_FINISH's parameters, in the order of its text."""
    now = sql.when(at)
    worker = carry.worker if carry is not None else ""
    children_and_parents = [run_id, RunStatus.RUNNING.value, carry is not None, run_id]
    counted = [StepStatus.RUNNING.value, StepStatus.QUEUED.value, now, now, now, worker]
    return children_and_parents + counted


def counted_of(rows: Sequence[Sequence[Any]]) -> Counted:
    """What COUNT_DOWN_AFTER_FINISH did, from the rows of `counted` (none: no child)."""
    queued = sorted((position, step_id) for step_id, position, _, ready, *_ in rows if ready)
    waiting = any(status == StepStatus.PENDING for _, _, status, *_ in rows)
    carried = next((row[_CARRIED_FROM:] for row in rows if row[4]), None)
    return Counted([step_id for _, step_id in queued], waiting, carried)


def _queue_ready(run_id: int) -> list[str]:
    """Move the run's pending steps with no dependency left to wait on to queued, in one
    conditional UPDATE that says which moved: two callers at once can never queue the same step
    twice. In the plan's order."""
    moved = sql.rows(
        f"UPDATE {sql.table(Step)} SET status = %s, queued_at = %s "
        f"WHERE run_id = %s AND waiting_on = 0 AND status IN ({sql.marks(len(_QUEUED_FROM))}) "
        "RETURNING step_id, position",
        [StepStatus.QUEUED.value, sql.when(timezone.now()), run_id, *_QUEUED_FROM],
    )
    return [step_id for step_id, _ in sorted(moved, key=lambda row: (row[1], row[0]))]


def step_resume(run_id: int, step_id: str) -> bool:
    """Queue a step that waited for a decision; it carries on from its checkpoint."""
    if not Step.objects.filter(run_id=run_id, step_id=step_id).move_to(
        StepStatus.QUEUED, only_from={StepStatus.WAITING}, queued_at=timezone.now()
    ):
        return False  # not waiting (the run ended, or it was resumed already)
    event_append(run_id, EventType.STEP_QUEUED, {"resumed": True}, step_id=step_id)
    task_send(TaskName.EXECUTE_STEP, run_id, step_id, run_id=run_id, step_id=step_id)
    return True


class RunChanges(Exception):  # noqa: N818 - a state, not an error
    """Settling a step under a shared lock of its run found that it changes the run itself:
    roll back and settle it again holding the run's row."""


def step_settled(
    run: Run,
    step_id: str,
    status: str,
    *,
    dependents: list[str],
    error: str,
    carry: Carry | None = None,
    shared: bool = False,
    events: EventBuffer | None = None,
    counted: Counted | None = None,
) -> None:
    """After a step's result is recorded: queue what it unblocks, re-plan around a failure, or
    skip what is left; then close the run if nothing is left to do.

    `shared`: the caller holds the run's row in a shared lock (steps.step_finish: other steps
    finish meanwhile, steering waits), enough to queue a step's children; what would change
    the run raises RunChanges instead.

    `events`: the finish's buffer. The events of the steps it queues go through it, to be
    numbered at the shared finish's end; the rest, appended only under the run's row lock,
    come after the finish's own event, which took the step's held events already.

    `counted`: the count-down the finish's own statement made (COUNT_DOWN_AFTER_FINISH)."""
    if run.status != RunStatus.RUNNING:
        return
    if status == StepStatus.SUCCEEDED:
        if counted is None:
            counted = _count_down(run, dependents)
        if _dispatch(run, counted, carry, events) or counted.waiting:
            return  # what it queued, or what still waits on other steps, is left to run
        if shared:
            # Two last steps that finished side by side would each see the other running.
            raise RunChanges(step_id)
        run = _whole(run)
    else:
        if shared:
            raise RunChanges(step_id)
        run = _whole(run)
        if status == StepStatus.FAILED and replan_start(run, step_id, error):
            return  # the revision decides what happens to the steps that are left
        # No re-planning: nothing new starts, running branches finish, the run fails.
        reason = f"not run because step '{step_id}' failed"
        pending = list(
            run.steps.filter(status=StepStatus.PENDING).values_list("step_id", flat=True)
        )
        run.steps.filter(step_id__in=pending).move_to(
            StepStatus.SKIPPED, only_from={StepStatus.PENDING}, error=reason
        )
        for pending_id in pending:
            event_append(run.pk, EventType.STEP_SKIPPED, {"reason": reason}, step_id=pending_id)
    run_finish_if_done(run)


def _whole(run: Run) -> Run:
    """The run with every field: the finish reads only its state, and re-planning and closing
    the run, which are rarer, read and save much more of it."""
    return Run.objects.get(pk=run.pk) if run.get_deferred_fields() else run


def replan_start(run: Run, step_id: str, error: str) -> bool:
    """After step `step_id` failed with `error`: start re-planning if the run allows it.

    Returns False when the run does not re-plan (off, its cap reached, or the failure is the
    synthesizer's); the caller then fails what is left as before."""
    if run.replan_mode == Run.Replan.OFF:
        return False
    if step_id == SYNTHESIS_STEP_ID:
        # Every step of the plan succeeded before the synthesizer ran, so a revision has
        # nothing to route around (and the replanner, which revises the plan's steps, has no
        # such step to look up: seen on seed 99 of the opt-in run, it failed with a KeyError
        # and left the run re-planning). The synthesizer has had its own ask once more.
        return False
    if run.replanning:
        return True  # one revision at a time; it will see this failure too
    if run.replans >= run.max_replans:
        event_append(
            run.pk,
            EventType.PLAN_REPLAN_CAP,
            {"replans": run.replans, "cap": run.max_replans},
            step_id=step_id,
        )
        return False
    run.replanning = True
    run.save(update_fields=["replanning"])
    event_append(run.pk, EventType.PLAN_REPLANNING, {"error": error}, step_id=step_id)
    task_send(TaskName.REPLAN, run.pk, step_id, run_id=run.pk)
    return True


# --- the end of a run ------------------------------------------------------------------------


def run_finish_if_done(run: Run) -> None:
    """Close a running run once no step is pending, queued, running or waiting."""
    if run.replanning:
        return  # a revision may add steps
    if run.steps.filter(status__in=UNFINISHED_STEP_STATUSES).exists():
        return
    steps = list(run.steps.all())
    failed = [s for s in steps if s.status == StepStatus.FAILED]
    run.finished_at = timezone.now()
    if failed:
        run.move_to(RunStatus.FAILED)
        run.error = "; ".join(f"step '{s.step_id}' failed: {s.error}" for s in failed)
    else:
        run.move_to(RunStatus.SUCCEEDED)
        synthesis = next((s for s in steps if s.step_id == SYNTHESIS_STEP_ID), None)
        # A baseline has no synthesizer: its one agent's answer is the deliverable.
        last = synthesis or (steps[-1] if len(steps) == 1 else None)
        run.result = last.output if last else ""
    run_outcome_set(run, steps)
    run.save()
    search_index_run(run, steps)
    event_append(run.pk, EventType.RUN_STATUS, _status_payload(run))
    _experiment_tell(run)


def _experiment_tell(run: Run) -> None:
    """A run of an experiment ended: the experiment checks it and starts the next slot."""
    experiment_id = (
        ExperimentRun.objects.filter(run_id=run.pk).values_list("experiment_id", flat=True).first()
    )
    if experiment_id is not None:
        task_send(TaskName.EXPERIMENT_ADVANCE, experiment_id, run_id=run.pk)


def _status_payload(run: Run) -> dict[str, str]:
    return {
        "status": run.status,
        "error": run.error,
        "outcome": run.outcome,
        "outcome_reason": run.outcome_reason,
    }


def run_end(run: Run, status: RunStatus, reason: str, *, events: EventBuffer | None = None) -> None:
    """End a run early (failed or cancelled).

    What has not started is skipped (queued tasks find the run over and do nothing), pending
    approvals are withdrawn, a re-plan in progress is abandoned, and a running step stops at
    its next call and records why. `events`: the buffer of the step that ends it (its budget
    spent), whose held events go first."""
    run.move_to(status)
    run.error = reason
    run.finished_at = timezone.now()
    run.replanning = False
    run.paused_at = None
    run_outcome_set(run, [])
    run.save()
    run.steps.move_to(
        StepStatus.SKIPPED,
        only_from={StepStatus.PENDING, StepStatus.QUEUED, StepStatus.WAITING},
        error=f"not run: {reason}",
    )
    approvals_withdraw(run.pk, reason, events=events)
    search_index_run(run)
    if events is None:
        event_append(run.pk, EventType.RUN_STATUS, _status_payload(run))
    else:
        events.append(run.pk, EventType.RUN_STATUS, _status_payload(run))
    _experiment_tell(run)


def run_fail(run_id: int, reason: str, *, events: EventBuffer | None = None) -> None:
    """Fail a run that is not finished yet, with the reason; takes the lock itself. `events`:
    as run_end's."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if not run.is_finished:
            run_end(run, RunStatus.FAILED, reason, events=events)


def approvals_withdraw(run_id: int, reason: str, *, events: EventBuffer | None = None) -> int:
    """Withdraw every pending approval of a run that ended; returns how many. `events`: as
    run_end's."""
    count = Approval.objects.filter(run_id=run_id, state=Approval.State.PENDING).update(
        state=Approval.State.WITHDRAWN, reason=reason, decided_at=timezone.now()
    )
    if count:
        withdrawn = {"count": count, "reason": reason}
        if events is None:
            event_append(run_id, EventType.APPROVAL_WITHDRAWN, withdrawn)
        else:
            events.append(run_id, EventType.APPROVAL_WITHDRAWN, withdrawn)
        owner_notify(run_id)
    return count
