"""The outbox: an irreversible call under one idempotency key happens at most once."""

from __future__ import annotations

import pytest

from planner_ui.models import Run, ToolReceipt
from planner_ui.services.files import workspace_checkout
from planner_ui.services.gate import tool_context
from planner_ui.services.outbox import OutcomeUnknown, perform_once
from planner_ui.tools import get_tool

pytestmark = pytest.mark.django_db

MAIL = {"to": "bob@example.com", "subject": "Hello", "body": "Hi Bob"}


@pytest.fixture
def run(make_user) -> Run:
    return Run.objects.create(owner=make_user(), task="t")


def send(run: Run, key: str = "1:call_1") -> tuple[str, bool]:
    return perform_once(
        run_id=run.pk,
        step_id="mail",
        call_key=key,
        tool=get_tool("send_email"),
        arguments=MAIL,
        ctx=tool_context(workspace_checkout(run.pk, "mail")),
        authorized_by="alice",
    )


def test_a_repeated_call_reuses_the_stored_result(run, mailoutbox):
    first = send(run)
    second = send(run)
    assert first == second and first[1] is False
    assert len(mailoutbox) == 1
    receipt = ToolReceipt.objects.get()
    assert receipt.state == ToolReceipt.State.DONE and receipt.result == first[0]
    assert list(run.events.values_list("type", flat=True)) == ["tool.performing", "tool.receipt"]


def test_another_key_is_another_call(run, mailoutbox):
    send(run, "1:call_1")
    send(run, "2:call_1")
    assert len(mailoutbox) == 2


def test_a_call_left_in_flight_by_a_dead_worker_is_never_repeated(run, mailoutbox):
    # What a worker killed between writing the receipt and recording the result leaves.
    ToolReceipt.objects.create(
        run=run,
        step_id="mail",
        idempotency_key=f"agentsite-run{run.pk}-mail-1:call_1",
        tool="send_email",
        effect="send",
        arguments=MAIL,
        decision="run",
        authorized_by="alice",
    )
    with pytest.raises(OutcomeUnknown) as unknown:
        send(run)
    assert mailoutbox == []
    receipt = ToolReceipt.objects.get()
    assert receipt.state == ToolReceipt.State.UNKNOWN and unknown.value.receipt == receipt
    assert receipt.result.startswith("The outcome of this send_email call is unknown")
    assert run.events.filter(type="tool.unknown").count() == 1
    with pytest.raises(OutcomeUnknown):  # and stays so, for a person to decide
        send(run)
    assert mailoutbox == [] and run.events.filter(type="tool.unknown").count() == 1
