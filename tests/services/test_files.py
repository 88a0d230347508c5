"""A run's files live in the database; each step works on a local copy of its own, so a step
on one machine reads what a step on another wrote."""

from __future__ import annotations

import os

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, RunFile
from planner_ui.providers.scripted import script
from planner_ui.services.files import workspace_checkout, workspace_drop, workspace_sync
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from planner_ui.services.steps import step_execute
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(make_user) -> Run:
    return Run.objects.create(owner=make_user(), task="t")


def test_a_checkout_holds_the_runs_files_and_a_sync_stores_what_changed(run, tmp_path, settings):
    settings.AGENTSITE_WORKSPACES_DIR = tmp_path / "machine-a"
    first = workspace_checkout(run.pk, "write")
    (first.path / "notes").mkdir()
    (first.path / "notes" / "tea.md").write_text("Green tea.")
    (first.path / "coffee.md").write_text("Espresso.")
    assert workspace_sync(first) == []
    workspace_drop(first)
    assert not first.path.exists()

    settings.AGENTSITE_WORKSPACES_DIR = tmp_path / "machine-b"
    second = workspace_checkout(run.pk, "edit")
    assert (second.path / "notes" / "tea.md").read_text() == "Green tea."
    (second.path / "notes" / "tea.md").write_text("Green and black tea.")
    (second.path / "coffee.md").unlink()
    assert workspace_sync(second) == []

    stored = {f.path: (bytes(f.content), f.step_id) for f in RunFile.objects.filter(run=run)}
    assert stored == {"notes/tea.md": (b"Green and black tea.", "edit")}
    events = list(run.events.values_list("type", "payload__path"))
    assert events == [
        ("file.written", "coffee.md"),
        ("file.written", "notes/tea.md"),
        ("file.deleted", "coffee.md"),
        ("file.written", "notes/tea.md"),
    ]


def test_an_unchanged_file_is_not_stored_again(run, tmp_path, settings):
    settings.AGENTSITE_WORKSPACES_DIR = tmp_path
    workspace = workspace_checkout(run.pk, "a")
    (workspace.path / "a.txt").write_text("same")
    workspace_sync(workspace)
    assert workspace_sync(workspace) == []
    assert run.events.count() == 1


def test_files_over_the_limits_are_not_stored_and_the_step_is_told(run, tmp_path, settings):
    settings.AGENTSITE_WORKSPACES_DIR = tmp_path
    settings.AGENTSITE_RUN_FILE_MAX_BYTES = 10
    settings.AGENTSITE_RUN_FILES_MAX_BYTES = 15
    workspace = workspace_checkout(run.pk, "a")
    (workspace.path / "big.txt").write_text("x" * 11)
    (workspace.path / "one.txt").write_text("x" * 8)
    (workspace.path / "two.txt").write_text("x" * 8)
    problems = workspace_sync(workspace)
    assert problems == [
        "big.txt was not saved: 11 bytes is over the limit of 10 bytes per file "
        "(AGENTSITE_RUN_FILE_MAX_BYTES)",
        "two.txt was not saved: the run's files would take more than 15 bytes "
        "(AGENTSITE_RUN_FILES_MAX_BYTES)",
    ]
    assert list(RunFile.objects.values_list("path", flat=True)) == ["one.txt"]
    # Said once: the same oversized file is not reported after every call.
    assert workspace_sync(workspace) == [problems[1]]


def test_a_link_out_of_the_workspace_is_not_stored(run, tmp_path, settings):
    settings.AGENTSITE_WORKSPACES_DIR = tmp_path / "w"
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    workspace = workspace_checkout(run.pk, "a")
    os.symlink(secret, workspace.path / "link.txt")
    assert workspace_sync(workspace) == []
    assert not RunFile.objects.exists()


def test_a_step_reads_what_a_step_on_another_machine_wrote(make_user, tmp_path, settings):
    run = run_create(
        owner=make_user(),
        options=RunOptions(
            task="Save a list of three teas to teas.md. "
            "Then read teas.md and write a short summary."
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    for number, step_id in enumerate(["save-list-three-teas", "read-teas-md"]):
        # Each step on a machine of its own: nothing on disk is shared.
        settings.AGENTSITE_WORKSPACES_DIR = tmp_path / f"machine-{number}"
        step_execute(run.pk, step_id, f"worker-{number}")
    run.refresh_from_db()
    read = run.steps.get(step_id="read-teas-md")
    assert read.status == StepStatus.SUCCEEDED, read.error
    assert RunFile.objects.get(run=run, path="teas.md").step_id == "save-list-three-teas"
    content = bytes(RunFile.objects.get(run=run, path="teas.md").content).decode()
    result = run.events.get(step_id="read-teas-md", type="step.tool_result")
    assert result.payload["content"] == content and not result.payload["is_error"]
    # Both machines' local copies are gone once their steps ended.
    assert [p for n in range(2) for p in (tmp_path / f"machine-{n}").glob("run-*/*")] == []


NOTES_PLAN = {
    "goal": "Summarize the notes",
    "steps": [
        {
            "id": "read-notes",
            "title": "Read the notes",
            "instruction": "Read notes.md and summarize it.",
            "role": "researcher",
            "tools": ["read_file"],
            "depends_on": [],
        }
    ],
}
REVISED_PLAN = {
    "goal": "Summarize the notes",
    "steps": [
        {
            "id": "summarize-topic",
            "title": "Summarize from memory",
            "instruction": "Summarize what is known about the topic.",
            "role": "writer",
            "tools": [],
            "depends_on": [],
        }
    ],
}


def test_a_needed_file_nobody_wrote_fails_the_step_and_the_run_says_it_lost_it(make_user):
    script("notes-planner").plan(NOTES_PLAN).plan(REVISED_PLAN)
    script("notes-executor").tool_call("read_file", {"path": "notes.md"}).text(
        "A summary without the notes."
    ).text("# Summary\n\nA summary without the notes.")
    routes = {"planner": "scripted:notes-planner", "executor": "scripted:notes-executor"}
    run = run_create(
        owner=make_user(),
        options=RunOptions(task="Summarize notes.md", routes=routes, replan_mode="auto"),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)

    failed = run.events.get(type="step.failed")
    assert failed.step_id == "read-notes"
    assert failed.payload["error"] == (
        "needs the file 'notes.md', which no step of this run wrote (the run's files: none yet)"
    )
    assert run.status == RunStatus.SUCCEEDED
    assert run.warnings == [
        "step 'read-notes' failed (needs the file 'notes.md', which no step of this run wrote "
        "(the run's files: none yet)) and the re-plan went around it: the deliverable may miss "
        "what it was for"
    ]
    assert (run.outcome, run.outcome_reason) == (
        "succeeded_with_warnings",
        "Step 'read-notes' failed and was re-planned around",
    )


def test_a_missing_file_the_step_may_write_is_only_an_answer_to_the_model(make_user):
    plan = {
        **NOTES_PLAN,
        "steps": [{**NOTES_PLAN["steps"][0], "tools": ["read_file", "write_file"]}],
    }
    script("draft-planner").plan(plan)
    script("draft-executor").tool_call("read_file", {"path": "notes.md"}).text(
        "Started afresh."
    ).text("# Done")
    routes = {"planner": "scripted:draft-planner", "executor": "scripted:draft-executor"}
    run = run_create(owner=make_user(), options=RunOptions(task="t", routes=routes))
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED and run.warnings == []
    result = run.events.get(type="step.tool_result")
    assert result.payload["is_error"] and "no file 'notes.md'" in result.payload["content"]
