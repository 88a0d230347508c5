"""Suites and experiments: storing a person's suites, starting an experiment's slots as
ordinary runs on the workers, checking each run as it ends, and stopping at the budget.

An experiment advances in one place, `experiment_advance`, under its row lock: the end of each
of its runs asks for it (services.scheduler), and so does every sweep, so a lost message or a
dead worker only delays it. A slot gets its run in the transaction that creates the run, and
is checked once, when `passed` is still empty: a slot runs once and counts once.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone
from pydantic import TypeAdapter, ValidationError

from planner_ui import tasks
from planner_ui.core.bounds import TokenBudget, UsdBudget
from planner_ui.core.effects import PolicyMode
from planner_ui.core.errors import InvalidTransition
from planner_ui.core.evaluation import (
    MAX_REPEAT,
    Arm,
    ArmKind,
    EvaluationError,
    Suite,
    arms_check,
    check_run,
    checks_pass,
    suite_load,
)
from planner_ui.core.routing import RouteError
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import EvaluationSuite, Experiment, ExperimentRun, Run

from .baselines import single_agent_create
from .providers import routes_for_run
from .runs import RunInputError, run_create, run_pause, run_resume
from .scheduler import run_end

MAX_CONCURRENCY = 16


def suite_save(
    owner: AbstractBaseUser, content: str, suite: EvaluationSuite | None = None
) -> EvaluationSuite:
    """Store a suite from its YAML or JSON text, new or over `suite`; its name is the one the
    text gives. EvaluationError says what is wrong with the text."""
    parsed = suite_load(content)
    row = suite or EvaluationSuite(owner=owner)
    row.name, row.content = parsed.name, content
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        raise EvaluationError(
            f"You have a suite named {parsed.name!r} already; rename this one."
        ) from None
    return row


def experiment_create(
    owner: AbstractBaseUser,
    suite: Suite,
    arms: Sequence[Arm],
    *,
    repeat: int = 1,
    concurrency: int = 2,
    budget_usd: Decimal | None = None,
    budget_tokens: int | None = None,
    tool_policy: str = PolicyMode.DRY_RUN,
    suite_row: EvaluationSuite | None = None,
) -> Experiment:
    """Make the experiment and all its slots, and have a worker start the first ones."""
    arms = arms_check(arms)
    if not 1 <= repeat <= MAX_REPEAT:
        raise EvaluationError(f"Repeat each task 1 to {MAX_REPEAT} times.")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise EvaluationError(f"Run 1 to {MAX_CONCURRENCY} runs at once.")
    if budget_usd is not None and budget_usd <= 0:
        raise EvaluationError("A budget in USD must be more than 0.")
    if budget_tokens is not None and budget_tokens <= 0:
        raise EvaluationError("A token budget must be a positive number of tokens.")
    _within("Budget in USD", UsdBudget, budget_usd)
    _within("Token budget", TokenBudget, budget_tokens)
    if tool_policy not in (PolicyMode.DRY_RUN, PolicyMode.ASK):
        # "auto" needs a list of tools; an experiment's choice is to record or to ask.
        raise EvaluationError("Irreversible calls in an experiment: dry_run or ask.")
    for arm in arms:
        try:
            routes_for_run(arm.routes)
        except RouteError as exc:
            raise EvaluationError(f"Arm {arm.name}: {exc}") from None
    with transaction.atomic():
        experiment = Experiment.objects.create(
            owner=owner,
            suite=suite_row,
            suite_name=suite.name,
            suite_snapshot=suite.model_dump(mode="json", by_alias=True),
            arms=[arm.model_dump(mode="json") for arm in arms],
            repeat=repeat,
            concurrency=concurrency,
            budget_usd=budget_usd,
            budget_tokens=budget_tokens,
            tool_policy=tool_policy,
        )
        # Repetition first, then task, then arm: whatever stops it early, the arms have run
        # the same tasks about as often.
        ExperimentRun.objects.bulk_create(
            ExperimentRun(experiment=experiment, arm=arm.name, task_index=index, repetition=rep)
            for rep in range(repeat)
            for index in range(len(suite.tasks))
            for arm in arms
        )
        advance_enqueue(experiment.pk)
    return experiment


def _within(name: str, bound: object, value: object) -> None:
    """The database's columns hold budgets only so big and so fine (core.bounds)."""
    if value is None:
        return
    try:
        TypeAdapter(bound).validate_python(value)
    except ValidationError as exc:
        raise EvaluationError(f"{name}: {exc.errors()[0]['msg']}.") from None


def advance_enqueue(experiment_id: int) -> None:
    transaction.on_commit(lambda: tasks.experiment_advance.delay(experiment_id))


def experiment_advance(experiment_id: int) -> Experiment:
    """Check the slots whose run ended, stop at the budget, start slots up to the concurrency
    limit, and close the experiment when every slot is checked. Safe to call any time."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if experiment.is_finished:
            return experiment
        suite = Suite.model_validate(experiment.suite_snapshot)
        slots = list(experiment.slots.select_related("run"))
        for slot in slots:
            if slot.passed is None and slot.run is not None and slot.run.is_finished:
                _check_slot(slot, suite)
        if reason := _over_budget(experiment):
            _stop(experiment, slots, Experiment.Status.STOPPED, reason)
            return experiment
        if experiment.paused_at:
            return experiment  # resuming advances it again
        running = sum(1 for s in slots if s.passed is None and s.run is not None)
        waiting = [s for s in slots if s.run is None and s.passed is None]
        arms = {arm["name"]: Arm.model_validate(arm) for arm in experiment.arms}
        starting = waiting[: max(0, experiment.concurrency - running)]
        left = _left(experiment) if starting else _Left()
        for slot in starting:
            _start_slot(experiment, slot, suite, arms[slot.arm], left)
        if all(s.passed is not None for s in slots):
            experiment.status = Experiment.Status.FINISHED
            experiment.finished_at = timezone.now()
            experiment.save(update_fields=["status", "finished_at"])
    return experiment


def experiment_pause(experiment_id: int, user: AbstractBaseUser) -> Experiment:
    """Start no new slot and pause the runs going (their started steps carry on to their end,
    as with any paused run); kept in the database, so restarts do not lift it."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if experiment.is_finished or experiment.paused_at:
            state = "paused already" if experiment.paused_at else experiment.get_status_display()
            raise InvalidTransition(f"This experiment is {state}, so it cannot be paused.")
        experiment.paused_at = timezone.now()
        experiment.save(update_fields=["paused_at"])
        for run_id in _going(experiment):
            with suppress(InvalidTransition):  # paused by the person already
                run_pause(run_id, user)
    return experiment


def experiment_resume(experiment_id: int, user: AbstractBaseUser) -> Experiment:
    """Go on from a pause: its runs resume and the next slots start."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if experiment.is_finished or not experiment.paused_at:
            raise InvalidTransition(
                f"This experiment is {experiment.get_status_display()} and not paused, so "
                "there is nothing to resume."
            )
        experiment.paused_at = None
        experiment.save(update_fields=["paused_at"])
        for run_id in _going(experiment):
            with suppress(InvalidTransition):
                run_resume(run_id, user)
        advance_enqueue(experiment.pk)
    return experiment


def _going(experiment: Experiment) -> list[int]:
    """Its runs that have started and not been checked yet."""
    return list(
        experiment.slots.filter(passed__isnull=True, run__isnull=False).values_list(
            "run_id", flat=True
        )
    )


def experiment_cancel(experiment_id: int, user: AbstractBaseUser) -> Experiment:
    """Start nothing more and cancel the runs still going; what ended stays counted."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if not experiment.is_finished:
            slots = list(experiment.slots.select_related("run"))
            reason = f"Cancelled by {user.get_username()}."
            _stop(experiment, slots, Experiment.Status.CANCELLED, reason)
    return experiment


def experiments_advance_running() -> int:
    """Ask for every running experiment to advance: the sweep's part (a run's end whose message
    was lost, a worker that died while it advanced one)."""
    ids = list(
        Experiment.objects.filter(status=Experiment.Status.RUNNING).values_list("pk", flat=True)
    )
    for experiment_id in ids:
        tasks.experiment_advance.delay(experiment_id)
    return len(ids)


def _check_slot(slot: ExperimentRun, suite: Suite) -> None:
    run = slot.run
    assert run is not None
    files = {f.path: bytes(f.content) for f in run.files.all()}
    results = check_run(suite.tasks[slot.task_index], run.result, files)
    slot.checks = [[r.passed, r.detail] for r in results]
    slot.passed = run.status == RunStatus.SUCCEEDED and checks_pass(results)
    slot.save(update_fields=["checks", "passed"])


def _start_slot(
    experiment: Experiment, slot: ExperimentRun, suite: Suite, arm: Arm, left: _Left
) -> None:
    options = RunOptions(
        task=suite.tasks[slot.task_index].task,
        auto_approve=True,
        routes=arm.routes,
        tool_policy=experiment.tool_policy,
        # What is left of the experiment's budget, so that one run cannot spend far past it
        # (runs going at once may still overrun it together by up to one budget each).
        budget_usd=left.usd,
        budget_tokens=left.tokens,
    )
    try:
        if arm.kind is ArmKind.AGENT:
            slot.run = single_agent_create(experiment.owner, options)
        else:
            slot.run = run_create(owner=experiment.owner, options=options)
    except RunInputError as exc:
        # The installation refused the task (too long, a route gone): the slot failed.
        slot.passed, slot.checks = False, [[False, f"The run could not start: {exc}"]]
        slot.save(update_fields=["passed", "checks"])
        return
    slot.save(update_fields=["run"])


@dataclass(frozen=True)
class _Left:
    """What is left of an experiment's budget; None where it has none."""

    usd: Decimal | None = None
    tokens: int | None = None


def _spent(experiment: Experiment) -> tuple[Decimal, int]:
    spent = Run.objects.filter(experiment_slot__experiment=experiment).aggregate(
        cost=Sum("cost_usd"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")
    )
    return spent["cost"] or Decimal(0), (spent["tokens_in"] or 0) + (spent["tokens_out"] or 0)


def _over_budget(experiment: Experiment) -> str:
    if experiment.budget_usd is None and experiment.budget_tokens is None:
        return ""
    cost, tokens = _spent(experiment)
    if experiment.budget_usd is not None and cost >= experiment.budget_usd:
        return f"Budget spent: ${cost:.4f} of ${experiment.budget_usd:.4f}."
    if experiment.budget_tokens is not None and tokens >= experiment.budget_tokens:
        return f"Budget spent: {tokens} tokens of {experiment.budget_tokens}."
    return ""


_CENTICENT = Decimal("0.0001")


def _left(experiment: Experiment) -> _Left:
    if experiment.budget_usd is None and experiment.budget_tokens is None:
        return _Left()
    cost, tokens = _spent(experiment)
    usd = None
    if experiment.budget_usd is not None:
        # A run's budget has four places (core.bounds); below the smallest, the next check
        # stops the experiment anyway.
        usd = max((experiment.budget_usd - cost).quantize(_CENTICENT, ROUND_DOWN), _CENTICENT)
    return _Left(
        usd=usd,
        tokens=None if experiment.budget_tokens is None else experiment.budget_tokens - tokens,
    )


def _stop(experiment: Experiment, slots: list[ExperimentRun], status: str, reason: str) -> None:
    for slot in slots:
        if slot.run is not None and slot.passed is None:
            run = Run.objects.select_for_update().get(pk=slot.run.pk)
            if not run.is_finished:
                run_end(run, RunStatus.CANCELLED, f"The experiment stopped: {reason}")
            # Left unchecked, so not counted: its run was cut short by the stop, not by itself.
            slot.checks = [[False, f"not counted: {reason}"]]
            slot.save(update_fields=["checks"])
    experiment.status = status
    experiment.stop_reason = reason
    experiment.finished_at = timezone.now()
    experiment.save(update_fields=["status", "stop_reason", "finished_at"])
