"""Run a shell command in the run's workspace: its effect is EXECUTE, so it is always gated.

Not a sandbox: the command runs as the server's user and can read what that user can. What it
does not get is the server's environment (API keys live there), a terminal, or time: a
command that outlives its timeout is killed with every process it started.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext

READ_CHUNK = 65_536
# A UTF-8 character is at most four bytes: keeping this many per character fills the cap.
_MAX_BYTES_PER_CHAR = 4


class ShellInput(BaseModel):
    command: str = Field(
        min_length=1, max_length=10_000, description="A command line for /bin/sh, e.g. 'ls -la'."
    )


class Shell(Tool):
    name = "shell"
    description = (
        "Run a command with /bin/sh in the run's workspace and return its exit code and its "
        "output (stdout and stderr interleaved). Irreversible."
    )
    Input = ShellInput
    effect = Effect.EXECUTE

    def run(self, args: ShellInput, ctx: ToolContext) -> str:
        timeout = float(ctx.settings.get("shell_timeout_s", 20.0))
        max_chars = int(ctx.settings.get("shell_max_output_chars", 20_000))
        workspace = ctx.workspace.resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            ["/bin/sh", "-c", args.command],
            cwd=workspace,
            # Built from nothing, not copied: the parent's environment holds the API keys.
            env={"PATH": "/usr/bin:/bin", "HOME": str(workspace), "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own process group, so one killpg reaches everything the command started.
            start_new_session=True,
        )
        try:
            kept, total = _collect(process, time.monotonic() + timeout, max_chars)
        except TimeoutError:
            raise ToolError(
                f"shell: the command did not finish within {timeout:g} s and was killed"
            ) from None
        finally:
            # Background jobs do not outlive the call, whether it finished or timed out.
            _end(process)
        output = kept.decode("utf-8", "replace")
        if len(output) > max_chars or total > len(kept):
            output = output[:max_chars] + f"\n[truncated: {total} bytes of output in all]"
        code = process.returncode
        status = f"exit {code}" if code >= 0 else f"exit {code} (killed by signal {-code})"
        return f"{status}\n{output}"


def _collect(process: subprocess.Popen, deadline: float, max_chars: int) -> tuple[bytes, int]:
    """Read the output until the shell exits and the pipe is drained, keeping a capped prefix;
    raise TimeoutError at the deadline. Returns the prefix and the total byte count."""
    kept = bytearray()
    total = 0
    limit = max_chars * _MAX_BYTES_PER_CHAR
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if not selector.select(min(remaining, 0.05)):
                if _has_exited(process):
                    # A background job still holds the pipe open; it goes with the group.
                    _kill_group(process)
                continue
            chunk = os.read(process.stdout.fileno(), READ_CHUNK)
            if not chunk:
                break
            # Past the cap output is still read, so the command never blocks on a full pipe, and
            # counted for the note, but dropped.
            total += len(chunk)
            kept += chunk[: max(0, limit - len(kept))]
    # The shell may have closed its output and still be running.
    while not _has_exited(process):
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.01)
    return bytes(kept), total


def _has_exited(process: subprocess.Popen) -> bool:
    # WNOWAIT leaves the shell a zombie: its pid, which names the group, cannot be reused yet.
    return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _end(process: subprocess.Popen) -> None:
    """Kill what is left of the command's process group, then reap the shell and close the
    pipe. Only now is the shell reaped, so the group id still names this command's group."""
    _kill_group(process)
    process.wait()
    process.stdout.close()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is already empty
