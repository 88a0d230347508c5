"""delete_file: one real file inside the workspace, never a folder, a link or anything outside."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.delete_file import DeleteFile


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "runs" / "1"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "a.txt").write_text("alpha")
    return folder


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(run_id=1, step_id="clean", workspace=workspace)


def delete_error(path: str, ctx: ToolContext) -> str:
    with pytest.raises(ToolError) as caught:
        DeleteFile().call({"path": path}, ctx)
    return str(caught.value)


def test_the_tool_deletes_so_it_is_irreversible() -> None:
    assert DeleteFile.effect is Effect.DELETE
    assert DeleteFile.irreversible is True


def test_a_file_is_deleted_and_its_size_reported(ctx: ToolContext, workspace: Path) -> None:
    assert DeleteFile().call({"path": "notes/a.txt"}, ctx) == "deleted notes/a.txt (5 bytes)"
    assert not (workspace / "notes" / "a.txt").exists()
    assert (workspace / "notes").is_dir()  # only the file goes


def test_a_missing_file_is_named(ctx: ToolContext) -> None:
    assert delete_error("notes/b.txt", ctx) == "delete_file: no file 'notes/b.txt' in the workspace"


@pytest.mark.parametrize("path", ["notes", ".", "notes/.."])
def test_folders_are_refused(ctx: ToolContext, workspace: Path, path: str) -> None:
    assert delete_error(path, ctx) == f"delete_file: {path!r} is a folder; only files are deleted"
    assert (workspace / "notes" / "a.txt").exists()


@pytest.mark.parametrize("path", ["../outside.txt", "notes/../../outside.txt"])
def test_dot_dot_escapes_are_refused(ctx: ToolContext, tmp_path: Path, path: str) -> None:
    outside = tmp_path / "runs" / "outside.txt"
    outside.write_text("not yours")
    assert delete_error(path, ctx) == f"path {path!r} leaves the run's workspace"
    assert outside.exists()


@pytest.mark.parametrize("path", ["/etc/hostname", ""])
def test_absolute_and_empty_paths_are_refused(ctx: ToolContext, path: str) -> None:
    assert delete_error(path, ctx) == f"path {path!r} must be relative to the run's workspace"


def test_a_link_out_of_the_workspace_is_refused(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (workspace / "link.txt").symlink_to(outside)
    assert delete_error("link.txt", ctx) == "path 'link.txt' leaves the run's workspace"
    assert outside.read_text() == "secret"


def test_a_link_inside_the_workspace_is_refused_and_both_stay(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "link.txt").symlink_to(workspace / "notes" / "a.txt")
    assert delete_error("link.txt", ctx) == (
        "delete_file: 'link.txt' is a symbolic link; only files are deleted"
    )
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "notes" / "a.txt").read_text() == "alpha"


def test_a_file_through_a_linked_folder_outside_is_refused(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("keep")
    (workspace / "shortcut").symlink_to(elsewhere)
    assert delete_error("shortcut/data.txt", ctx) == (
        "path 'shortcut/data.txt' leaves the run's workspace"
    )
    assert (elsewhere / "data.txt").exists()


def test_arguments_are_validated_by_name(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as caught:
        DeleteFile().call({"file": "notes/a.txt"}, ctx)
    assert str(caught.value) == "delete_file: invalid arguments: 'path' field required"
