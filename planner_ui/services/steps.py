"""Step lifecycle: dispatch, claim, execute, finish. Redelivered tasks do no harm.

The rules every write here obeys (lock order, claims, carry-on, rollbacks):
docs/write-protocol.md."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from planner_ui.agents.checkpoint import Checkpoint
from planner_ui.agents.executor import StepOutcome, StepPaused, StepSpec, run_step
from planner_ui.agents.synthesizer import synthesize
from planner_ui.core.errors import AgentError, RunStopped
from planner_ui.core.events import EventType, check_event
from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.status import RunStatus, StepStatus, step_sources
from planner_ui.models import Approval, Run, RunEvent, Step, StepQuerySet
from planner_ui.selectors.tools import tools_for_step
from planner_ui.stores import sql

from .approvals import approval_find
from .baselines import is_single_agent
from .broadcast import after_commit
from .event_buffer import EventBuffer
from .events import event_append, events_stored
from .files import workspace_checkout, workspace_drop
from .gate import tool_context, tool_runner
from .leases import step_heartbeat
from .mcp import mcp_tool_hold
from .providers import run_provider
from .scheduler import (
    COUNT_DOWN_AFTER_FINISH,
    Carry,
    RunChanges,
    count_down_params,
    counted_of,
    step_resume,
    step_settled,
)
from .streaming import live_text_clear, live_text_forget, text_broadcaster

log = logging.getLogger(__name__)


class StepBusy(Exception):  # noqa: N818 - a state, not an error
    """A redelivered step is running with a fresh heartbeat: ask again once the lease is up."""


def step_claim(run_id: int, step_id: str, worker: str, *, redelivered: bool = False) -> Step | None:
    """Mark a queued step running; None when it is not ours to run (finished, or run over).

    A redelivered task may take over a running step whose heartbeat stopped; StepBusy means the
    heartbeat is still fresh, so another worker may still be on it."""
    began = timezone.now()
    if connection.vendor == "postgresql":
        return _claim_whole(run_id, step_id, worker, began=began, redelivered=redelivered)
    with transaction.atomic():
        pk = _claim(run_id, step_id, worker, began=began, redelivered=redelivered)
    # Read once the write lock is let go: loading the step and its run was most of the
    # claim's time under the lock, which every other step's claim and finish queue for.
    return None if pk is None else _claimed(pk)


def _claim(
    run_id: int,
    step_id: str,
    worker: str,
    *,
    began: datetime | None = None,
    redelivered: bool = False,
    carried_from: str = "",
    events: EventBuffer | None = None,
) -> int | None:
    """The claim itself, in the caller's transaction: the step's key, or None. A carry-on's
    claim appends its event through its finish's buffer (numbered at the finish's end)."""
    # Stamped once this worker holds the database's write lock, as the finish is.
    now = timezone.now()
    claimable, params = _claimable(run_id, step_id, worker, now, redelivered)
    # One conditional UPDATE, joined with the run's status rather than locking its row: a
    # cancel that commits first leaves nothing claimable, one that commits after stops the
    # step at its next call.
    # On PostgreSQL the run's row is key-shared before the step's is locked, in the order a
    # cancel takes them (run, then its steps): taken the other way round, a claim and a cancel
    # at once would each wait for the other until the server broke the deadlock, a second on.
    claimed = sql.rows(
        _CLAIM.format(claimable=claimable, locked=sql.locking("key share"), clock=sql.clock()),
        params,
    )
    if not claimed:
        _not_claimed(run_id, step_id, redelivered)
        return None
    ((pk, attempts),) = claimed
    started = {"attempt": attempts, **_started(now, began, worker, carried_from)}
    if events is None:
        event_append(run_id, EventType.STEP_STARTED, started, step_id=step_id)
    else:
        events.append(run_id, EventType.STEP_STARTED, started, step_id=step_id)
    return int(pk)


def _claimable(
    run_id: int, step_id: str, worker: str, now: datetime, redelivered: bool
) -> tuple[str, list[Any]]:
    """The claim's condition on the step's status, and every parameter of _CLAIM (or of
    _CLAIM_WHOLE's first statement) in their order."""
    params: list[Any] = [StepStatus.RUNNING.value, sql.when(now), worker]
    params += [run_id, step_id, _QUEUED.value]
    claimable = "status = %s"
    if redelivered:
        # The broker hands a task back when its worker died, but also when a live one
        # merely outlasted the visibility timeout: only a step whose heartbeat stopped is
        # taken over (by the database's clock, which stamped the heartbeat).
        stale, stale_params = sql.clock_ago(settings.AGENTSITE_STEP_LEASE_S)
        claimable = (
            f"(status = %s OR (status = %s AND (heartbeat_at < {stale} OR heartbeat_at IS NULL)))"
        )
        params += [_TAKEN_OVER.value, *stale_params]
    params += [run_id, RunStatus.RUNNING.value]
    return claimable, params


def _not_claimed(run_id: int, step_id: str, redelivered: bool) -> None:
    """After a claim that took nothing: StepBusy when a redelivered step is still running."""
    if (
        redelivered
        and Step.objects.filter(
            run_id=run_id,
            step_id=step_id,
            status=StepStatus.RUNNING,
            run__status=RunStatus.RUNNING,
        ).exists()
    ):
        raise StepBusy(step_id)


def _started(
    now: datetime, began: datetime | None, worker: str, carried_from: str
) -> dict[str, Any]:
    """The step.started event's payload, but for its attempt (the claim counts it)."""
    if carried_from:
        return {"worker": worker, "carried_from": carried_from}
    return {"worker": worker, "waited_ms": round((now - (began or now)).total_seconds() * 1000, 1)}


def _claimed(pk: int) -> Step:
    """The step and its run, as the ORM would load them with select_related, in two plain
    SELECTs: building the joined query cost more than running it, at every step's start."""
    step = sql.load(Step, pk)
    step.run = sql.load(Run, step.run_id)
    return step


def _claim_whole(
    run_id: int, step_id: str, worker: str, *, began: datetime, redelivered: bool
) -> Step | None:
    """On PostgreSQL, the claim, its step.started event (numbered from the run's counter), the
    step and its run as they are now, and its parents' outputs, in one statement (_CLAIM_WHOLE)
    with no transaction around it: six round trips were one, and the run's row is no longer
    held for the event across a round trip and a COMMIT, which the 31 claims of a fan-out
    queued for one by one. The rules are the claim's (docs/write-protocol.md, rule 6)."""
    now = timezone.now()
    claimable, params = _claimable(run_id, step_id, worker, now, redelivered)
    payload = _started(now, began, worker, "")
    check_event(EventType.STEP_STARTED, {"attempt": 1, **payload})
    found = sql.rows(
        _CLAIM_WHOLE.format(claimable=claimable),
        [
            *params,
            run_id,
            EventType.STEP_STARTED.value,
            _PAYLOAD.get_db_prep_save(payload, connection),
            sql.when(now),
        ],
    )
    if not found:
        _not_claimed(run_id, step_id, redelivered)
        return None
    row = found[0]
    step = _whole_claimed(row)
    event_pk = row[_STEP_COLUMNS + _RUN_COLUMNS]
    event = RunEvent(
        pk=event_pk,
        run_id=run_id,
        seq=step.run.last_event_seq,
        type=EventType.STEP_STARTED.value,
        step_id=step_id,
        payload={"attempt": step.attempts, **payload},
        created_at=now,
    )
    events_stored([event])
    return step


# Claimed from queued, or from running when taken over: the transitions the table allows.
(_QUEUED,) = step_sources(StepStatus.RUNNING, {StepStatus.QUEUED})
(_TAKEN_OVER,) = step_sources(StepStatus.RUNNING, {StepStatus.RUNNING})
_CLAIM = (
    f"UPDATE {sql.table(Step)} SET status = %s, attempts = attempts + 1, started_at = %s, "
    "heartbeat_at = {clock}, worker = %s WHERE run_id = %s AND step_id = %s AND {claimable} "
    f"AND EXISTS (SELECT 1 FROM {sql.table(Run)} WHERE id = %s AND status = %s{{locked}}) "
    "RETURNING id, attempts"
)
# PostgreSQL only. The claim is _CLAIM's; the run's counter moves only when it claimed (a
# data-modifying WITH runs whether or not it is read); the run's row is key-shared by the claim
# and then updated for the counter, the order every writer of a run takes it in. Every
# statement of a WITH sees one snapshot: the parents' outputs were committed before the step
# was queued.
_CLAIM_WHOLE = (
    "WITH claimed AS ("
    f"UPDATE {sql.table(Step)} SET status = %s, attempts = attempts + 1, started_at = %s, "
    "heartbeat_at = statement_timestamp(), worker = %s "
    "WHERE run_id = %s AND step_id = %s AND {claimable} "
    f"AND EXISTS (SELECT 1 FROM {sql.table(Run)} WHERE id = %s AND status = %s FOR KEY SHARE) "
    f"RETURNING {sql.columns(Step)}), "
    f"counter AS (UPDATE {sql.table(Run)} SET last_event_seq = last_event_seq + 1 "
    f"WHERE id = %s AND EXISTS (SELECT FROM claimed) RETURNING {sql.columns(Run)}), "
    f"started AS (INSERT INTO {sql.table(RunEvent)} "
    "(run_id, seq, type, step_id, payload, created_at) "
    "SELECT counter.id, counter.last_event_seq, %s, claimed.step_id, "
    "%s || jsonb_build_object('attempt', claimed.attempts), %s FROM claimed, counter "
    "RETURNING id) "
    "SELECT claimed.*, counter.*, started.id, "
    "(SELECT json_agg(json_build_array(parent.step_id, parent.title, parent.output)) "
    f"FROM {sql.table(Step)} AS parent WHERE parent.run_id = claimed.run_id "
    "AND parent.step_id IN (SELECT jsonb_array_elements_text(claimed.depends_on))) "
    "FROM claimed, counter, started"
)
_STEP_COLUMNS = len(Step._meta.concrete_fields)
_RUN_COLUMNS = len(Run._meta.concrete_fields)
_PAYLOAD = RunEvent._meta.get_field("payload")


def _context_for(step: Step) -> list[tuple[str, str, str]]:
    """Each parent's id, title and output, in depends_on's order."""
    if not step.depends_on:
        return []
    read = getattr(step, "context_read", None)
    if read is not None:  # read by the claim (_claim_whole)
        return _in_order(step, read)
    return _in_order(
        step,
        sql.rows(
            f"SELECT step_id, title, output FROM {sql.table(Step)} "
            f"WHERE run_id = %s AND step_id IN ({sql.marks(len(step.depends_on))})",
            [step.run_id, *step.depends_on],
        ),
    )


def _in_order(step: Step, found: Sequence[Sequence[Any]]) -> list[tuple[str, str, str]]:
    parents = {step_id: (step_id, title, output) for step_id, title, output in found}
    return [parents[sid] for sid in step.depends_on if sid in parents]


# An earlier step's output reaches the synthesizer in at most this many characters: room for
# a result, bounded for a plan of many steps.
EARLIER_OUTPUT_CHARS = 4000


def _synthesis_material(step: Step) -> list[tuple[str, str, str]]:
    """The last steps' outputs, after what those steps were given: the outputs of the steps
    they depend on, each shortened to EARLIER_OUTPUT_CHARS. A last step that saved or sent a
    result tells that it did, not the result (seen: Qwen2.5-Coder-1.5B's "The result has been
    written to 'result.txt'.", and a synthesizer that then made up the sum it was not shown)."""
    last = _context_for(step)
    parents = Step.objects.filter(run_id=step.run_id, step_id__in=step.depends_on)
    given = {p for depends_on in parents.values_list("depends_on", flat=True) for p in depends_on}
    earlier = (
        Step.objects.filter(run_id=step.run_id, step_id__in=given - set(step.depends_on))
        .filter(status=StepStatus.SUCCEEDED)
        .order_by("position")
        .values_list("step_id", "title", "output")
    )
    return [(sid, title, _shortened(output)) for sid, title, output in earlier] + last


def _shortened(text: str) -> str:
    if len(text) <= EARLIER_OUTPUT_CHARS:
        return text
    return text[:EARLIER_OUTPUT_CHARS] + "\n[shortened]"


def step_execute(
    run_id: int,
    step_id: str,
    worker: str,
    *,
    redelivered: bool = False,
    carry_for_s: float = 0.0,
) -> None:
    """Run one step end to end: claim it, call the executor, record the outcome, dispatch.
    Its heartbeat stays fresh meanwhile, so nobody takes over a step whose worker is alive.

    For `carry_for_s` seconds from the start, a step a finish makes ready runs next in this
    process, at once, rather than after a round trip through the queue and the worker's main
    process (its siblings go to the queue). No task message stands for it, so when this one is
    handed back, because the process died, it takes over what the process was carrying; the
    limit keeps this task's message from being handed back while the process lives (the
    broker does that after its visibility timeout)."""
    started = time.monotonic()
    step = step_claim(run_id, step_id, worker, redelivered=redelivered)
    carried_from = ""
    if step is None and redelivered:
        step = _carried_take_over(run_id, step_id, worker)
        carried_from = step_id
    while step is not None:
        began = time.monotonic()
        # The step's waiting events: what is still held when it ends is stored then, and a
        # failure to store it is raised (docs/write-protocol.md, rule 10); a step its finish
        # claimed to carry on to is then the sweep's to take over, as a dead process's is.
        with step_heartbeat(run_id, step.step_id, worker), EventBuffer() as events:
            carry_on = began - started < carry_for_s
            carried = _execute(step, worker, events, carry_on=carry_on)
        if carried_from:
            # The task's own line in the worker's log (agentsite.worker_log) names the step it
            # was sent for, with the time of everything it ran; each step carried on to, here.
            log.info(
                "execute_step run %s step %s (carried on from %s): done in %.2f s",
                run_id, step.step_id, carried_from, time.monotonic() - began,
            )  # fmt: skip
        carried_from = step.step_id
        step = carried


def _carried_take_over(run_id: int, step_id: str, worker: str) -> Step | None:
    """What a dead process was carrying on to after finishing `step_id`, taken over as a
    redelivered step is (StepBusy while its heartbeat is fresh); None when it carried nothing
    that is still running."""
    rows = {
        sid: (status, ran_by, sql.json_of(Step._meta.get_field("dependents"), dependents))
        for sid, status, ran_by, dependents in sql.rows(
            f"SELECT step_id, status, worker, dependents FROM {sql.table(Step)} WHERE run_id = %s",
            [run_id],
        )
    }
    status, process, _ = rows.get(step_id, ("", "", []))
    current = step_id
    while status == StepStatus.SUCCEEDED and process:
        children = [child for child in rows[current][2] if child in rows]
        # The same process ran it next: the step it carried on to (or took from the queue).
        following = next((c for c in children if rows[c][1] == process), None)
        if following is None:
            return None
        current = following
        status = rows[current][0]
    if status == StepStatus.RUNNING and current != step_id:
        return step_claim(run_id, current, worker, redelivered=True)
    return None


def _execute(
    step: Step, worker: str, events: EventBuffer, *, carry_on: bool = False
) -> Step | None:
    """The step's work, then its end; the key of the step its end claimed for this process to
    run next (with `carry_on`), if any. Every event of the step goes through `events`."""
    run, run_id, step_id = step.run, step.run_id, step.step_id

    def on_event(type: str, payload: dict[str, Any]) -> None:
        events.append(run_id, type, payload, step_id=step_id)

    def checkpoint_save(state: Checkpoint) -> None:
        Step.objects.filter(run_id=run_id, step_id=step_id).update(
            checkpoint=state.to_json(), heartbeat_at=Now()
        )

    provider = None  # stays None when choosing the provider is what failed
    live_text = text_broadcaster(run_id, step_id)
    workspace = None
    try:
        if step.step_id == SYNTHESIS_STEP_ID:
            provider = run_provider(run, "synthesizer", step_id, events=events)
            outcome = synthesize(provider, run.task, _synthesis_material(step), live_text(1))
        else:
            provider = run_provider(run, f"executor:{step.role}", step_id, events=events)
            # The run's files, wherever they were written, in a local folder of this attempt;
            # a step granted no tool cannot touch them.
            workspace = workspace_checkout(run_id, step_id, files=bool(step.tools))
            tool_ctx = tool_context(workspace)
            outcome = run_step(
                provider,
                StepSpec(step.step_id, step.title, step.instruction, step.role, list(step.tools)),
                _context_for(step),
                tool_ctx,
                on_event,
                max_iterations=(
                    settings.AGENTSITE_BASELINE_MAX_ITERATIONS
                    if is_single_agent(run, step)
                    else settings.AGENTSITE_MAX_STEP_ITERATIONS
                ),
                live_text=live_text,
                run_tool=tool_runner(run, step, tool_ctx, workspace),
                tools=tools_for_step(run, step.tools, on_changed=mcp_tool_hold),
                checkpoint=Checkpoint.from_json(step.checkpoint) if step.checkpoint else None,
                save=checkpoint_save,
            )
    except StepPaused as paused:
        step_pause(run_id, step_id, paused, worker=worker, events=events)
        return None
    except (RunStopped, AgentError) as exc:
        # The run ended under the step (skipped with the reason), or the step failed.
        step_finish(
            run_id,
            step_id,
            error=str(exc),
            model=getattr(provider, "label", ""),
            stopped=isinstance(exc, RunStopped),
            worker=worker,
            events=events,
        )
        return None
    except Exception as exc:  # a bug must fail the step visibly, not leave it running forever
        log.exception("step %s of run %s crashed", step_id, run_id)
        step_finish(
            run_id,
            step_id,
            error=f"internal error: {type(exc).__name__}: {exc}",
            worker=worker,
            events=events,
        )
        return None
    finally:
        if workspace is not None:
            workspace_drop(workspace)
    loaded: dict[int, Step] = {}
    carry = _carry(run_id, step_id, worker, loaded) if carry_on else None
    step_finish(
        run_id,
        step_id,
        outcome=outcome,
        model=provider.label,
        worker=worker,
        carry=carry,
        events=events,
    )
    if carry is None or carry.pk is None:
        return None
    # Read by the claim on PostgreSQL; elsewhere once the finish has let go of the write lock.
    return loaded.get(carry.pk) or _claimed(carry.pk)


def _carry(run_id: int, parent: str, worker: str, loaded: dict[int, Step]) -> Carry:
    """How a finish claims, in its own transaction, the step it makes ready for this process,
    its event through the finish's buffer. On PostgreSQL the finish's own statement claims it
    (`took`, _FINISH_COUNTING), and the step, its run and its parents' outputs come back with
    the claim, into `loaded`, rather than in two more round trips once the finish commits;
    elsewhere `claim` claims it once queued, in the same transaction."""

    def took(row: Sequence[Any], events: EventBuffer) -> int:
        step = _whole_claimed(row)
        loaded[step.pk] = step
        assert step.started_at is not None  # set by the claim in the finish's statement
        started = {"attempt": step.attempts, **_started(step.started_at, None, worker, parent)}
        events.append(run_id, EventType.STEP_STARTED, started, step_id=step.step_id)
        return step.pk

    def claim(step_id: str, events: EventBuffer) -> int | None:
        return _claim(run_id, step_id, worker, carried_from=parent, events=events)

    return Carry(claim, worker=worker, took=took)


def _whole_claimed(row: Sequence[Any]) -> Step:
    """A claimed step, its run and its parents' outputs, from a row of _CLAIM_WHOLE's shape."""
    step = sql.instance_of(Step, row[:_STEP_COLUMNS])
    step.run = sql.instance_of(Run, row[_STEP_COLUMNS : _STEP_COLUMNS + _RUN_COLUMNS])
    step.context_read = [tuple(parent) for parent in sql.json_loaded(row[-1]) or []]
    return step


def step_pause(
    run_id: int,
    step_id: str,
    paused: StepPaused,
    *,
    worker: str = "",
    events: EventBuffer | None = None,
) -> None:
    """Park a step before a call that waits for a person; it holds no worker meanwhile. Its
    event goes through the step's buffer, after the step's held events."""
    with transaction.atomic():
        Run.objects.select_for_update().get(pk=run_id)
        moved = _held(Step.objects.filter(run_id=run_id, step_id=step_id), worker).move_to(
            StepStatus.WAITING,
            only_from={StepStatus.RUNNING},
            checkpoint=paused.checkpoint.to_json(),
        )
        if moved:
            waiting = {"tool": paused.call.name, "arguments": paused.call.arguments}
            if events is None:
                event_append(run_id, EventType.STEP_WAITING, waiting, step_id=step_id)
            else:
                events.append(run_id, EventType.STEP_WAITING, waiting, step_id=step_id)
    live_text_clear(run_id, step_id)
    # Decided while this worker was still parking the step: resume it now, as the decision's
    # own attempt to resume found it still running. The very decision the step waits for: an
    # earlier one of the same call (before a retry, or the approval of a call whose outcome is
    # now the question) resumed it at once, again and again, thousands of times a minute.
    approval = approval_find(run_id, step_id, paused.decision_key)
    if approval is not None and approval.state != Approval.State.PENDING:
        with transaction.atomic():
            step_resume(run_id, step_id)


def step_finish(
    run_id: int,
    step_id: str,
    *,
    outcome: StepOutcome | None = None,
    error: str = "",
    model: str = "",
    stopped: bool = False,
    worker: str = "",
    carry: Carry | None = None,
    events: EventBuffer | None = None,
) -> None:
    """Record a step's result, then queue what it unblocks or close the run.

    `stopped` means the run ended under the step (cancelled, budget spent): it is skipped with
    the reason rather than failed. With `worker`, only while that worker holds the step: one
    that stalled past its lease and was taken over records nothing. Its events go through the
    step's buffer, `events` (its held events first), or a buffer of its own."""
    if events is None:
        events = EventBuffer()
    if outcome is not None:
        # Tokens and cost were added call by call (services.accounting).
        status, column, text = StepStatus.SUCCEEDED, "output", outcome.output
    else:
        status = StepStatus.SKIPPED if stopped else StepStatus.FAILED
        column, text = "error", error
    (source,) = step_sources(status, {StepStatus.RUNNING})

    def settle(shared: bool) -> bool:
        """One try, in a transaction: whether it recorded the step's end."""
        if carry is not None:
            carry.pk = None  # what a try that started over claimed was rolled back
        # A try rolled back gives back the held events it took, for the next one.
        with (
            events.given_back_on_rollback(),
            transaction.atomic(),
            events.at_end(run_id) if shared else nullcontext(),
        ):
            lock: sql.Lock = "key share" if shared else "update"
            locked_here = connection.vendor == "postgresql"
            if not locked_here:
                run = _run_state(run_id, lock=lock)
            now = timezone.now()
            params = [status.value, sql.when(now), model, text, run_id, step_id, source.value]
            held = " AND worker = %s" if worker else ""
            if worker:
                params.append(worker)
            counted = None
            if locked_here and status == StepStatus.SUCCEEDED:
                # The run's row locked and read, the children counted down and the one this
                # process carries on to claimed, in the finish's own statement.
                rows = sql.rows(
                    _FINISH_COUNTING.format(column=column, held=held, lock=lock.upper()),
                    [run_id, *params, *count_down_params(run_id, carry, now)],
                )
                finished = [row[:_FINISHED] for row in rows[:1]]
                counted = counted_of([row[_FINISHED:] for row in rows if row[_FINISHED]])
            elif locked_here:
                # The run's row locked and read in the finish's own statement: a round trip
                # less with the run's row held.
                finished = sql.rows(
                    _FINISH_LOCKING.format(column=column, held=held, lock=lock.upper()),
                    [run_id, *params],
                )
            else:
                finished = sql.rows(_FINISH.format(column=column, held=held), params)
            if not finished:
                return False  # finished already by another delivery of the same task
            # Its output is stored: its text in flight goes once this commits, in the round
            # trip that publishes its events (it was a round trip of its own after them).
            after_commit().along(lambda pipe: live_text_forget(pipe, run_id, step_id))
            ((tokens_in, tokens_out, model_calls, cost, started_at, dependents, *state),) = finished
            if locked_here:
                run = sql.instance_of(Run, [run_id, *state], fields=_RUN_STATE)
            if status == StepStatus.SUCCEEDED:
                started_at = sql.datetime_of(started_at)
                events.append(
                    run_id,
                    EventType.STEP_SUCCEEDED,
                    {
                        "output": text,
                        "tokens_in": tokens_in,
                        "tokens_out": tokens_out,
                        "model_calls": model_calls,
                        "cost_usd": str(sql.decimal_of(cost)),
                        "duration_s": (now - started_at).total_seconds() if started_at else None,
                        "model": model,
                        **({"warnings": outcome.warnings} if outcome and outcome.warnings else {}),
                    },
                    step_id=step_id,
                )
            elif status == StepStatus.SKIPPED:
                events.append(run_id, EventType.STEP_SKIPPED, {"reason": error}, step_id=step_id)
            else:
                events.append(run_id, EventType.STEP_FAILED, {"error": error}, step_id=step_id)
            step_settled(
                run,
                step_id,
                status,
                dependents=sql.json_of(Step._meta.get_field("dependents"), dependents),
                error=error,
                carry=carry,
                shared=shared,
                events=events,
                counted=counted,
            )
        return True

    def attempt() -> bool:
        try:
            # A step that succeeded queues its children under a shared lock of its run, so
            # that the steps of a layer finish side by side (PostgreSQL; SQLite serializes
            # writes anyway). The synthesis, every plan's last step, closes the run.
            return settle(shared=status == StepStatus.SUCCEEDED and step_id != SYNTHESIS_STEP_ID)
        except RunChanges:
            return settle(shared=False)  # it closes the run: start over, the run's row held

    # A finish the database rolled back to break a deadlock goes again: left unrecorded, its
    # step would stay running until the sweep took it over and made its calls again.
    sql.retried(attempt)


def _run_state(run_id: int, *, lock: sql.Lock) -> Run:
    """What settling a step reads of its run (step_settled loads the rest on the rare paths
    that need it), its row locked where the database locks rows: loading the whole run was a
    third of the finish's time under SQLite's write lock."""
    return sql.load(Run, run_id, fields=_RUN_STATE, lock=lock)


_RUN_STATE = ("status", "replanning", "paused_at")


# A step's end, as every finish writes it (`column`: its output, or its error).
_FINISH_UPDATE = (
    f"UPDATE {sql.table(Step)} SET status = %s, finished_at = %s, model = %s, {{column}} = %s "
    "WHERE run_id = %s AND step_id = %s AND status = %s{held}"
)
_FINISH = (
    f"{_FINISH_UPDATE} "
    "RETURNING tokens_in, tokens_out, model_calls, cost_usd, started_at, dependents"
)
# PostgreSQL: _FINISH with _run_state's lock and read in front. The run's row is locked
# before the step's, in the order a cancel takes them: `run_state` is read by the WHERE (a
# one-time filter, run before the step's row is scanned) and, materialized, by RETURNING,
# which sees the row as locked (a plain subquery would see the statement's snapshot, older
# than a cancel that committed while this waited for the lock).
_RUN_STATE_LOCKED = (
    f"run_state AS MATERIALIZED (SELECT {', '.join(_RUN_STATE)} "
    f"FROM {sql.table(Run)} WHERE id = %s FOR {{lock}})"
)
_FINISH_LOCKING = (
    f"WITH {_RUN_STATE_LOCKED} {_FINISH_UPDATE} "
    "AND EXISTS (SELECT FROM run_state) "
    "RETURNING tokens_in, tokens_out, model_calls, cost_usd, started_at, dependents, "
    "(SELECT status FROM run_state), (SELECT replanning FROM run_state), "
    "(SELECT paused_at FROM run_state)"
)


# PostgreSQL, a success: _FINISH_LOCKING, then in the same statement the count-down of the
# step's children and the claim of the one this process carries on to (scheduler's
# COUNT_DOWN_AFTER_FINISH, which reads `run_state`, `finished` and the step's output from it).
# A row for each child counted down, or one with no child; `counted`'s columns after the
# first _FINISHED.
_FINISH_COUNTING = (
    f"WITH {_RUN_STATE_LOCKED}, finished AS ({_FINISH_UPDATE} "
    "AND EXISTS (SELECT FROM run_state) "
    "RETURNING step_id, title, output, tokens_in, tokens_out, model_calls, cost_usd, "
    "started_at, dependents), "
    + COUNT_DOWN_AFTER_FINISH.replace("{", "{{").replace("}", "}}")
    + "SELECT finished.tokens_in, finished.tokens_out, finished.model_calls, "
    "finished.cost_usd, finished.started_at, finished.dependents, run_state.status, "
    "run_state.replanning, run_state.paused_at, counted.* "
    "FROM finished CROSS JOIN run_state LEFT JOIN counted ON true"
)
_FINISHED = 9


def _held(steps: StepQuerySet, worker: str) -> StepQuerySet:
    return steps.filter(worker=worker) if worker else steps
