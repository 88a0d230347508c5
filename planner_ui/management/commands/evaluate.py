"""`manage.py evaluate SUITE --arms agent,plan --repeat N`: run a suite as an experiment on the
workers, show its progress, print the figures per arm with their ratios, and exit non-zero when
a threshold the person set is missed. For CI and scripts; the same experiment is on its page."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentsite import embedded
from planner_ui.core.evaluation import (
    MAX_REPEAT,
    RATIO_FIGURES,
    Arm,
    ArmFigures,
    EvaluationError,
    Suite,
    arm_parse,
    shipped_suites,
    suite_load,
)
from planner_ui.core.pricing import dollars
from planner_ui.management.stack import bring_up_what_is_missing
from planner_ui.models import EvaluationSuite, Experiment
from planner_ui.selectors.evaluations import Results, experiment_results
from planner_ui.services.evaluations import experiment_advance, experiment_create

# Not 2: argparse exits with 2 on a usage error.
EXIT_THRESHOLD_MISSED = 1
EXIT_NOT_FINISHED = 4
# The command asks the experiment to advance itself this often, beside the runs' ends and the
# sweep: a message lost on the way costs seconds, not the sweep's period.
ADVANCE_EVERY_S = 5.0


class Command(BaseCommand):
    help = (
        "Run a suite (a shipped one, one of the user's, or a YAML/JSON file) in arms and print "
        "success rate with its 95% Wilson interval, model calls, tokens, cost and wall time per "
        "arm, and each arm's ratios to the first. Exits 0 when every threshold is met, 1 when "
        "one is missed, 4 when the experiment stopped (budget) or did not finish in time."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "suite", help="A shipped suite (parallel, sequential), one of yours, or a file."
        )
        parser.add_argument(
            "--arms",
            default="agent,plan",
            help="Comma-separated: plan (planner-executor) and agent (single agent); the first "
            "is what the others are compared with (default: agent,plan).",
        )
        parser.add_argument(
            "--arm",
            action="append",
            default=[],
            metavar="NAME=KIND[,PART=PROVIDER:MODEL]",
            help="One more arm with its own models, e.g. small=plan,executor=openai:qwen3:8b "
            "(repeatable).",
        )
        parser.add_argument(
            "--repeat", type=int, default=1, help=f"Runs per task (1-{MAX_REPEAT})."
        )
        parser.add_argument("--concurrency", type=int, default=2, help="Runs at once.")
        parser.add_argument("--budget-usd", type=Decimal, help="Stop once this much is spent.")
        parser.add_argument("--budget-tokens", type=int, help="Stop once this many are used.")
        parser.add_argument(
            "--policy",
            choices=["dry_run", "ask"],
            default="dry_run",
            help="Irreversible calls: record without performing (default), or ask a person.",
        )
        parser.add_argument(
            "--min-success",
            type=float,
            metavar="RATE",
            help="Exit 1 unless every arm's success rate reaches this (0-1).",
        )
        parser.add_argument(
            "--max-cost", type=Decimal, metavar="USD", help="Exit 1 if the experiment cost more."
        )
        parser.add_argument(
            "--judge",
            default="",
            metavar="PROVIDER:MODEL",
            help="The model judging the suite's judge checks (default: the suite's, else "
            "AGENTSITE_JUDGE_MODEL, else the synthesizer's).",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--user", default="demo", help="Owner of the runs (default: demo).")
        parser.add_argument("--timeout", type=float, default=1800.0, help="Seconds to wait.")

    def handle(self, *args: Any, **options: Any) -> None:
        user, _ = get_user_model().objects.get_or_create(username=options["user"])
        suite, row = self._suite(options["suite"], user)
        arms = self._arms(options)
        owned = bring_up_what_is_missing(self.stderr, "evaluate", "experiment")
        try:
            try:
                experiment = experiment_create(
                    user,
                    suite,
                    arms,
                    repeat=options["repeat"],
                    concurrency=options["concurrency"],
                    budget_usd=options["budget_usd"],
                    budget_tokens=options["budget_tokens"],
                    tool_policy=options["policy"],
                    suite_row=row,
                    judge=options["judge"],
                )
            except EvaluationError as exc:
                raise CommandError(str(exc)) from exc
            experiment = self._wait(experiment, options["timeout"])
        finally:
            embedded.stop_processes(owned)
        results = experiment_results(experiment)
        missed = thresholds_missed(results, options["min_success"], options["max_cost"])
        if options["json"]:
            report = {**results.as_dict(), "thresholds_missed": missed}
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write(results_table(results))
            for line in missed:
                self.stdout.write(f"Threshold missed: {line}")
        if not experiment.status == Experiment.Status.FINISHED:
            raise SystemExit(EXIT_NOT_FINISHED)
        if missed:
            raise SystemExit(EXIT_THRESHOLD_MISSED)

    def _suite(self, name: str, user: Any) -> tuple[Suite, EvaluationSuite | None]:
        """A file if one is there, else the user's suite of that name, else a shipped one."""
        path = Path(name)
        row = None
        if path.is_file():
            text = path.read_text(encoding="utf-8")
        elif row := EvaluationSuite.objects.filter(owner=user, name=name).first():
            text = row.content
        elif name in (shipped := shipped_suites()):
            text = shipped[name]
        else:
            known = ", ".join(sorted(shipped))
            raise CommandError(
                f"No suite {name!r}: give a file, one of your suites, or a shipped one ({known})."
            )
        try:
            return suite_load(text), row
        except EvaluationError as exc:
            raise CommandError(f"Suite {name}: {exc}") from exc

    def _arms(self, options: dict[str, Any]) -> list[Arm]:
        given = [a for a in options["arms"].split(",") if a.strip()] + options["arm"]
        try:
            return [arm_parse(text) for text in given]
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc

    def _wait(self, experiment: Experiment, timeout: float) -> Experiment:
        deadline = time.monotonic() + timeout
        next_advance = time.monotonic() + ADVANCE_EVERY_S
        shown = ""
        # On a terminal the bar redraws in place; in a CI log each change is a line of its own.
        in_place = self.stderr.isatty()
        while time.monotonic() < deadline:
            experiment.refresh_from_db()
            line = progress_line(experiment)
            if line != shown:
                self.stderr.write(
                    ("\r" + line) if in_place else line, ending="" if in_place else "\n"
                )
                shown = line
            if experiment.is_finished:
                if in_place:
                    self.stderr.write("")
                return experiment
            if time.monotonic() >= next_advance:
                # The workers judge: this process only nudges, and makes no model call.
                experiment = experiment_advance(experiment.pk, judging=False)
                next_advance = time.monotonic() + ADVANCE_EVERY_S
            time.sleep(0.2)
        raise CommandError(f"Experiment {experiment.pk} did not finish within {timeout} s.")


def progress_line(experiment: Experiment) -> str:
    """One line a person or a CI log can follow: a bar, slots checked, runs going."""
    slots = list(experiment.slots.values_list("passed", "run_id"))
    checked = sum(1 for passed, _ in slots if passed is not None)
    going = sum(1 for passed, run in slots if passed is None and run is not None)
    width = 20
    filled = round(width * checked / len(slots)) if slots else width
    bar = "#" * filled + "." * (width - filled)
    return (
        f"[{bar}] {checked}/{len(slots)} runs checked, {going} running "
        f"(experiment {experiment.pk}, {experiment.get_status_display()})"
    )


def thresholds_missed(
    results: Results, min_success: float | None, max_cost: Decimal | None
) -> list[str]:
    missed = []
    if min_success is not None:
        for figures in results.arms:
            rate = figures.success_rate
            if rate is None or rate < min_success:
                shown = "no run" if rate is None else f"{rate:.0%}"
                missed.append(f"arm {figures.arm} succeeded {shown}, below {min_success:.0%}")
    if max_cost is not None:
        cost = sum((figures.cost_usd for figures in results.arms), Decimal(0))
        if cost > max_cost:
            missed.append(
                f"the experiment cost {dollars(cost, 4)}, above the {dollars(max_cost)} set"
            )
    return missed


def results_table(results: Results) -> str:
    experiment = results.experiment
    reason = f" ({experiment.stop_reason})" if experiment.stop_reason else ""
    lines = [
        f"Experiment {experiment.pk} on suite {experiment.suite_name}: "
        f"{experiment.get_status_display()}{reason}, {results.checked}/{results.total} runs "
        f"checked, each task {experiment.repeat}×.",
        "",
    ]
    header = (
        "arm",
        "success",
        "95% CI",
        "calls",
        "tokens in",
        "tokens out",
        "cost",
        "wall s",
        "critical s",
    )
    rows = [header] + [_arm_row(figures) for figures in results.arms]
    lines += _aligned(rows)
    if len(results.arms) > 1:
        reference = results.arms[0].arm
        lines += ["", f"Per run, each arm ÷ {reference}:"]
        ratio_rows = [("arm", "success", "calls", "tokens", "cost", "wall", "critical")]
        for figures in results.arms[1:]:
            ratio_rows.append(
                (figures.arm, *(_times(figures.ratios[name]) for name in RATIO_FIGURES))
            )
        lines += _aligned(ratio_rows)
    if experiment.judge_route:
        lines += ["", f"Judging by {experiment.judge_route}, apart from the figures above:"]
        judge_rows = [("arm", "calls", "tokens", "cost")]
        for figures in results.arms:
            judge_rows.append(
                (
                    figures.arm,
                    str(figures.judge_calls),
                    str(figures.judge_tokens),
                    dollars(figures.judge_cost_usd, 4),
                )
            )
        lines += _aligned(judge_rows)
    lines += ["", "Per task (✓ passed, ✗ failed, · not counted):"]
    task_rows = [("task", *results.arm_names)]
    for row in results.tasks:
        task_rows.append(
            (
                row.task.id,
                *(
                    " ".join(f"{_mark(s.passed)}{s.run_id or '-'}" for s in slots)
                    for _, slots in row.cells
                ),
            )
        )
    lines += _aligned(task_rows)
    return "\n".join(lines)


def _arm_row(figures: ArmFigures) -> tuple[str, ...]:
    low, high = figures.interval
    rate = figures.success_rate
    return (
        figures.arm,
        f"{figures.successes}/{figures.runs}" + (f" {rate:.0%}" if rate is not None else ""),
        f"{low:.0%}–{high:.0%}",
        str(figures.model_calls),
        str(figures.tokens_in),
        str(figures.tokens_out),
        dollars(figures.cost_usd, 4),
        f"{figures.wall_s:.1f}",
        f"{figures.critical_path_s:.1f}",
    )


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _mark(passed: bool | None) -> str:
    return {True: "✓", False: "✗", None: "·"}[passed]


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
