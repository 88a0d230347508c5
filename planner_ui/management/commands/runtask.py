"""`manage.py runtask "TASK"`: submit a task through the same services as the browser, wait,
print the outcome. Beside a running `make run` it uses that Redis and its workers; alone it
brings up an embedded Redis and a worker of its own for the duration."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentsite import embedded
from planner_ui.core.outcome import RunOutcome
from planner_ui.core.pricing import dollars
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.management.stack import bring_up_what_is_missing
from planner_ui.models import Run
from planner_ui.selectors.run_json import run_json
from planner_ui.services.runs import RunInputError, run_approve_plan, run_create

# The exit status says how the run ended, so a script can tell lost work from a clean run.
EXIT_CODES: dict[RunOutcome, int] = {
    RunOutcome.SUCCEEDED: 0,
    RunOutcome.FAILED: 1,
    RunOutcome.CANCELLED: 1,
    # Not 2: argparse exits with 2 on a usage error.
    RunOutcome.SUCCEEDED_WITH_WARNINGS: 3,
}


class Command(BaseCommand):
    help = (
        "Submit a task, wait for its run to end, and print the outcome. Exits 0 when the run "
        "succeeded, 3 when it succeeded with warnings (a call rejected, a step skipped or "
        "re-planned around, an outcome unknown), 1 when it failed, was cancelled or timed out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task", help="The task for the planner, in quotes.")
        parser.add_argument(
            "--auto-approve",
            action="store_true",
            help="Accepted for compatibility: runtask always approves the plan it submits.",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument(
            "--policy",
            choices=["ask", "auto", "dry_run"],
            default="ask",
            help="Irreversible calls: ask a person (in the browser), run the --auto-tool ones "
            "without asking, or record them without performing any (default: ask).",
        )
        parser.add_argument(
            "--auto-tool",
            action="append",
            default=[],
            metavar="TOOL",
            help="With --policy auto, an irreversible tool to run without asking (repeatable).",
        )
        parser.add_argument(
            "--route",
            action="append",
            default=[],
            metavar="PART=PROVIDER:MODEL",
            help="Model for one part: planner, executor, executor:<role> or synthesizer "
            "(repeatable), e.g. --route executor=openai:qwen3:8b.",
        )
        parser.add_argument(
            "--budget-tokens",
            type=int,
            default=settings.AGENTSITE_DEFAULT_BUDGET_TOKENS,
            help="Stop the run once it has used this many tokens.",
        )
        parser.add_argument(
            "--budget-usd",
            type=Decimal,
            default=settings.AGENTSITE_DEFAULT_BUDGET_USD,
            help="Stop the run once it has cost this many dollars.",
        )
        parser.add_argument("--user", default="demo", help="Owner of the run (default: demo).")
        parser.add_argument("--timeout", type=float, default=600.0, help="Seconds to wait.")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        owned = bring_up_what_is_missing(self.stderr, "runtask", "task")
        try:
            run = self._submit(options)
            run = self._wait(run, options)
        finally:
            embedded.stop_processes(owned)
        wall_s = time.monotonic() - started
        if options["json"]:
            report = {**run_json(run), "wall_s": round(wall_s, 3)}
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self._print_human(run, wall_s)
        code = EXIT_CODES[RunOutcome(run.outcome)] if run.outcome else 1
        if code:
            raise SystemExit(code)

    def _submit(self, options: dict[str, Any]) -> Run:
        user, _ = get_user_model().objects.get_or_create(username=options["user"])
        try:
            run = run_create(
                owner=user,
                options=RunOptions(
                    task=options["task"],
                    auto_approve=options["auto_approve"],
                    routes=_routes(options["route"]),
                    budget_tokens=options["budget_tokens"],
                    budget_usd=Decimal(options["budget_usd"]) if options["budget_usd"] else None,
                    tool_policy=options["policy"],
                    auto_tools=options["auto_tool"],
                ),
            )
        except RunInputError as exc:
            raise CommandError(str(exc)) from exc
        if not options["json"]:
            self.stderr.write(f"Run {run.pk} submitted; planning…")
        return run

    def _wait(self, run: Run, options: dict[str, Any]) -> Run:
        deadline = time.monotonic() + options["timeout"]
        approved = False
        announced: set[int] = set()
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.is_finished:
                return run
            for approval in run.approvals.filter(state="pending").exclude(pk__in=announced):
                announced.add(approval.pk)
                self.stderr.write(
                    f"Run {run.pk} waits for a person to approve {approval.tool} in step "
                    f"{approval.step_id}: decide on the run's page or under /approvals/."
                )
            if run.status == RunStatus.AWAITING_PLAN_APPROVAL and not approved:
                # Asking for a run from the command line is the approval of its plan.
                run_approve_plan(run.pk)
                approved = True
            time.sleep(0.2)
        raise CommandError(f"Run {run.pk} did not finish within {options['timeout']} s.")

    def _print_human(self, run: Run, wall_s: float) -> None:
        reason = f" ({run.outcome_reason})" if run.outcome_reason else ""
        self.stdout.write(f"Run {run.pk}: {run.shown_status_label}{reason} in {wall_s:.1f} s")
        for s in run.steps.all():
            self.stdout.write(
                f"  [{s.status}] {s.step_id} ({s.role}){': ' + s.error if s.error else ''}"
            )
        if run.error:
            self.stdout.write(f"Error: {run.error}")
        for warning in run.warnings:
            self.stdout.write(f"Warning: {warning}")
        if run.result:
            self.stdout.write("\n" + run.result)
        self.stdout.write(
            f"\n{run.model_calls} model calls, {run.tokens_in} tokens in, {run.tokens_out} out, "
            f"{dollars(run.cost_usd, 4)}"
        )


def _routes(values: list[str]) -> dict[str, str]:
    routes = {}
    for value in values:
        part, sep, route = value.partition("=")
        if not sep or not part.strip():
            raise CommandError(f"--route {value!r}: write PART=PROVIDER:MODEL")
        routes[part.strip()] = route.strip()
    return routes
