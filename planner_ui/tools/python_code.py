"""Run a Python 3 script with the run's files, confined as tools.sandbox decides."""

from __future__ import annotations

import shutil

from pydantic import BaseModel, Field

from planner_ui.core.errors import ToolError

from .base import ToolContext
from .command import CommandTool

# The script goes to the interpreter as one argument, and Linux takes at most 128 KiB in one.
MAX_SCRIPT_BYTES = 120_000
# Under /usr, so the sandbox (which sees /usr and nothing of the server's own Python) has it too.
INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")


def interpreter() -> str | None:
    """The system's Python 3 the tool runs scripts with, or None where there is none."""
    for path in INTERPRETERS:
        if shutil.which(path):
            return path
    return None


class PythonInput(BaseModel):
    code: str = Field(
        min_length=1,
        max_length=MAX_SCRIPT_BYTES,
        description="A Python 3 script. The run's files are in the current directory; print "
        "what you want to see.",
    )


class PythonCode(CommandTool):
    name = "python"
    description = (
        "Run a Python 3 script (standard library only) in the run's workspace and return its "
        "exit code and its output (stdout and stderr interleaved)."
    )
    Input = PythonInput

    def run(self, args: PythonInput, ctx: ToolContext) -> str:
        size = len(args.code.encode("utf-8"))
        if size > MAX_SCRIPT_BYTES:
            raise ToolError(
                f"python: the script is {size} bytes in UTF-8; at most {MAX_SCRIPT_BYTES}: "
                "write it to a file in parts with write_file, then run a short script"
            )
        found = interpreter()
        if found is None:
            raise ToolError("python: no Python 3 interpreter is installed on this server")
        # -I: no user site-packages, no PYTHON* variables, the script's directory not on the path;
        # -u: unbuffered, so its output and its traceback come in the order they happened.
        return self.run_command([found, "-I", "-u", "-c", args.code], ctx)
