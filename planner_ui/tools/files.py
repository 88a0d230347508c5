"""Read, write and list files inside the run's own workspace, never outside it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext

MAX_FILE_BYTES = 1_000_000
MAX_READ_CHARS = 50_000


def resolve_in_workspace(workspace: Path, relative: str) -> Path:
    """The path inside the workspace, refusing absolute paths and any escape through '..'."""
    if not relative or relative.startswith(("/", "\\")):
        raise ToolError(f"path {relative!r} must be relative to the run's workspace")
    root = workspace.resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise ToolError(f"path {relative!r} leaves the run's workspace")
    return target


class ReadFileInput(BaseModel):
    path: str = Field(max_length=255, description="Path relative to the run's workspace.")


class ReadFile(Tool):
    name = "read_file"
    description = "Read a text file from the run's workspace."
    Input = ReadFileInput
    effect = Effect.READ

    def run(self, args: ReadFileInput, ctx: ToolContext) -> str:
        target = resolve_in_workspace(ctx.workspace, args.path)
        if not target.is_file():
            raise ToolError(f"read_file: no file {args.path!r} in the workspace")
        text = target.read_text(encoding="utf-8", errors="replace")
        if len(text) > MAX_READ_CHARS:
            return text[:MAX_READ_CHARS] + f"\n[truncated: {len(text)} characters in all]"
        return text


class WriteFileInput(BaseModel):
    path: str = Field(max_length=255, description="Path relative to the run's workspace.")
    content: str = Field(description="The whole new text of the file.")


class WriteFile(Tool):
    name = "write_file"
    description = "Create or overwrite a text file in the run's workspace."
    Input = WriteFileInput
    effect = Effect.WRITE

    def run(self, args: WriteFileInput, ctx: ToolContext) -> str:
        data = args.content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"write_file: {len(data)} bytes is over the {MAX_FILE_BYTES} limit")
        target = resolve_in_workspace(ctx.workspace, args.path)
        if target.is_dir():
            raise ToolError(f"write_file: {args.path!r} is a folder")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            raise ToolError(f"write_file: cannot write {args.path!r}: {exc.strerror}") from exc
        return f"wrote {len(data)} bytes to {args.path}"


class ListFilesInput(BaseModel):
    pass


class ListFiles(Tool):
    name = "list_files"
    description = "List the files in the run's workspace with their sizes."
    Input = ListFilesInput
    effect = Effect.READ

    def run(self, args: ListFilesInput, ctx: ToolContext) -> str:
        root = ctx.workspace.resolve()
        if not root.exists():
            return "the workspace is empty"
        files = sorted(p for p in root.rglob("*") if p.is_file())
        if not files:
            return "the workspace is empty"
        return "\n".join(f"{p.relative_to(root)} ({p.stat().st_size} bytes)" for p in files)
