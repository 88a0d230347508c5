"""What the command tools (`shell`, `python`) share: a confinement to run in, and an effect that
follows from it.

A sandboxed command has no network and can change only the run's own workspace, so its effect is
WRITE, like write_file: it runs without asking, the way the best coding agents let sandboxed
commands run. Unsandboxed, it can do anything the server's user can: EXECUTE, always gated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext
from .processes import run_program
from .sandbox import Confinement, Limits


class CommandTool(Tool):
    # The class's effect is the unsandboxed one: safe for anything that reads it off the class.
    effect: ClassVar[Effect] = Effect.EXECUTE
    # The description's end, by confinement.
    SANDBOXED_NOTE: ClassVar[str] = (
        " It runs in a sandbox: no network, and only the run's workspace (the current directory) "
        "can be changed."
    )
    UNSANDBOXED_NOTE: ClassVar[str] = " Irreversible."

    def __init__(self, confinement: Confinement) -> None:
        self.confinement = confinement
        self.effect = Effect.WRITE if confinement.sandboxed else Effect.EXECUTE  # type: ignore[misc]
        note = self.SANDBOXED_NOTE if confinement.sandboxed else self.UNSANDBOXED_NOTE
        self.description = type(self).description + note  # type: ignore[misc]

    @property
    def sandboxed(self) -> bool:
        return self.confinement.sandboxed

    def run_command(self, command: Sequence[str], ctx: ToolContext) -> str:
        """Run `command` in the step's workspace under this tool's confinement."""
        timeout = float(ctx.settings.get("shell_timeout_s", 20.0))
        max_chars = int(ctx.settings.get("shell_max_output_chars", 20_000))
        limits = Limits(
            cpu_s=math.ceil(timeout) + 1,
            **{
                name: int(ctx.settings[key])
                for name, key in _LIMIT_SETTINGS.items()
                if ctx.settings.get(key) is not None
            },
        )
        workspace = ctx.workspace.resolve()
        self.confinement.prepare(workspace)
        try:
            return run_program(
                self.confinement.argv(command, workspace, limits),
                env=self.confinement.env(workspace),
                cwd=self.confinement.cwd(workspace),
                timeout_s=timeout,
                max_chars=max_chars,
            )
        except TimeoutError:
            raise ToolError(
                f"{self.name}: the command did not finish within {timeout:g} s and was killed"
            ) from None


# Limits an operator may set, by the ToolContext.settings key each is read from.
_LIMIT_SETTINGS = {
    "memory_bytes": "command_memory_bytes",
    "processes": "command_processes",
    "file_bytes": "command_file_bytes",
}
