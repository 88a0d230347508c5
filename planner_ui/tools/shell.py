"""Run a shell command in the run's workspace, confined as tools.sandbox decides."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .base import ToolContext
from .command import CommandTool


class ShellInput(BaseModel):
    command: str = Field(
        min_length=1, max_length=10_000, description="A command line for /bin/sh, e.g. 'ls -la'."
    )


class Shell(CommandTool):
    name = "shell"
    description = (
        "Run a command with /bin/sh in the run's workspace and return its exit code and its "
        "output (stdout and stderr interleaved)."
    )
    Input = ShellInput

    def run(self, args: ShellInput, ctx: ToolContext) -> str:
        return self.run_command(["/bin/sh", "-c", args.command], ctx)
