"""shell: real /bin/sh processes in a real workspace, down to the grandchildren on a timeout.

These run the command unsandboxed (AGENTSITE_SHELL=unsandboxed), where the process mechanics can be
seen from outside: pids, paths. What the sandbox adds is tests/tools/test_sandbox.py's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.sandbox import Unconfined
from planner_ui.tools.shell import Shell


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "1"


def run(command: str, workspace: Path, **settings: Any) -> str:
    ctx = ToolContext(run_id=1, step_id="sh", workspace=workspace, settings=settings)
    return Shell(Unconfined()).call({"command": command}, ctx)


def run_error(command: str, workspace: Path, **settings: Any) -> str:
    with pytest.raises(ToolError) as caught:
        run(command, workspace, **settings)
    return str(caught.value)


def is_gone(pid: int) -> bool:
    """True once the process no longer runs. A killed orphan may linger as a zombie until init
    reaps it; a zombie runs nothing, so it counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def all_gone(pids: list[int], within_s: float = 2.0) -> bool:
    deadline = time.monotonic() + within_s
    while not all(is_gone(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pids_in(workspace: Path, *names: str) -> list[int]:
    return [int((workspace / name).read_text()) for name in names]


def test_unsandboxed_the_tool_executes_so_it_is_irreversible() -> None:
    shell = Shell(Unconfined())
    assert shell.effect is Effect.EXECUTE
    assert shell.irreversible is True
    assert shell.description.endswith("Irreversible.")
    # Read off the class (no confinement known), it is the gated one.
    assert Shell.effect is Effect.EXECUTE
    assert Shell.irreversible is True


def test_the_exit_code_and_interleaved_output_are_returned(workspace: Path) -> None:
    assert run("echo out; echo err >&2; echo again", workspace) == "exit 0\nout\nerr\nagain\n"


def test_a_non_zero_exit_is_a_result_not_an_error(workspace: Path) -> None:
    assert run("echo 'no such thing' >&2; exit 3", workspace) == "exit 3\nno such thing\n"


def test_a_shell_killed_by_a_signal_says_so(workspace: Path) -> None:
    assert run("kill -9 $$", workspace) == "exit -9 (killed by signal 9)\n"


def test_the_command_runs_in_the_workspace_which_is_created(workspace: Path) -> None:
    assert not workspace.exists()
    assert run("pwd; echo note > made.txt", workspace) == f"exit 0\n{workspace.resolve()}\n"
    assert (workspace / "made.txt").read_text() == "note\n"


def test_the_environment_is_minimal_and_leaks_no_secrets(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:secret@db/agentsite")
    output = run("env", workspace)

    assert "secret" not in output
    variables = dict(line.split("=", 1) for line in output.splitlines()[1:])
    assert variables.pop("PATH") == "/usr/bin:/bin"
    assert variables.pop("HOME") == str(workspace.resolve())
    assert variables.pop("LANG") == "C.UTF-8"
    # The shell adds its own bookkeeping, nothing else.
    assert set(variables) <= {"PWD", "OLDPWD", "SHLVL", "_"}


def test_stdin_is_closed_so_a_reader_does_not_wait(workspace: Path) -> None:
    started = time.monotonic()
    assert run("cat; read line || echo eof", workspace, shell_timeout_s=5) == "exit 0\neof\n"
    assert time.monotonic() - started < 2


def test_utf8_output_is_decoded(workspace: Path) -> None:
    assert run(r"printf 'caf\303\251 \377'", workspace) == "exit 0\ncafé \ufffd"


def test_long_output_is_truncated_with_a_note(workspace: Path) -> None:
    assert run("printf abcdefghijklmnop", workspace, shell_max_output_chars=10) == (
        "exit 0\nabcdefghij\n[truncated: 16 bytes of output in all]"
    )
    assert run("printf abcdefghij", workspace, shell_max_output_chars=10) == "exit 0\nabcdefghij"


def test_a_flood_of_output_does_not_block_and_is_counted(workspace: Path) -> None:
    # Far more than a pipe holds: the command would hang if the tool stopped reading.
    result = run("yes | head -c 5000000; echo done >&2", workspace, shell_max_output_chars=6)
    assert result == "exit 0\ny\ny\ny\n\n[truncated: 5000005 bytes of output in all]"


def test_a_timeout_kills_the_command_and_its_grandchildren(workspace: Path) -> None:
    command = "sh -c 'sleep 30 & echo $! > grandchild.pid; wait' & echo $! > child.pid; wait"
    started = time.monotonic()
    assert run_error(command, workspace, shell_timeout_s=0.5) == (
        "shell: the command did not finish within 0.5 s and was killed"
    )
    assert time.monotonic() - started < 3
    assert all_gone(pids_in(workspace, "child.pid", "grandchild.pid"))


def test_a_command_that_closes_its_output_still_times_out(workspace: Path) -> None:
    assert run_error("exec >&- 2>&-; sleep 30", workspace, shell_timeout_s=0.3) == (
        "shell: the command did not finish within 0.3 s and was killed"
    )


@pytest.mark.parametrize(
    "command",
    [
        "sleep 30 & echo $! > job.pid",  # the job holds the output pipe open
        "sleep 30 > /dev/null 2>&1 & echo $! > job.pid",  # the job let go of it
    ],
)
def test_background_jobs_do_not_outlive_the_call(workspace: Path, command: str) -> None:
    started = time.monotonic()
    assert run(command, workspace, shell_timeout_s=10) == "exit 0\n"
    assert time.monotonic() - started < 3
    assert all_gone(pids_in(workspace, "job.pid"))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "shell: invalid arguments: 'command' field required"),
        (
            {"command": ""},
            "shell: invalid arguments: 'command' string should have at least 1 character",
        ),
        ({"command": ["ls"]}, "shell: invalid arguments: 'command' input should be a valid string"),
    ],
)
def test_bad_arguments_are_named(workspace: Path, arguments: Any, message: str) -> None:
    ctx = ToolContext(run_id=1, step_id="sh", workspace=workspace)
    with pytest.raises(ToolError) as caught:
        Shell(Unconfined()).call(arguments, ctx)
    assert str(caught.value) == message
    assert not workspace.exists()
