"""Run one program to its end or its deadline, with its output captured and capped.

Shared by the command tools: what a command may reach is the confinement's business
(tools.sandbox); this module makes sure nothing it started outlives the call, that a flood of
output never blocks it, and that no input is waited for.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

READ_CHUNK = 65_536
# A UTF-8 character is at most four bytes: keeping this many per character fills the cap.
_MAX_BYTES_PER_CHAR = 4


def run_program(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout_s: float, max_chars: int
) -> str:
    """Run `argv` and return "exit N" and its output (stdout and stderr interleaved), the
    output truncated to `max_chars` with a note. Raise TimeoutError when it outlives
    `timeout_s`; by then it and every process it started have been killed."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # Its own process group, so one killpg reaches everything the command started.
        start_new_session=True,
    )
    try:
        kept, total = _collect(process, time.monotonic() + timeout_s, max_chars)
    finally:
        # Background jobs do not outlive the call, whether it finished or timed out.
        _end(process)
    output = kept.decode("utf-8", "replace")
    if len(output) > max_chars or total > len(kept):
        output = output[:max_chars] + f"\n[truncated: {total} bytes of output in all]"
    code = process.returncode
    status = f"exit {code}" if code >= 0 else f"exit {code} (killed by signal {-code})"
    return f"{status}\n{output}"


def _collect(
    process: subprocess.Popen[bytes], deadline: float, max_chars: int
) -> tuple[bytes, int]:
    """Read the output until the program exits and the pipe is drained, keeping a capped
    prefix; raise TimeoutError at the deadline. Returns the prefix and the total byte count."""
    kept = bytearray()
    total = 0
    limit = max_chars * _MAX_BYTES_PER_CHAR
    pipe = process.stdout
    assert pipe is not None  # run_program starts it with stdout=PIPE
    with selectors.DefaultSelector() as selector:
        selector.register(pipe, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if not selector.select(min(remaining, 0.05)):
                if _has_exited(process):
                    # A background job still holds the pipe open; it goes with the group.
                    _kill_group(process)
                continue
            chunk = os.read(pipe.fileno(), READ_CHUNK)
            if not chunk:
                break
            # Past the cap output is still read, so the command never blocks on a full pipe, and
            # counted for the note, but dropped.
            total += len(chunk)
            kept += chunk[: max(0, limit - len(kept))]
    # The program may have closed its output and still be running.
    while not _has_exited(process):
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.01)
    return bytes(kept), total


def _has_exited(process: subprocess.Popen[bytes]) -> bool:
    # WNOWAIT leaves the program a zombie: its pid, which names the group, cannot be reused yet.
    return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the program's process group, then reap it and close the pipe.
    Only now is it reaped, so the group id still names this program's group."""
    _kill_group(process)
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is already empty
