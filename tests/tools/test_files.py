"""read_file, write_file and list_files: confined to the run's workspace, with size limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.files import (
    MAX_FILE_BYTES,
    MAX_READ_CHARS,
    ListFiles,
    ReadFile,
    WriteFile,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "1"


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(run_id=1, step_id="files", workspace=workspace)


def error_of(tool: ReadFile | WriteFile | ListFiles, arguments: object, ctx: ToolContext) -> str:
    with pytest.raises(ToolError) as caught:
        tool.call(arguments, ctx)
    return str(caught.value)


def test_write_read_list_round_trip(ctx: ToolContext, workspace: Path) -> None:
    # The workspace does not exist yet: writing creates it and any folders on the way.
    assert WriteFile().call({"path": "notes/plan.md", "content": "# Café\n"}, ctx) == (
        "wrote 8 bytes to notes/plan.md"
    )
    assert WriteFile().call({"path": "a.txt", "content": "alpha"}, ctx) == "wrote 5 bytes to a.txt"

    assert (workspace / "notes" / "plan.md").read_text(encoding="utf-8") == "# Café\n"
    assert ReadFile().call({"path": "notes/plan.md"}, ctx) == "# Café\n"
    assert ReadFile().call({"path": "./notes/../a.txt"}, ctx) == "alpha"
    assert ListFiles().call({}, ctx) == "a.txt (5 bytes)\nnotes/plan.md (8 bytes)"


def test_write_overwrites_the_whole_file(ctx: ToolContext) -> None:
    WriteFile().call({"path": "a.txt", "content": "a long first version"}, ctx)
    WriteFile().call({"path": "a.txt", "content": "short"}, ctx)
    assert ReadFile().call({"path": "a.txt"}, ctx) == "short"


def test_listing_a_missing_or_empty_workspace(ctx: ToolContext, workspace: Path) -> None:
    assert ListFiles().call({}, ctx) == "the workspace is empty"
    (workspace / "only-a-folder").mkdir(parents=True)
    assert ListFiles().call({}, ctx) == "the workspace is empty"


@pytest.mark.parametrize("path", ["/etc/passwd", "\\windows\\system.ini", ""])
def test_absolute_and_empty_paths_are_refused(ctx: ToolContext, path: str) -> None:
    assert error_of(ReadFile(), {"path": path}, ctx) == (
        f"path {path!r} must be relative to the run's workspace"
    )
    assert error_of(WriteFile(), {"path": path, "content": "x"}, ctx) == (
        f"path {path!r} must be relative to the run's workspace"
    )


@pytest.mark.parametrize("path", ["../escape.txt", "notes/../../escape.txt", "a/b/../../../x"])
def test_dot_dot_escapes_are_refused(ctx: ToolContext, tmp_path: Path, path: str) -> None:
    assert error_of(WriteFile(), {"path": path, "content": "x"}, ctx) == (
        f"path {path!r} leaves the run's workspace"
    )
    assert error_of(ReadFile(), {"path": path}, ctx) == f"path {path!r} leaves the run's workspace"
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_a_workspace_named_like_a_prefix_of_another_is_not_inside_it(
    ctx: ToolContext, workspace: Path
) -> None:
    # runs/1 and runs/10 share a string prefix; only a real parent check tells them apart.
    sibling = workspace.parent / "10"
    sibling.mkdir(parents=True)
    (sibling / "secret.txt").write_text("not yours")
    assert error_of(ReadFile(), {"path": "../10/secret.txt"}, ctx) == (
        "path '../10/secret.txt' leaves the run's workspace"
    )


def test_a_symlink_out_of_the_workspace_is_refused(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    workspace.mkdir(parents=True)
    (workspace / "link.txt").symlink_to(outside)

    assert error_of(ReadFile(), {"path": "link.txt"}, ctx) == (
        "path 'link.txt' leaves the run's workspace"
    )
    assert error_of(WriteFile(), {"path": "link.txt", "content": "overwritten"}, ctx) == (
        "path 'link.txt' leaves the run's workspace"
    )
    assert outside.read_text() == "secret"


def test_reading_a_missing_file_or_a_folder(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "folder").mkdir(parents=True)
    assert error_of(ReadFile(), {"path": "missing.txt"}, ctx) == (
        "read_file: no file 'missing.txt' in the workspace"
    )
    assert error_of(ReadFile(), {"path": "folder"}, ctx) == (
        "read_file: no file 'folder' in the workspace"
    )


def test_writing_over_the_size_limit_is_refused_and_writes_nothing(
    ctx: ToolContext, workspace: Path
) -> None:
    content = "é" * (MAX_FILE_BYTES // 2) + "x"  # the limit counts UTF-8 bytes, not characters
    assert error_of(WriteFile(), {"path": "big.txt", "content": content}, ctx) == (
        f"write_file: {MAX_FILE_BYTES + 1} bytes is over the {MAX_FILE_BYTES} limit"
    )
    assert not (workspace / "big.txt").exists()

    at_limit = "x" * MAX_FILE_BYTES
    assert WriteFile().call({"path": "big.txt", "content": at_limit}, ctx) == (
        f"wrote {MAX_FILE_BYTES} bytes to big.txt"
    )


def test_reading_a_long_file_is_truncated_with_its_full_length(
    ctx: ToolContext, workspace: Path
) -> None:
    workspace.mkdir(parents=True)
    (workspace / "long.txt").write_text("ab" * MAX_READ_CHARS)
    text = ReadFile().call({"path": "long.txt"}, ctx)
    assert (
        text
        == "ab" * (MAX_READ_CHARS // 2) + f"\n[truncated: {2 * MAX_READ_CHARS} characters in all]"
    )


def test_an_undecodable_file_is_read_with_replacement_characters(
    ctx: ToolContext, workspace: Path
) -> None:
    workspace.mkdir(parents=True)
    (workspace / "data.bin").write_bytes(b"ok \xff\xfe end")
    assert ReadFile().call({"path": "data.bin"}, ctx) == "ok \ufffd\ufffd end"


def test_arguments_are_validated_by_name(ctx: ToolContext) -> None:
    assert error_of(WriteFile(), {"path": "a.txt"}, ctx) == (
        "write_file: invalid arguments: 'content' field required"
    )
    assert error_of(ReadFile(), {"path": 3}, ctx) == (
        "read_file: invalid arguments: 'path' input should be a valid string"
    )
    assert error_of(ReadFile(), "a.txt", ctx) == "read_file: arguments must be a JSON object"


@pytest.mark.parametrize("path", [".", "folder"])
def test_writing_over_a_folder_is_a_tool_error(
    ctx: ToolContext, workspace: Path, path: str
) -> None:
    (workspace / "folder").mkdir(parents=True)
    with pytest.raises(ToolError, match=r"^write_file: "):
        WriteFile().call({"path": path, "content": "x"}, ctx)
