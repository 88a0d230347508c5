"""A run's files as its page lists them, and one file's bytes for its owner."""

from __future__ import annotations

from django.contrib.auth.models import User

from planner_ui.models import Run, RunFile


def run_files(run: Run) -> list[RunFile]:
    """Path, size, which step wrote it and when; not the content."""
    return list(run.files.defer("content"))


def run_file_for_user(user: User, run_id: int, path: str) -> RunFile | None:
    return RunFile.objects.filter(run_id=run_id, run__owner=user, path=path).first()
