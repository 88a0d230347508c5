"""The command tools inside bubblewrap: what a command can still do (its workspace, Python, the
system's programs) and what it cannot (the network, the server's files, its environment, more
than its limits). Each refusal has a control: the same command, unsandboxed, succeeds, so these
tests fail if the sandbox stops confining."""

from __future__ import annotations

import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.python_code import PythonCode
from planner_ui.tools.sandbox import Bubblewrap, Unconfined, commands_from
from planner_ui.tools.shell import Shell
from tests.tools.test_shell import is_gone

SANDBOX = commands_from("sandbox").confinement
pytestmark = pytest.mark.skipif(
    SANDBOX is None, reason="bubblewrap cannot start here (make test installs it)"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "1" / "step"


def shell(command: str, workspace: Path, *, sandboxed: bool = True, **settings: Any) -> str:
    confinement = SANDBOX if sandboxed else Unconfined()
    ctx = ToolContext(run_id=1, step_id="sh", workspace=workspace, settings=settings)
    return Shell(confinement).call({"command": command}, ctx)


def python(code: str, workspace: Path, **settings: Any) -> str:
    ctx = ToolContext(run_id=1, step_id="py", workspace=workspace, settings=settings)
    return PythonCode(SANDBOX).call({"code": code}, ctx)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with 'hello'."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hello")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_sandboxed_commands_change_only_the_workspace_so_they_are_writes() -> None:
    for tool in (Shell(SANDBOX), PythonCode(SANDBOX)):
        assert tool.effect is Effect.WRITE and not tool.irreversible
        assert tool.sandboxed
        assert "no network" in tool.description


def test_a_command_works_in_the_workspace_as_nobody(workspace: Path) -> None:
    workspace.mkdir(parents=True)
    (workspace / "in.txt").write_text("from an earlier step\n")

    output = shell("id -u; pwd; cat in.txt; echo made > out.txt; ls", workspace)

    assert output == "exit 0\n65534\n/work\nfrom an earlier step\nin.txt\nout.txt\n"
    assert (workspace / "out.txt").read_text() == "made\n"


def test_python_runs_a_script_with_the_run_files(workspace: Path) -> None:
    workspace.mkdir(parents=True)
    (workspace / "numbers.txt").write_text("3\n4\n5\n")
    code = (
        "import statistics\n"
        "values = [int(v) for v in open('numbers.txt')]\n"
        "print(statistics.mean(values))\n"
        "open('mean.txt', 'w').write(str(sum(values)))\n"
    )
    assert python(code, workspace) == "exit 0\n4\n"
    assert (workspace / "mean.txt").read_text() == "12"


def test_a_python_error_is_a_result_with_its_traceback(workspace: Path) -> None:
    output = python("print('before')\n1 / 0\n", workspace)
    assert output.startswith("exit 1\nbefore\nTraceback")
    assert output.rstrip().endswith("ZeroDivisionError: division by zero")


def test_the_environment_is_empty_even_for_the_sandboxs_first_process(workspace: Path) -> None:
    # What this process was started with (its API keys, in a worker): the environment a
    # command could read through /proc of its parent, or of bwrap's first process.
    ours = [
        entry
        for entry in Path("/proc/self/environ").read_text().split("\0")
        if "=" in entry and entry.split("=", 1)[0] not in ("PATH", "HOME", "LANG", "PWD")
    ]
    assert ours
    command = "env; tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/$PPID/environ"

    inside = shell(command, workspace).splitlines()
    assert [entry for entry in ours if entry in inside] == []
    assert "PATH=/usr/bin:/bin" in inside and "HOME=/work" in inside

    # Control: a plain subprocess of this process reads its parent's environment.
    outside = shell(command, workspace, sandboxed=False).splitlines()
    assert [entry for entry in ours if entry in outside] == ours


def test_the_server_files_do_not_exist_inside(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "var" / "secret_key"
    secret.parent.mkdir()
    secret.write_text("the-server-secret")
    neighbour = tmp_path / "runs" / "2" / "step" / "theirs.txt"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_text("another run's file")
    command = f"cat {secret} {neighbour} /etc/hostname /root/.bashrc; ls {tmp_path}"

    inside = shell(command, workspace)
    assert "the-server-secret" not in inside and "another run's file" not in inside
    assert f"cat: {secret}: No such file or directory" in inside
    assert f"ls: cannot access '{tmp_path}': No such file or directory" in inside

    control = shell(command, workspace, sandboxed=False)
    assert "the-server-secret" in control and "another run's file" in control


def test_there_is_no_network_not_even_loopback(workspace: Path, listener: int) -> None:
    code = (
        "import socket\n"
        "try:\n"
        f"    print(socket.create_connection(('127.0.0.1', {listener}), timeout=2).recv(5))\n"
        "except OSError as exc:\n"
        "    print('refused:', exc)\n"
    )
    assert python(code, workspace).startswith("exit 0\nrefused:")
    control = Unconfined()
    ctx = ToolContext(run_id=1, step_id="py", workspace=workspace)
    assert PythonCode(control).call({"code": code}, ctx) == "exit 0\nb'hello'\n"


def test_the_system_is_read_only_and_tmp_is_private(workspace: Path) -> None:
    output = shell(
        "touch /usr/bin/planted 2>&1; echo x > /tmp/scratch && cat /tmp/scratch", workspace
    )
    assert "touch: cannot touch '/usr/bin/planted': Read-only file system" in output
    assert output.endswith("x\n")
    assert not Path("/usr/bin/planted").exists()
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "x\n"


def test_processes_are_limited(workspace: Path) -> None:
    # A fork bomb's start: far more processes than the limit.
    output = shell(
        "for i in $(seq 1 200); do sleep 5 & done; echo spawned", workspace, command_processes=32
    )
    assert "Cannot fork" in output or "fork: Resource temporarily unavailable" in output
    assert "spawned" not in output


def test_memory_is_limited(workspace: Path) -> None:
    code = "blob = bytearray(2 * 1024 ** 3)\nprint('allocated')"
    output = python(code, workspace, command_memory_bytes=256 * 1024**2)
    assert "MemoryError" in output and "allocated" not in output


def test_file_size_is_limited(workspace: Path) -> None:
    output = shell(
        "head -c 3000000 /dev/zero > big.bin; echo $?", workspace, command_file_bytes=1_000_000
    )
    assert output.startswith("exit ") and "153" in output  # 128 + SIGXFSZ (25)
    assert (workspace / "big.bin").stat().st_size == 1_000_000


def test_cpu_time_is_limited_and_the_timeout_ends_everything(workspace: Path) -> None:
    seconds = f"{secrets.randbelow(10**6) + 1000}.5"
    with pytest.raises(ToolError) as caught:
        shell(f"sleep {seconds} & while :; do :; done", workspace, shell_timeout_s=1)
    assert str(caught.value) == "shell: the command did not finish within 1 s and was killed"
    assert _sleeping(seconds) == []


def _sleeping(seconds: str, within_s: float = 2.0) -> list[str]:
    """The pids of `sleep <seconds>` processes still running on this machine once `within_s`
    has passed (or none are left). Killing a sandbox's outer process ends the processes inside
    a moment later, when the kernel empties its PID namespace; a zombie runs nothing."""
    deadline = time.monotonic() + within_s
    while True:
        running = [
            pid
            for pid in os.listdir("/proc")
            if pid.isdigit()
            and _cmdline(pid) == f"sleep\x00{seconds}\x00"
            and not is_gone(int(pid))
        ]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.02)


def test_no_process_of_a_command_outlives_the_call(workspace: Path) -> None:
    # A duration no other process on the machine sleeps, to find this one's by.
    seconds = f"{secrets.randbelow(10**6) + 1000}.5"
    command = f"sleep {seconds} > /dev/null 2>&1 & echo started"
    assert shell(command, workspace) == "exit 0\nstarted\n"
    assert _sleeping(seconds) == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_a_file_written_inside_is_readable_and_removable_by_the_server(workspace: Path) -> None:
    shell("mkdir -p sub && echo deep > sub/file.txt && chmod 000 sub/file.txt", workspace)
    made = workspace / "sub" / "file.txt"
    assert stat.S_IMODE(made.stat().st_mode) == 0
    if isinstance(SANDBOX, Bubblewrap) and SANDBOX.as_root:
        assert made.read_text() == "deep\n"  # the server (root) reads it all the same
    made.unlink()


def test_an_oversized_script_is_refused_with_the_reason(workspace: Path) -> None:
    code = "# " + "é" * 60_000
    with pytest.raises(ToolError) as caught:
        python(code, workspace)
    assert str(caught.value) == (
        "python: the script is 120002 bytes in UTF-8; at most 120000: write it to a file in "
        "parts with write_file, then run a short script"
    )
