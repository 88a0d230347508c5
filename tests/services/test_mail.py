"""send_email with no mail server: the message is kept with the run's files, which every machine
reads, not in a folder on the disk of whichever worker sent it."""

from __future__ import annotations

import email

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import RunFile
from planner_ui.providers.scripted import script
from planner_ui.services.files import workspace_checkout, workspace_drop
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_mail_server(settings, tmp_path):
    """As settings leave it without EMAIL_HOST (pytest-django swaps in its in-memory backend)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "sent_mail"
    return settings.EMAIL_FILE_PATH


def test_a_sent_mail_is_one_of_the_run_files(make_user, no_mail_server):
    step = {
        "id": "tell-bob",
        "title": "Tell Bob",
        "instruction": "Email bob@example.com that tea is ready.",
        "role": "writer",
        "tools": ["send_email"],
        "depends_on": [],
    }
    script("mail-planner").plan({"goal": "Tell Bob", "steps": [step]})
    script("mail-executor").tool_call(
        "send_email", {"to": "bob@example.com", "subject": "Tea", "body": "Tea is ready."}
    ).text("Told Bob.").text("# Bob knows")
    run = run_create(
        owner=make_user(),
        options=RunOptions(
            task="Tell Bob that tea is ready",
            routes={"planner": "scripted:mail-planner", "executor": "scripted:mail-executor"},
            tool_policy="auto",
            auto_tools=["send_email"],
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error

    (stored,) = RunFile.objects.filter(run=run, path__startswith="sent_mail/")
    assert stored.path.endswith(".eml") and stored.step_id == "tell-bob"
    message = email.message_from_bytes(bytes(stored.content))
    assert (message["To"], message["Subject"]) == ("bob@example.com", "Tea")
    assert message["X-Idempotency-Key"] == run.receipts.get().idempotency_key
    assert message.get_payload().strip() == "Tea is ready."
    written = run.events.get(type="file.written", payload__path=stored.path)
    assert written.payload["size"] == stored.size == len(bytes(stored.content))
    assert not no_mail_server.exists()  # nothing on this machine's disk

    # A step on any machine gets it with the run's other files.
    workspace = workspace_checkout(run.pk, "later")
    try:
        assert (workspace.path / stored.path).read_bytes() == bytes(stored.content)
    finally:
        workspace_drop(workspace)
