"""Reads for suites and experiments: a person's own only, and an experiment's results computed
from its runs' own stored accounting (the same figures their run pages show)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from planner_ui.core.evaluation import (
    ArmFigures,
    SlotFigures,
    Suite,
    SuiteTask,
    arms_figures,
    critical_path_s,
)
from planner_ui.core.evaluation_plots import Plot, success_against_cost, wall_time_per_task
from planner_ui.models import EvaluationSuite, Experiment, ExperimentRun, Step


def suite_list_for_user(user: User) -> QuerySet[EvaluationSuite]:
    return EvaluationSuite.objects.filter(owner=user).order_by("name")


def suite_get_for_user(user: User, suite_id: int) -> EvaluationSuite:
    """The user's suite, or 404: another user's is indistinguishable from a missing one."""
    return get_object_or_404(EvaluationSuite, pk=suite_id, owner=user)


def experiment_list_for_user(user: User) -> QuerySet[Experiment]:
    return Experiment.objects.filter(owner=user).order_by("-created_at", "-id")


def experiment_get_for_user(user: User, experiment_id: int) -> Experiment:
    return get_object_or_404(Experiment, pk=experiment_id, owner=user)


@dataclass
class TaskRow:
    index: int
    task: SuiteTask
    # Per arm, in the arms' order: the task's slots, one per repetition.
    cells: list[tuple[str, list[ExperimentRun]]] = field(default_factory=list)


@dataclass
class Results:
    experiment: Experiment
    arms: list[ArmFigures]
    tasks: list[TaskRow]
    checked: int  # slots whose run ended and was checked
    total: int

    @property
    def arm_names(self) -> list[str]:
        return [figures.arm for figures in self.arms]

    def as_dict(self) -> dict[str, Any]:
        experiment = self.experiment
        return {
            "experiment": experiment.pk,
            "suite": experiment.suite_name,
            "status": experiment.status,
            "paused": experiment.paused_at is not None,
            "stop_reason": experiment.stop_reason,
            "repeat": experiment.repeat,
            "judge": experiment.judge_route,
            "checked": self.checked,
            "total": self.total,
            "arms": [figures.as_dict() for figures in self.arms],
            "tasks": [
                {
                    "id": row.task.id,
                    "task": row.task.task,
                    "arms": {arm: [_slot_dict(slot) for slot in slots] for arm, slots in row.cells},
                }
                for row in self.tasks
            ],
        }


def _slot_dict(slot: ExperimentRun) -> dict[str, Any]:
    run = slot.run
    return {
        "repetition": slot.repetition,
        "run": slot.run_id,
        "passed": slot.passed,
        "checks": slot.checks,
        "outcome": run.outcome if run else "",
        "model_calls": run.model_calls if run else 0,
        "tokens_in": run.tokens_in if run else 0,
        "tokens_out": run.tokens_out if run else 0,
        "cost_usd": str(run.cost_usd) if run else "0",
        "wall_s": round(wall_seconds(slot), 3),
        # Checked again since: a person retried its run and it ended anew.
        "rechecks": slot.rechecks,
        "judging": {
            "model_calls": slot.judge_calls,
            "tokens": slot.judge_tokens_in + slot.judge_tokens_out,
            "cost_usd": str(slot.judge_cost_usd),
        },
    }


def wall_seconds(slot: ExperimentRun) -> float:
    """From the run's creation (its planning included) to its end; 0 before it ends."""
    run = slot.run
    if run is None or run.finished_at is None:
        return 0.0
    return (run.finished_at - run.created_at).total_seconds()


def _critical_paths(run_ids: list[int]) -> dict[int, float]:
    """Each run's measured critical path in seconds, from its steps in one query."""
    steps: dict[int, dict[str, tuple[list[str], float]]] = defaultdict(dict)
    rows = Step.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "step_id", "depends_on", "started_at", "finished_at"
    )
    for run_id, step_id, depends_on, started_at, finished_at in rows:
        spent = (finished_at - started_at).total_seconds() if started_at and finished_at else 0.0
        steps[run_id][step_id] = (depends_on, spent)
    return {run_id: critical_path_s(found) for run_id, found in steps.items()}


def experiment_results(experiment: Experiment) -> Results:
    """Figures per arm over the checked slots, and the task rows with every slot's run."""
    suite = Suite.model_validate(experiment.suite_snapshot)
    arm_names = [arm["name"] for arm in experiment.arms]
    slots = list(experiment.slots.select_related("run").order_by("task_index", "repetition"))
    checked = [s for s in slots if s.passed is not None]
    paths = _critical_paths([s.run_id for s in checked if s.run_id])
    figures = arms_figures(
        arm_names,
        (
            SlotFigures(
                arm=s.arm,
                task_id=suite.tasks[s.task_index].id,
                repetition=s.repetition,
                run_id=s.run_id or 0,
                succeeded=bool(s.passed),
                model_calls=s.run.model_calls if s.run else 0,
                tokens_in=s.run.tokens_in if s.run else 0,
                tokens_out=s.run.tokens_out if s.run else 0,
                tokens_cached=s.run.tokens_cache_read if s.run else 0,
                cost_usd=s.run.cost_usd if s.run else Decimal(0),
                wall_s=wall_seconds(s),
                critical_path_s=paths.get(s.run_id or 0, 0.0),
                judge_calls=s.judge_calls,
                judge_tokens=s.judge_tokens_in + s.judge_tokens_out,
                judge_cost_usd=s.judge_cost_usd,
            )
            for s in checked
        ),
    )
    rows = []
    for index, task in enumerate(suite.tasks):
        mine = [s for s in slots if s.task_index == index]
        rows.append(
            TaskRow(index, task, [(arm, [s for s in mine if s.arm == arm]) for arm in arm_names])
        )
    return Results(experiment, figures, rows, checked=len(checked), total=len(slots))


def results_plots(results: Results) -> dict[str, Plot]:
    """The two plots of the results page: success against cost, wall time per task per arm
    (the mean over each arm's counted runs of the task)."""
    seconds: dict[tuple[str, str], float] = {}
    for row in results.tasks:
        for arm, slots in row.cells:
            counted = [wall_seconds(s) for s in slots if s.passed is not None and s.run_id]
            if counted:
                seconds[(row.task.id, arm)] = sum(counted) / len(counted)
    return {
        "cost_plot": success_against_cost(results.arms),
        "wall_plot": wall_time_per_task(
            [row.task.id for row in results.tasks], results.arm_names, seconds
        ),
    }
