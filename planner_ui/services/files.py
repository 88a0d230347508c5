"""A run's files: kept in the database, so that a step on any machine reads what an earlier step
wrote on another; each step works on a local copy of its own.

`workspace_checkout` writes the run's files into a fresh folder for one attempt of a step;
`workspace_sync` stores what the step's tool calls changed there (written, changed, deleted),
after every call that may change files; `workspace_drop` removes the folder when the step stops.
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from planner_ui.core.events import EventType
from planner_ui.models import RunFile
from planner_ui.tools.tree import read_at_most, regular_files

from .events import event_append


@dataclass
class Workspace:
    """One attempt's local copy of the run's files, and what they were when it was made."""

    run_id: int
    step_id: str
    path: Path
    # path → sha256 of the run's files as last stored, for telling what a call changed.
    stored: dict[str, str] = field(default_factory=dict)


def workspace_checkout(run_id: int, step_id: str, *, files: bool = True) -> Workspace:
    """A fresh local folder holding every file of the run, for one attempt of one step.

    Without `files`, for a step granted no tool (it has no way to reach them), the folder is
    named but neither made nor filled: most steps of a plan read and write no file."""
    root = (
        Path(settings.AGENTSITE_WORKSPACES_DIR)
        / f"run-{run_id}"
        / f"{step_id}-{uuid.uuid4().hex[:8]}"
    )
    workspace = Workspace(run_id, step_id, root)
    if not files:
        return workspace
    root.mkdir(parents=True)
    for path, content, digest in (
        RunFile.objects.filter(run_id=run_id).order_by().values_list("path", "content", "sha256")
    ):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(content))
        workspace.stored[path] = digest
    return workspace


def workspace_drop(workspace: Workspace) -> None:
    shutil.rmtree(workspace.path, ignore_errors=True)
    try:
        workspace.path.parent.rmdir()  # the run's folder, once no step of it works here
    except OSError:
        pass


def workspace_sync(workspace: Workspace) -> list[str]:
    """Store what changed in the local copy since the last sync; the problems, for the model
    (a file over the limits is not stored, and the step is told so)."""
    per_file = settings.AGENTSITE_RUN_FILE_MAX_BYTES
    on_disk = _scan(workspace.path, per_file)
    problems: list[str] = []
    changed = {p: f for p, f in on_disk.items() if workspace.stored.get(p) != f.sha256}
    removed = [p for p in workspace.stored if p not in on_disk]
    if not changed and not removed:
        return problems
    with transaction.atomic():
        total = (
            RunFile.objects.filter(run_id=workspace.run_id)
            .exclude(path__in=[*changed, *removed])
            .aggregate(total=Sum("size"))["total"]
            or 0
        )
        for path in removed:
            RunFile.objects.filter(run_id=workspace.run_id, path=path).delete()
            del workspace.stored[path]
            event_append(
                workspace.run_id, EventType.FILE_DELETED, {"path": path}, step_id=workspace.step_id
            )
        for path, found in sorted(changed.items()):
            if found.content is None:
                workspace.stored[path] = found.sha256  # said once, not after every call
                problems.append(
                    f"{path} was not saved: {found.size:,} bytes is over the limit of "
                    f"{per_file:,} bytes per file (AGENTSITE_RUN_FILE_MAX_BYTES)"
                )
                continue
            if total + found.size > settings.AGENTSITE_RUN_FILES_MAX_BYTES:
                problems.append(
                    f"{path} was not saved: the run's files would take more than "
                    f"{settings.AGENTSITE_RUN_FILES_MAX_BYTES:,} bytes "
                    "(AGENTSITE_RUN_FILES_MAX_BYTES)"
                )
                continue
            total += found.size
            _store(workspace.run_id, workspace.step_id, path, found.content, found.sha256)
            workspace.stored[path] = found.sha256
    return problems


def run_file_write(run_id: int, step_id: str, path: str, content: bytes) -> None:
    """Store one file of the run that a step made other than in its folder (a sent mail)."""
    with transaction.atomic():
        _store(run_id, step_id, path, content, hashlib.sha256(content).hexdigest())


def _store(run_id: int, step_id: str, path: str, content: bytes, sha256: str) -> None:
    RunFile.objects.update_or_create(
        run_id=run_id,
        path=path,
        defaults={"content": content, "size": len(content), "sha256": sha256, "step_id": step_id},
    )
    event_append(
        run_id,
        EventType.FILE_WRITTEN,
        {"path": path, "size": len(content), "sha256": sha256},
        step_id=step_id,
    )


def run_file_paths(run_id: int) -> list[str]:
    return list(RunFile.objects.filter(run_id=run_id).values_list("path", flat=True))


@dataclass(frozen=True)
class _Found:
    content: bytes | None  # None: over the size limit, not read
    size: int
    sha256: str


def _scan(root: Path, max_bytes: int) -> dict[str, _Found]:
    """Every regular file under `root` (links are not followed: a step cannot store a file
    from outside its folder), by its path relative to it."""
    found = {}
    # Through descriptors, never a link: a command's workspace may hold links to anywhere.
    for relative, fd, stat in regular_files(root):
        if len(relative) > 255:
            continue
        content = read_at_most(fd, max_bytes + 1) if stat.st_size <= max_bytes else None
        if content is None or len(content) > max_bytes:
            size = max(stat.st_size, len(content or b""))
            found[relative] = _Found(None, size, f"over-limit:{size}:{stat.st_mtime_ns}")
            continue
        found[relative] = _Found(content, len(content), hashlib.sha256(content).hexdigest())
    return found
