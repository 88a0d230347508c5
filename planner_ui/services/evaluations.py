"""Suites and experiments: storing a person's suites, starting an experiment's slots as
ordinary runs on the workers, checking each run as it ends, and stopping at the budget.

An experiment advances in one place, `experiment_advance`, under its row lock: the end of each
of its runs asks for it (services.scheduler), and so does every sweep, so a lost message or a
dead worker only delays it. A slot gets its run in the transaction that creates the run, and
is checked when its run ends: once, and again only if a person retried the run and it ended
anew (the slot's result follows the run; it still counts once).

A judge check is a model call: it is made before the lock is taken, on the worker that
advances, under a lease per slot (a dead worker's lease lapses and the next advance judges
again), and its verdicts wait on the slot for the check. Its calls are added to the slot's own
judging figures, never to the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
from django.utils import timezone
from pydantic import TypeAdapter, ValidationError

from planner_ui.agents.judge import judge
from planner_ui.core import pricing
from planner_ui.core.bounds import TokenBudget, UsdBudget
from planner_ui.core.effects import PolicyMode
from planner_ui.core.errors import InvalidTransition, ProviderError
from planner_ui.core.evaluation import (
    JUDGE_ERROR,
    MAX_REPEAT,
    Arm,
    ArmKind,
    CheckResult,
    EvaluationError,
    Suite,
    arms_check,
    check_run,
    checks_pass,
    judge_checks,
    suite_load,
)
from planner_ui.core.routing import SYNTHESIZER, RouteError, parse_route
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import EvaluationSuite, Experiment, ExperimentRun, Run
from planner_ui.providers.base import Provider
from planner_ui.providers.metered import CallRecord, MeteredProvider

from .accounting import BUDGET_STOPPED, price_of
from .baselines import single_agent_create
from .leases import task_lease
from .providers import check_available, provider_build, routes_for_run
from .runs import RunInputError, run_create, run_pause, run_resume
from .scheduler import run_end
from .sender import TaskName, task_send, task_send_now

MAX_CONCURRENCY = 16


def suite_save(owner: User, content: str, suite: EvaluationSuite | None = None) -> EvaluationSuite:
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
    owner: User,
    suite: Suite,
    arms: Sequence[Arm],
    *,
    repeat: int = 1,
    concurrency: int = 2,
    budget_usd: Decimal | None = None,
    budget_tokens: int | None = None,
    tool_policy: str = PolicyMode.DRY_RUN,
    suite_row: EvaluationSuite | None = None,
    judge: str = "",
) -> Experiment:
    """Make the experiment and all its slots, and have a worker start the first ones.
    `judge` is the route of the model judging the suite's judge checks (else the suite's)."""
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
    judge_route = _judge_route(suite, judge)
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
            judge_route=judge_route,
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


def _judge_route(suite: Suite, chosen: str) -> str:
    """The judge's route, as its label: the experiment's choice, the suite's, the settings'
    judge, else their synthesizer's (one judge for every arm, whatever the arms' routes).
    Empty when the suite has no judge check."""
    if not any(judge_checks(task) for task in suite.tasks):
        return ""
    try:
        label = chosen.strip() or suite.judge.strip() or settings.AGENTSITE_JUDGE_MODEL.strip()
        if not label:
            label = routes_for_run(check=False)[SYNTHESIZER].label
        route = parse_route(label, settings.AGENTSITE_PROVIDER)
        check_available(route)
    except RouteError as exc:
        raise EvaluationError(f"Judge: {exc}") from None
    return route.label


def _within(name: str, bound: object, value: object) -> None:
    """The database's columns hold budgets only so big and so fine (core.bounds)."""
    if value is None:
        return
    try:
        TypeAdapter(bound).validate_python(value)
    except ValidationError as exc:
        raise EvaluationError(f"{name}: {exc.errors()[0]['msg']}.") from None


def advance_enqueue(experiment_id: int) -> None:
    """Have a worker advance the experiment once the transaction commits."""
    task_send(TaskName.EXPERIMENT_ADVANCE, experiment_id)


def experiment_advance(experiment_id: int, *, judging: bool = True) -> Experiment:
    """Judge and check the slots whose run ended, stop at the budget, start slots up to the
    concurrency limit, and close the experiment when every slot is checked. Safe to call any
    time; on a finished experiment it only checks again the runs a person retried. Without
    `judging` (a caller that is not a worker), a slot waiting for its judge waits on."""
    if judging:
        _judge_ended(experiment_id)
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        suite = Suite.model_validate(experiment.suite_snapshot)
        slots = list(experiment.slots.select_related("run"))
        for slot in slots:
            if _to_check(experiment, slot) and _judged(slot, suite):
                _check_slot(slot, suite)
        if experiment.is_finished:
            return experiment
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


def experiment_pause(experiment_id: int, user: User) -> Experiment:
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


def experiment_resume(experiment_id: int, user: User) -> Experiment:
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


def experiment_cancel(experiment_id: int, user: User) -> Experiment:
    """Start nothing more and cancel the runs still going; what ended stays counted."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if not experiment.is_finished:
            slots = list(experiment.slots.select_related("run"))
            reason = f"Cancelled by {user.get_username()}."
            _stop(experiment, slots, Experiment.Status.CANCELLED, reason)
    return experiment


def experiments_advance_running() -> int:
    """Ask for every experiment to advance that has something to do: the sweep's part (a run's
    end whose message was lost, a worker that died while it advanced or judged)."""
    ids = experiments_to_advance()
    for experiment_id in ids:
        task_send_now(TaskName.EXPERIMENT_ADVANCE, experiment_id)
    return len(ids)


def experiments_to_advance() -> list[int]:
    """The running experiments, and the finished ones with a counted run that ended anew."""
    re_ended = ExperimentRun.objects.filter(
        passed__isnull=False, run__finished_at__isnull=False
    ).exclude(checked_end=F("run__finished_at"))
    return list(
        Experiment.objects.filter(
            Q(status=Experiment.Status.RUNNING) | Q(pk__in=re_ended.values("experiment_id"))
        ).values_list("pk", flat=True)
    )


def _to_check(experiment: Experiment, slot: ExperimentRun) -> bool:
    """Whether the slot's run ended and that end was not checked: a run going for the first
    time while the experiment runs, or a counted one a person retried that ended again."""
    run = slot.run
    if run is None or not run.is_finished:
        return False
    if slot.passed is None:
        # Once the experiment is over, a slot never counted stays so (the stop cut it short).
        return not experiment.is_finished
    return slot.checked_end != run.finished_at


def _judged(slot: ExperimentRun, suite: Suite) -> bool:
    """Whether the judge's verdicts on this end of the run are in (or none are needed)."""
    assert slot.run is not None
    task = suite.tasks[slot.task_index]
    return not judge_checks(task) or slot.judged_end == slot.run.finished_at


def _check_slot(slot: ExperimentRun, suite: Suite) -> None:
    run = slot.run
    assert run is not None
    judged = [CheckResult(passed, detail) for passed, detail in slot.judged or []]
    results = check_run(suite.tasks[slot.task_index], run.result, _files(run), judged)
    if slot.passed is not None:
        slot.rechecks += 1  # its run was retried and ended again: the slot follows it
    slot.checks = [[r.passed, r.detail] for r in results]
    slot.passed = run.status == RunStatus.SUCCEEDED and checks_pass(results)
    slot.checked_end = run.finished_at
    slot.save(update_fields=["checks", "passed", "checked_end", "rechecks"])


def _files(run: Run) -> dict[str, bytes]:
    return {f.path: bytes(f.content) for f in run.files.all()}


# --- the judge ----------------------------------------------------------------------------


def _judge_ended(experiment_id: int) -> None:
    """Have the judge give its verdicts on the runs that ended and are still to be checked.
    Outside any transaction: a judge's call may take a minute, and holds no lock meanwhile."""
    experiment = Experiment.objects.get(pk=experiment_id)
    if not experiment.judge_route:
        return
    suite = Suite.model_validate(experiment.suite_snapshot)
    for slot in experiment.slots.select_related("run"):
        if _to_check(experiment, slot) and not _judged(slot, suite):
            with task_lease("judge", slot.pk) as mine:
                if mine:  # else a live worker is judging it: its advance checks it after
                    _judge_slot(experiment, slot, suite)


def _judge_slot(experiment: Experiment, slot: ExperimentRun, suite: Suite) -> None:
    # Judged by another worker between the read and the lease: nothing left to do.
    judged_end, run_end_at = ExperimentRun.objects.filter(pk=slot.pk).values_list(
        "judged_end", "run__finished_at"
    )[0]
    if run_end_at is None or judged_end == run_end_at:
        return
    assert slot.run_id is not None  # it ended (above), so it was started
    run = Run.objects.get(pk=slot.run_id)
    task = suite.tasks[slot.task_index]
    checks = judge_checks(task)
    if run.status != RunStatus.SUCCEEDED:
        # The slot fails whatever the judge would say: no call is worth paying for.
        results = [CheckResult(False, "not judged: its run did not succeed") for _ in checks]
    else:
        try:
            provider = _judge_provider(experiment.judge_route, slot.pk)
        except (ProviderError, RouteError) as exc:
            results = [CheckResult(False, f"{JUDGE_ERROR}: no judge: {exc}") for _ in checks]
        else:
            files = _files(run)
            results = [judge(provider, task.task, check, run.result, files) for check in checks]
    ExperimentRun.objects.filter(pk=slot.pk).update(
        judged=[[r.passed, r.detail] for r in results], judged_end=run.finished_at
    )


def _judge_provider(label: str, slot_id: int) -> Provider:
    """The judge's model, each call added to the slot's judging figures (not to its run's)."""
    route = parse_route(label, settings.AGENTSITE_PROVIDER)
    inner = provider_build(route)

    def record(call: CallRecord) -> None:
        usage = call.usage
        price = price_of(call.provider, call.model, inner.model)
        cost = pricing.call_cost(usage, price) if price is not None else Decimal(0)
        ExperimentRun.objects.filter(pk=slot_id).update(
            judge_calls=F("judge_calls") + 1,
            judge_tokens_in=F("judge_tokens_in") + usage.input_tokens,
            judge_tokens_out=F("judge_tokens_out") + usage.output_tokens,
            judge_cost_usd=F("judge_cost_usd") + cost,
        )

    return MeteredProvider(inner, gate=lambda request: None, record=record)


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
    """What its runs and its judge spent: the budget covers both."""
    spent = Run.objects.filter(experiment_slot__experiment=experiment).aggregate(
        cost=Sum("cost_usd"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")
    )
    judging = experiment.slots.aggregate(
        cost=Sum("judge_cost_usd"),
        tokens_in=Sum("judge_tokens_in"),
        tokens_out=Sum("judge_tokens_out"),
    )
    cost = (spent["cost"] or Decimal(0)) + (judging["cost"] or Decimal(0))
    tokens = sum(
        figures[key] or 0 for figures in (spent, judging) for key in ("tokens_in", "tokens_out")
    )
    return cost, tokens


def _over_budget(experiment: Experiment) -> str:
    if experiment.budget_usd is None and experiment.budget_tokens is None:
        return ""
    cost, tokens = _spent(experiment)
    if experiment.budget_usd is not None and cost >= experiment.budget_usd:
        return f"Budget spent: ${cost:.4f} of ${experiment.budget_usd:.4f}."
    if experiment.budget_tokens is not None and tokens >= experiment.budget_tokens:
        return f"Budget spent: {tokens} tokens of {experiment.budget_tokens}."
    # A run's budget is what was left of the experiment's when it started: a run that it
    # stopped found the rest too small for its next call, and the next run would too.
    stopped = Run.objects.filter(
        experiment_slot__experiment=experiment,
        status=RunStatus.FAILED,
        error__startswith=BUDGET_STOPPED,
    ).exists()
    if not stopped:
        return ""
    if experiment.budget_usd is not None:
        spent = f"${cost:.4f} of ${experiment.budget_usd:.4f}"
    else:
        spent = f"{tokens} tokens of {experiment.budget_tokens}"
    return f"Budget spent: {spent}; what is left pays for no further call."


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
