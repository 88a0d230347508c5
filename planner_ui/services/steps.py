"""Step lifecycle: dispatch, claim, execute, finish. Redelivered tasks do no harm."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from planner_ui.agents.checkpoint import Checkpoint
from planner_ui.agents.executor import StepOutcome, StepPaused, StepSpec, run_step
from planner_ui.agents.synthesizer import synthesize
from planner_ui.core.errors import AgentError, RunStopped
from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, Run, Step
from planner_ui.selectors.tools import tools_for_step

from .approvals import approval_find
from .events import event_append
from .files import workspace_checkout, workspace_drop
from .gate import tool_context, tool_runner
from .leases import step_heartbeat
from .providers import run_provider
from .scheduler import step_resume, step_settled
from .streaming import live_text_clear, text_broadcaster

log = logging.getLogger(__name__)


class StepBusy(Exception):  # noqa: N818 - a state, not an error
    """A redelivered step is running with a fresh heartbeat: ask again once the lease is up."""


def step_claim(run_id: int, step_id: str, worker: str, *, redelivered: bool = False) -> Step | None:
    """Mark a queued step running; None when it is not ours to run (finished, or run over).

    A redelivered task may take over a running step whose heartbeat stopped; StepBusy means the
    heartbeat is still fresh, so another worker may still be on it."""
    claimable = Q(status=StepStatus.QUEUED)
    if redelivered:
        # The broker hands a task back when its worker died, but also when a live one merely
        # outlasted the visibility timeout: only a step whose heartbeat stopped is taken over.
        stale = timezone.now() - timedelta(seconds=settings.AGENTSITE_STEP_LEASE_S)
        claimable |= Q(status=StepStatus.RUNNING) & (
            Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True)
        )
    with transaction.atomic():
        now = timezone.now()
        # One conditional UPDATE, joined with the run's status rather than locking its row: a
        # cancel that commits first leaves nothing claimable, one that commits after stops the
        # step at its next call.
        claimed = Step.objects.filter(
            claimable, run_id=run_id, step_id=step_id, run__status=RunStatus.RUNNING
        ).move_to(
            StepStatus.RUNNING,
            attempts=F("attempts") + 1,
            started_at=now,
            heartbeat_at=now,
            worker=worker,
        )
        if not claimed:
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
            return None
        step = Step.objects.select_related("run").get(run_id=run_id, step_id=step_id)
        event_append(
            run_id, "step.started", {"attempt": step.attempts, "worker": worker}, step_id=step_id
        )
    return step


def _context_for(step: Step) -> list[tuple[str, str, str]]:
    parents = {
        s.step_id: s
        for s in Step.objects.filter(run_id=step.run_id, step_id__in=step.depends_on).only(
            "step_id", "title", "output"
        )
    }
    return [
        (sid, parents[sid].title, parents[sid].output) for sid in step.depends_on if sid in parents
    ]


def step_execute(run_id: int, step_id: str, worker: str, *, redelivered: bool = False) -> None:
    """Run one step end to end: claim it, call the executor, record the outcome, dispatch.
    Its heartbeat stays fresh meanwhile, so nobody takes over a step whose worker is alive."""
    step = step_claim(run_id, step_id, worker, redelivered=redelivered)
    if step is None:
        return
    with step_heartbeat(run_id, step_id, worker):
        _execute(step, worker)


def _execute(step: Step, worker: str) -> None:
    run, run_id, step_id = step.run, step.run_id, step.step_id

    def on_event(type: str, payload: dict) -> None:
        event_append(run_id, type, payload, step_id=step_id)

    provider = None  # stays None when choosing the provider is what failed
    live_text = text_broadcaster(run_id, step_id)
    workspace = None
    try:
        if step.step_id == SYNTHESIS_STEP_ID:
            provider = run_provider(run, "synthesizer", step_id)
            outcome = synthesize(provider, run.task, _context_for(step), live_text(1))
        else:
            provider = run_provider(run, f"executor:{step.role}", step_id)
            # The run's files, wherever they were written, in a local folder of this attempt.
            workspace = workspace_checkout(run_id, step_id)
            tool_ctx = tool_context(workspace)
            outcome = run_step(
                provider,
                StepSpec(step.step_id, step.title, step.instruction, step.role, list(step.tools)),
                _context_for(step),
                tool_ctx,
                on_event,
                max_iterations=(
                    settings.AGENTSITE_BASELINE_MAX_ITERATIONS
                    if run.baseline_of_id
                    else settings.AGENTSITE_MAX_STEP_ITERATIONS
                ),
                live_text=live_text,
                run_tool=tool_runner(run, step, tool_ctx, workspace),
                tools=tools_for_step(run, step.tools),
                checkpoint=Checkpoint.from_json(step.checkpoint) if step.checkpoint else None,
                save=lambda state: Step.objects.filter(run_id=run_id, step_id=step_id).update(
                    checkpoint=state.to_json(), heartbeat_at=timezone.now()
                ),
            )
    except StepPaused as paused:
        step_pause(run_id, step_id, paused, worker=worker)
        return
    except RunStopped as exc:
        step_finish(
            run_id,
            step_id,
            error=str(exc),
            model=getattr(provider, "label", ""),
            stopped=True,
            worker=worker,
        )
        return
    except AgentError as exc:
        step_finish(
            run_id, step_id, error=str(exc), model=getattr(provider, "label", ""), worker=worker
        )
        return
    except Exception as exc:  # a bug must fail the step visibly, not leave it running forever
        log.exception("step %s of run %s crashed", step_id, run_id)
        step_finish(
            run_id,
            step_id,
            error=f"internal error: {type(exc).__name__}: {exc}",
            worker=worker,
        )
        return
    finally:
        if workspace is not None:
            workspace_drop(workspace)
    step_finish(run_id, step_id, outcome=outcome, model=provider.label, worker=worker)


def step_pause(run_id: int, step_id: str, paused: StepPaused, *, worker: str = "") -> None:
    """Park a step before a call that waits for a person; it holds no worker meanwhile."""
    with transaction.atomic():
        Run.objects.select_for_update().get(pk=run_id)
        moved = _held(Step.objects.filter(run_id=run_id, step_id=step_id), worker).move_to(
            StepStatus.WAITING,
            only_from={StepStatus.RUNNING},
            checkpoint=paused.checkpoint.to_json(),
        )
        if moved:
            event_append(
                run_id,
                "step.waiting",
                {"tool": paused.call.name, "arguments": paused.call.arguments},
                step_id=step_id,
            )
    live_text_clear(run_id, step_id)
    # Decided while this worker was still parking the step: resume it now, as the decision's
    # own attempt to resume found it still running.
    approval = approval_find(run_id, step_id, f"{paused.checkpoint.iteration}:{paused.call.id}")
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
) -> None:
    """Record a step's result, then queue what it unblocks or close the run.

    `stopped` means the run ended under the step (cancelled, budget spent): it is skipped with
    the reason rather than failed. With `worker`, only while that worker holds the step: one
    that stalled past its lease and was taken over records nothing."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if outcome is not None:
            # Tokens and cost were added call by call (services.accounting).
            status, fields = StepStatus.SUCCEEDED, {"output": outcome.output}
        else:
            status = StepStatus.SKIPPED if stopped else StepStatus.FAILED
            fields = {"error": error}
        finished = _held(Step.objects.filter(run=run, step_id=step_id), worker).move_to(
            status,
            only_from={StepStatus.RUNNING},
            finished_at=timezone.now(),
            model=model,
            **fields,
        )
        if not finished:
            return  # finished already by another delivery of the same task
        # Its conversation so far is not needed to finish it, and can be long.
        step = Step.objects.defer("checkpoint").get(run=run, step_id=step_id)
        if step.status == StepStatus.SUCCEEDED:
            event_append(
                run_id,
                "step.succeeded",
                {
                    "output": step.output,
                    "tokens_in": step.tokens_in,
                    "tokens_out": step.tokens_out,
                    "model_calls": step.model_calls,
                    "cost_usd": str(step.cost_usd),
                    "duration_s": step.duration_s,
                    "model": model,
                },
                step_id=step_id,
            )
        elif step.status == StepStatus.SKIPPED:
            event_append(run_id, "step.skipped", {"reason": error}, step_id=step_id)
        else:
            event_append(run_id, "step.failed", {"error": error}, step_id=step_id)
        step_settled(run, step)
    # Outside the transaction: its output is stored, and Redis is not worth holding the lock.
    live_text_clear(run_id, step_id)


def _held(steps: QuerySet[Step], worker: str) -> QuerySet[Step]:
    return steps.filter(worker=worker) if worker else steps
