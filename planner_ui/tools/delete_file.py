"""Delete one file from the run's workspace: there is no undo, so its effect is DELETE."""

from __future__ import annotations

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext
from .files import resolve_in_workspace


class DeleteFileInput(BaseModel):
    path: str = Field(max_length=255, description="Path relative to the run's workspace.")


class DeleteFile(Tool):
    name = "delete_file"
    description = "Delete one file from the run's workspace. Irreversible."
    Input = DeleteFileInput
    effect = Effect.DELETE

    def run(self, args: DeleteFileInput, ctx: ToolContext) -> str:
        target = resolve_in_workspace(ctx.workspace, args.path)
        # The helper resolves links, so a link inside the workspace would delete the file it
        # points to, not itself. Links are refused rather than guessed at.
        if (ctx.workspace.resolve() / args.path).is_symlink():
            raise ToolError(
                f"delete_file: {args.path!r} is a symbolic link; only files are deleted"
            )
        if target.is_dir():
            raise ToolError(f"delete_file: {args.path!r} is a folder; only files are deleted")
        try:
            size = target.stat().st_size
            target.unlink()
        except FileNotFoundError:
            raise ToolError(f"delete_file: no file {args.path!r} in the workspace") from None
        except OSError as exc:
            raise ToolError(f"delete_file: cannot delete {args.path!r}: {exc.strerror}") from exc
        return f"deleted {args.path} ({size} bytes)"
