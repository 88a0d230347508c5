"""What a sandboxed command leaves in its workspace is stored for every machine afterwards, by
the server, outside the sandbox. A command cannot read the server's files, but it can leave
symbolic links that name them: the server must store none of what they point at, even when a
link is swapped in for a file or a folder while it reads (a process of the command may still be
dying then). The control stores the same tree through plain paths and reads the secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner_ui.models import Run, RunFile
from planner_ui.services.files import workspace_checkout, workspace_sync
from planner_ui.tools import COMMANDS, ToolContext
from planner_ui.tools.shell import Shell
from planner_ui.tools.tree import chown_tree, read_at_most, regular_files

pytestmark = pytest.mark.django_db

SECRET = "server-secret-behind-a-link"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "server-var"
    folder.mkdir()
    (folder / "secret_key").write_text(SECRET)
    return folder


@pytest.mark.skipif(not COMMANDS.offered, reason="no sandbox here (make test installs it)")
def test_links_a_command_leaves_are_never_followed_by_the_sync(
    make_user, settings, tmp_path: Path, secrets: Path
) -> None:
    settings.AGENTSITE_WORKSPACES_DIR = tmp_path / "workspaces"
    run = Run.objects.create(owner=make_user(), task="t")
    workspace = workspace_checkout(run.pk, "links")
    shell = Shell(COMMANDS.confinement)
    ctx = ToolContext(run_id=run.pk, step_id="links", workspace=workspace.path)

    # Inside, the targets do not exist; the links are made all the same.
    made = shell.call(
        {
            "command": f"ln -s {secrets}/secret_key key.txt && ln -s {secrets} folder && "
            "mkdir real && echo mine > real/mine.txt && ls"
        },
        ctx,
    )
    assert made == "exit 0\nfolder\nkey.txt\nreal\n"

    assert workspace_sync(workspace) == []
    stored = dict(RunFile.objects.filter(run=run).values_list("path", "content"))
    assert set(stored) == {"real/mine.txt"}
    assert all(SECRET.encode() not in bytes(content) for content in stored.values())


def test_a_folder_swapped_for_a_link_is_not_walked_into(tmp_path: Path, secrets: Path) -> None:
    root = tmp_path / "workspace"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "secret_key").write_text("mine")  # named like the file it wants
    assert [(p, read_at_most(fd, 100)) for p, fd, _ in regular_files(root)] == [
        ("sub/secret_key", b"mine")
    ]
    # Control: a walk through paths lists the file, then reads it by its path ...
    listed = [p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()]

    # ... and between the two, a dying process of the command swaps the folder for a link.
    os.rename(root / "sub", tmp_path / "moved")
    os.symlink(secrets, root / "sub")

    assert [p.read_text() for p in listed] == [SECRET]  # the server's file
    assert list(regular_files(root)) == []


def test_a_link_to_the_root_itself_is_not_walked(tmp_path: Path, secrets: Path) -> None:
    os.symlink(secrets, tmp_path / "workspace")
    assert list(regular_files(tmp_path / "workspace")) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a workspace to nobody")
def test_giving_a_workspace_to_nobody_gives_nothing_behind_a_link(
    tmp_path: Path, secrets: Path
) -> None:
    root = tmp_path / "workspace"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file.txt").write_text("mine")
    os.symlink(secrets, root / "folder")
    os.symlink(secrets / "secret_key", root / "key.txt")

    chown_tree(root, 65534, 65534)

    assert {p.name: p.stat().st_uid for p in (root, root / "sub", root / "sub" / "file.txt")} == {
        "workspace": 65534,
        "sub": 65534,
        "file.txt": 65534,
    }
    assert (secrets.stat().st_uid, (secrets / "secret_key").stat().st_uid) == (0, 0)
    assert (root / "key.txt").lstat().st_uid == 0  # the link itself, untouched too
