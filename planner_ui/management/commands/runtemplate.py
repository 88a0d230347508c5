"""`manage.py runtemplate NAME --param k=v`: run a plan template from the shell, through the same
services as its page. It waits and prints the outcome like runtask (whose bring-up, wait and
report it shares); with --no-wait it only prints the new run's id and page."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.urls import reverse

from planner_ui.core.errors import PlanValidationError
from planner_ui.core.run_options import RunOptions
from planner_ui.core.templates import ParameterError
from planner_ui.models import PlanTemplate, PlanTemplateVersion, Run
from planner_ui.selectors.templates import template_get_by_name, template_version
from planner_ui.services.runs import RunInputError
from planner_ui.services.templates import template_run

from .runtask import Command as RunTask
from .runtask import _routes


class Command(RunTask):
    help = (
        "Run a plan template (yours, or a shared one) with --param NAME=VALUE for each of its "
        "parameters, wait for the run to end and print the outcome; exit codes as runtask's. "
        "The planner is skipped: the plan is the template's, filled in, and this command "
        "approves it as runtask approves its plan."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        # The positional "task" of runtask is the template's name here.
        for action in parser._actions:
            if action.dest == "task":
                action.help = "The template's name, in quotes if it has spaces."
                action.metavar = "NAME"
        parser.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="A value for one parameter (repeatable); a parameter left out takes its default.",
        )
        parser.add_argument(
            "--template-version",
            type=int,
            default=None,
            metavar="N",
            help="Run this version of the template (default: the latest).",
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="Submit, print the run's id and page, and return without waiting or "
            "approving: the plan waits for a person on the run's page.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_wait"]:
            super().handle(*args, **options)
            return
        run = self._submit(options)
        url = reverse("run_detail", args=[run.pk])
        if options["json"]:
            self.stdout.write(json.dumps({"run_id": run.pk, "url": url, "status": run.status}))
        else:
            self.stdout.write(f"Run {run.pk} ({run.get_status_display()}): {url}")

    def _submit(self, options: dict[str, Any]) -> Run:
        user, _ = get_user_model().objects.get_or_create(username=options["user"])
        name = options["task"]
        try:
            template = template_get_by_name(user, name)
            version = template_version(template, options["template_version"])
        except PlanTemplate.DoesNotExist as exc:
            raise CommandError(f"No template {name!r} for {user.get_username()}: {exc}") from None
        except PlanTemplateVersion.DoesNotExist:
            wanted = options["template_version"]
            raise CommandError(f"Template {name!r} has no version {wanted}.") from None
        try:
            run = template_run(
                version=version,
                user=user,
                values=_params(options["param"]),
                options=RunOptions(
                    task="",
                    auto_approve=options["auto_approve"] and not options["no_wait"],
                    routes=_routes(options["route"]),
                    budget_tokens=options["budget_tokens"],
                    budget_usd=Decimal(options["budget_usd"]) if options["budget_usd"] else None,
                    tool_policy=options["policy"],
                    auto_tools=options["auto_tool"],
                ),
                trigger=Run.Trigger.COMMAND,
            )
        except ParameterError as exc:
            lines = [
                f"  --param {n}: {why}" if n else f"  {why}" for n, why in exc.problems.items()
            ]
            raise CommandError("Refused values:\n" + "\n".join(lines)) from exc
        except (PlanValidationError, RunInputError) as exc:
            raise CommandError(str(exc)) from exc
        if not options["json"] and not options["no_wait"]:
            self.stderr.write(
                f"Run {run.pk} submitted from template {template.name} v{version.number}."
            )
        return run


def _params(values: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for value in values:
        name, sep, given = value.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--param {value!r}: write NAME=VALUE")
        if name.strip() in params:
            raise CommandError(f"--param {name.strip()} is given twice")
        params[name.strip()] = given
    return params
