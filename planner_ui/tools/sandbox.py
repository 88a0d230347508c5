"""Where the command tools (`shell`, `python`) run their programs.

An approval is not a sandbox: the person approving a command may be the one who wrote it. So a
command runs inside bubblewrap: its own user, PID, IPC, UTS, cgroup and network namespaces (no
network at all), its own /proc, the system's /usr read-only, a private /tmp, the step's
workspace as the only writable directory (at /work), an empty environment, and limits on CPU
time, memory, processes and file size. Nothing of the server's var/ (the database, the secret
key, Redis's socket, other runs' workspaces) exists inside.

AGENTSITE_SHELL chooses: `sandbox` (the default: where bubblewrap cannot start, the command tools
are not offered at all, and the reason is shown), `off`, or `unsandboxed` (plain processes as
the server's user, every call gated: only for a machine that is itself a throwaway sandbox).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from .tree import chown_tree

logger = logging.getLogger(__name__)

# Inside the sandbox: the workspace's path, and the user a command runs as (nobody).
SANDBOX_WORKDIR = "/work"
NOBODY = 65534
# bwrap is started with this environment and nothing else (see Bubblewrap.env).
_BWRAP_ENV = {"PATH": "/usr/bin:/bin"}
# What a command sees as its environment, sandboxed or not: built from nothing, never copied (the
# server's environment holds the API keys).
COMMAND_PATH = "/usr/bin:/bin"


class CommandMode(StrEnum):
    SANDBOX = "sandbox"
    OFF = "off"
    UNSANDBOXED = "unsandboxed"


@dataclass(frozen=True)
class Limits:
    """What one command may use. The wall-clock timeout is the caller's; these bound the rest."""

    cpu_s: int = 30
    memory_bytes: int = 1 << 30
    processes: int = 64
    file_bytes: int = 16 << 20
    tmp_bytes: int = 64 << 20


class Confinement(ABC):
    """How a command's process is started."""

    sandboxed: ClassVar[bool]

    @abstractmethod
    def argv(self, command: Sequence[str], workspace: Path, limits: Limits) -> list[str]:
        """The whole command line that runs `command` in `workspace`."""

    @abstractmethod
    def env(self, workspace: Path) -> dict[str, str]:
        """The environment of the process started with argv()."""

    @abstractmethod
    def cwd(self, workspace: Path) -> Path:
        """The working directory of the process started with argv()."""

    def prepare(self, workspace: Path) -> None:
        """Make the workspace usable by the command before it starts."""
        workspace.mkdir(parents=True, exist_ok=True)

    def describe(self) -> str:
        return "sandboxed" if self.sandboxed else "not sandboxed"


class Unconfined(Confinement):
    """A plain process as the server's user: it can read whatever that user can."""

    sandboxed = False

    def argv(self, command: Sequence[str], workspace: Path, limits: Limits) -> list[str]:
        return list(command)

    def env(self, workspace: Path) -> dict[str, str]:
        return {"PATH": COMMAND_PATH, "HOME": str(workspace), "LANG": "C.UTF-8"}

    def cwd(self, workspace: Path) -> Path:
        return workspace


class Bubblewrap(Confinement):
    """bubblewrap (Debian's `bubblewrap` package), as set out in this module's docstring."""

    sandboxed = True

    def __init__(self, bwrap: str) -> None:
        self.bwrap = bwrap
        # Run as root (CI, a container's default), the command would be root outside its user
        # namespace, and the kernel exempts root from the process limit: the sandbox is started
        # as nobody instead. Nobody cannot walk into var/ (0700) to bind the workspace, so a
        # private mount namespace first puts the workspace where it can (see argv).
        self.as_root = os.geteuid() == 0

    def argv(self, command: Sequence[str], workspace: Path, limits: Limits) -> list[str]:
        source = "/tmp/agentsite-workspace" if self.as_root else str(workspace)
        sandbox = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--uid", str(NOBODY), "--gid", str(NOBODY),
            "--die-with-parent",
            # Its own session: a command cannot push keys into a terminal it never had.
            "--new-session",
            "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64",
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
            "--bind", source, SANDBOX_WORKDIR,
            "--chdir", SANDBOX_WORKDIR,
        ]  # fmt: skip
        if Path("/etc/alternatives").is_dir():
            # Debian's /usr/bin/awk and friends are links through here.
            sandbox += ["--ro-bind", "/etc/alternatives", "/etc/alternatives"]
        sandbox += ["--clearenv"]
        for name, value in {
            "PATH": COMMAND_PATH,
            "HOME": SANDBOX_WORKDIR,
            "LANG": "C.UTF-8",
        }.items():
            sandbox += ["--setenv", name, value]
        # Limits are set inside, after the namespaces exist: set before, the process count would
        # be of every process the user has on the machine instead of this command's.
        sandbox += [
            "/usr/bin/prlimit",
            f"--cpu={limits.cpu_s}",
            f"--as={limits.memory_bytes}",
            f"--nproc={limits.processes}",
            f"--fsize={limits.file_bytes}",
            "--core=0",
            "--",
            *command,
        ]
        if not self.as_root:
            return sandbox
        # As root: in a mount namespace of its own (nothing propagates back), a small tmpfs on
        # /tmp holds a bind of the workspace that nobody can reach; then bwrap starts as nobody.
        # Only the command's own processes see that mount. The workspace is opened first: it may
        # itself be under /tmp, which the tmpfs hides.
        script = (
            'exec 3<"$0" && mount -t tmpfs -o mode=0755,size=64k agentsite /tmp && '
            'mkdir "$1" && mount --bind /proc/self/fd/3 "$1" && exec 3<&- && shift && exec "$@"'
        )
        return [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c", script, str(workspace), source,
            "/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--",
            *sandbox,
        ]  # fmt: skip

    def env(self, workspace: Path) -> dict[str, str]:
        # The command's own environment is set inside (argv); this is bwrap's, whose first
        # process keeps it whole (STACK-NOTES, third wave): nothing but a PATH.
        return dict(_BWRAP_ENV)

    def cwd(self, workspace: Path) -> Path:
        # Not the workspace: bwrap's first process would show the server's path (PWD) inside.
        return Path("/")

    def prepare(self, workspace: Path) -> None:
        super().prepare(workspace)
        if self.as_root:
            # The command runs as nobody: it must be able to change the run's files.
            chown_tree(workspace, NOBODY, NOBODY)

    def describe(self) -> str:
        return "sandboxed (bubblewrap: no network, only the run's workspace writable)"


@dataclass(frozen=True)
class Commands:
    """What this process decided about the command tools: how they run, or why they are off."""

    mode: CommandMode
    confinement: Confinement | None
    # Why the command tools are not offered, or the warning that comes with them; "" otherwise.
    reason: str = ""

    @property
    def offered(self) -> bool:
        return self.confinement is not None

    def describe(self) -> str:
        """One line for `make run`'s startup and the run form."""
        if self.confinement is None:
            return f"shell and python are not offered: {self.reason}"
        if not self.confinement.sandboxed:
            return f"WARNING: shell and python run UNSANDBOXED: {self.reason}"
        return f"shell and python run {self.confinement.describe()}"


def commands_from(mode: str, bwrap: str = "bwrap") -> Commands:
    """The command tools for AGENTSITE_SHELL=`mode`, with `bwrap` as bubblewrap's binary."""
    try:
        chosen = CommandMode(mode.strip().lower() or CommandMode.SANDBOX)
    except ValueError:
        choices = ", ".join(m.value for m in CommandMode)
        return Commands(
            CommandMode.OFF, None, f"AGENTSITE_SHELL is '{mode}'; it must be one of {choices}"
        )
    if chosen is CommandMode.OFF:
        return Commands(chosen, None, "AGENTSITE_SHELL is off")
    if chosen is CommandMode.UNSANDBOXED:
        return Commands(
            chosen,
            Unconfined(),
            "AGENTSITE_SHELL=unsandboxed: a command can read and change everything the "
            "server's user can; every call waits for a person",
        )
    problem = sandbox_problem(bwrap)
    if problem:
        return Commands(CommandMode.OFF, None, problem)
    return Commands(chosen, Bubblewrap(shutil.which(bwrap) or bwrap))


def commands_from_environment() -> Commands:
    return commands_from(
        os.environ.get("AGENTSITE_SHELL", CommandMode.SANDBOX),
        os.environ.get("AGENTSITE_BWRAP", "bwrap"),
    )


@functools.cache
def sandbox_problem(bwrap: str = "bwrap") -> str:
    """Why no sandbox can start here, or "" when one did: a real command is run in one."""
    found = shutil.which(bwrap)
    if found is None:
        return (
            f"no sandbox: bubblewrap ('{bwrap}') is not installed "
            "(Debian/Ubuntu: apt-get install bubblewrap)"
        )
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"agentsite-sandbox-probe-{os.getpid()}"
    confinement = Bubblewrap(found)
    try:
        confinement.prepare(probe)
        done = subprocess.run(
            confinement.argv(["/bin/sh", "-c", "echo ok > probe"], probe, Limits()),
            env=confinement.env(probe),
            cwd=confinement.cwd(probe),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            check=False,
        )
        written = (probe / "probe").read_text() if (probe / "probe").exists() else ""
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no sandbox: bubblewrap could not start ({exc})"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if done.returncode != 0 or written != "ok\n":
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit {done.returncode}"
        logger.warning("bubblewrap cannot start a sandbox here: %s", detail)
        return f"no sandbox: bubblewrap could not start one here ({detail})"
    return ""
