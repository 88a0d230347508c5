"""`manage.py prune_runs --older-than 30d`: delete finished runs that ended before then, with
everything they hold (plan versions, steps, events, model calls, approvals, receipts, files).
Runs that have not finished are never touched."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from planner_ui.core.status import TERMINAL_RUN_STATUSES
from planner_ui.models import ModelCall, Run, RunEvent, RunFile, Step

UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_age(text: str) -> timedelta:
    """'30d', '12h' or '90m'."""
    match = re.fullmatch(r"\s*(\d+)\s*([dhm])\s*", text)
    if match is None:
        raise CommandError(
            f"--older-than {text!r}: write a whole number and a unit, d (days), h (hours) or "
            "m (minutes), e.g. 30d"
        )
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = "Delete finished runs that ended more than a given time ago."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", required=True, help="e.g. 30d, 12h or 90m")
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be deleted, delete nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        cutoff = timezone.now() - parse_age(options["older_than"])
        ended = Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, created_at__lt=cutoff)
        runs = Run.objects.filter(ended, status__in=TERMINAL_RUN_STATUSES)
        counts = {
            "runs": runs.count(),
            "steps": Step.objects.filter(run__in=runs).count(),
            "events": RunEvent.objects.filter(run__in=runs).count(),
            "model calls": ModelCall.objects.filter(run__in=runs).count(),
            "files": RunFile.objects.filter(run__in=runs).count(),
        }
        summary = ", ".join(f"{count} {name}" for name, count in counts.items())
        if options["dry_run"]:
            self.stdout.write(f"Would delete {summary} (finished before {cutoff:%Y-%m-%d %H:%M}).")
            return
        with transaction.atomic():
            ids = list(runs.values_list("pk", flat=True))
            # A run's approved plan is a protected reference to one of its own versions.
            Run.objects.filter(pk__in=ids).update(approved_plan=None)
            Run.objects.filter(pk__in=ids).delete()
        self.stdout.write(f"Deleted {summary} (finished before {cutoff:%Y-%m-%d %H:%M}).")
