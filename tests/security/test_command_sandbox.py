"""Issue 30's first attack: a normal user submits "Run `…`", approves nothing (a sandboxed
command needs no approval), and the command, run by a real worker, tries to read the worker's
environment, the server's files, the password hashes in the database, another run's workspace and
Redis, and to make her a superuser. Inside the sandbox every one fails; the control runs the very
same commands as a plain subprocess of this test and every one succeeds, so the test can fail."""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run, RunEvent
from planner_ui.services.runs import run_create
from planner_ui.tools import COMMANDS, ToolContext
from planner_ui.tools.sandbox import Unconfined
from planner_ui.tools.shell import Shell
from tests.conftest import wait_until

pytestmark = [
    pytest.mark.stack,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "sqlite", reason="the attack reads the SQLite file the worker uses"
    ),
    pytest.mark.skipif(not COMMANDS.offered, reason="no sandbox here (make test installs it)"),
]

# Each a command of its own, in the words the offline model reads: it runs each `…` after "run",
# and splits a task at "; " and "do", so the scripts are single Python expressions.
READS = (
    # The environment of the processes the command can see: the worker's is its parent's.
    "tr '\\0' '\\n' < /proc/$PPID/environ",
    "tr '\\0' '\\n' < /proc/1/environ",
    "cat {canary}",
    "ls {workspaces}",
    "cat {neighbour}",
    "python3 -c \"print(__import__('sqlite3').connect('{db}')"
    ".execute('select username, password from auth_user').fetchall())\"",
    "python3 -c \"(lambda c: (c.connect('{redis}'), c.sendall(b'PING\\r\\n'), print(c.recv(64))))"
    "(__import__('socket').socket(__import__('socket').AF_UNIX))\"",
)
WRITE = (
    "python3 -c \"(lambda c: (c.execute('update auth_user set is_superuser = 1 where username = "
    "\\'mallory\\''), c.commit(), print('promoted')))(__import__('sqlite3').connect('{db}'))\""
)


@pytest.fixture
def planted(tmp_path: Path):
    """A secret in the server's var/ and a file in another run's workspace."""
    canary = settings.VAR_DIR / f"canary-{uuid.uuid4().hex}"
    canary.write_text("server-secret-canary\n")
    neighbour = settings.AGENTSITE_WORKSPACES_DIR / "run-999999" / "other-step" / "theirs.txt"
    neighbour.parent.mkdir(parents=True, exist_ok=True)
    neighbour.write_text("another-run-canary\n")
    yield canary, neighbour
    canary.unlink()
    shutil.rmtree(neighbour.parent.parent)


def _attack(planted, db: str) -> dict[str, str]:
    canary, neighbour = planted
    where = {
        "canary": canary,
        "workspaces": settings.AGENTSITE_WORKSPACES_DIR,
        "neighbour": neighbour,
        "db": db,
        "redis": settings.EMBEDDED_REDIS_SOCKET,
    }
    return {"reads": [read.format(**where) for read in READS], "write": WRITE.format(**where)}


# The environment this process started with, which its workers inherit (with DATABASE_URL,
# DJANGO_SETTINGS_MODULE and the rest on top): a leak of either shows some of it.
OURS = [
    entry
    for entry in Path("/proc/self/environ").read_text().split("\0")
    if "=" in entry and entry.split("=", 1)[0] not in ("PATH", "HOME", "LANG", "PWD")
]


def _leaks(output: str) -> list[str]:
    """Which of the attack's targets the output shows."""
    lines = output.splitlines()
    found = {
        "a process's environment": "DJANGO_SETTINGS_MODULE=" in output
        or any(entry in lines for entry in OURS),
        "the server's var/": "server-secret-canary" in output,
        "another run's workspace": "another-run-canary" in output,
        "password hashes": "md5$" in output,
        "Redis": "PONG" in output,
    }
    return [target for target, seen in found.items() if seen]


def _run_shell(owner, *commands: str) -> tuple[Run, list[dict]]:
    task = " and then run ".join(f"`{command}`" for command in commands)
    run = run_create(owner=owner, options=RunOptions(task=f"Run {task}", auto_approve=True))
    run = wait_until(
        lambda: (r := Run.objects.get(pk=run.pk)).is_finished and r,
        timeout=120,
        what="the run to finish",
    )
    results = [
        e.payload
        for e in RunEvent.objects.filter(run=run, type="step.tool_result").order_by("seq")
        if e.payload["tool"] == "shell"
    ]
    return run, results


@pytest.mark.skipif(not settings.REDIS_IS_EMBEDDED, reason="reads the embedded Redis's socket")
def test_a_command_on_a_real_worker_reads_nothing_of_the_server(
    celery_worker_process, make_user, planted, tmp_path: Path
) -> None:
    mallory = make_user("mallory")
    db = connection.settings_dict["NAME"]
    attack = _attack(planted, db)

    # Control: the same command, as a plain subprocess of this test, reads every target.
    plain = ToolContext(run_id=0, step_id="control", workspace=tmp_path / "control")
    control = "".join(Shell(Unconfined()).call({"command": c}, plain) for c in attack["reads"])
    assert _leaks(control) == [
        "a process's environment",
        "the server's var/",
        "another run's workspace",
        "password hashes",
        "Redis",
    ], control

    run, results = _run_shell(mallory, *attack["reads"])

    assert len(results) == len(READS), f"{run.status} {run.error}: {results}"
    assert all(result["sandboxed"] is True for result in results)
    inside = "".join(result["content"] for result in results)
    assert _leaks(inside) == [], inside
    assert "No such file or directory" in inside
    # She asked nothing, and nothing was asked of her: a sandboxed command is not gated.
    assert not run.approvals.exists()
    assert run.status == RunStatus.SUCCEEDED, run.error


def test_a_command_on_a_real_worker_cannot_make_its_author_a_superuser(
    celery_worker_process, make_user, planted, tmp_path: Path, django_user_model
) -> None:
    mallory = make_user("mallory")
    db = Path(connection.settings_dict["NAME"])

    # Control: on a copy of the database, the same command promotes her.
    copy = tmp_path / "copy.sqlite3"
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # with what is still in the write-ahead log
    control = Shell(Unconfined()).call(
        {"command": _attack(planted, str(copy))["write"]},
        ToolContext(run_id=0, step_id="control", workspace=tmp_path / "control"),
    )
    assert control == "exit 0\npromoted\n"
    with sqlite3.connect(copy) as promoted:
        assert promoted.execute(
            "select is_superuser from auth_user where username = 'mallory'"
        ).fetchone() == (1,)

    run, results = _run_shell(mallory, _attack(planted, str(db))["write"])

    (result,) = results
    assert result["sandboxed"] is True
    assert "promoted" not in result["content"]
    assert "unable to open database file" in result["content"], result["content"]
    mallory.refresh_from_db()
    assert not mallory.is_superuser
    assert not django_user_model.objects.filter(is_superuser=True).exists()
