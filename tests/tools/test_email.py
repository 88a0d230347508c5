"""send_email: tagged SEND, and sent through Django's mail whenever it is called.

Whether a call may happen is the executor's runner's decision (tests/agents); the tool only
validates its arguments and sends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError
from planner_ui.services.mail import run_mailer
from planner_ui.tools import ToolContext
from planner_ui.tools.email import SendEmail

GOOD = {"to": "bob@example.org", "subject": "Weekly report", "body": "All steps finished."}


@pytest.fixture
def locmem_mail(settings: Any) -> list[mail.EmailMessage]:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "agentsite@test.invalid"
    mail.outbox = []
    return mail.outbox


def context(idempotency_key: str = "") -> ToolContext:
    return ToolContext(
        run_id=1,
        step_id="notify",
        workspace=Path("/nonexistent"),
        idempotency_key=idempotency_key,
        mailer=run_mailer(1, "notify"),
    )


def test_the_tool_sends_so_it_is_irreversible() -> None:
    assert SendEmail.effect is Effect.SEND
    assert SendEmail.irreversible is True


def test_a_call_sends_the_email(locmem_mail: list[mail.EmailMessage]) -> None:
    result = SendEmail().call(GOOD, context())

    assert result == "sent email to bob@example.org with subject 'Weekly report'"
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["bob@example.org"]
    assert sent.subject == "Weekly report"
    assert sent.body == "All steps finished."
    assert sent.from_email == "agentsite@test.invalid"
    assert sent.extra_headers == {}


def test_the_idempotency_key_travels_as_a_header(locmem_mail: list[mail.EmailMessage]) -> None:
    SendEmail().call(GOOD, context("run-1-notify-call-1"))

    [sent] = mail.outbox
    assert sent.extra_headers == {"X-Idempotency-Key": "run-1-notify-call-1"}
    assert sent.message()["X-Idempotency-Key"] == "run-1-notify-call-1"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"to": "bob@example.org", "body": "hi"},
            "send_email: invalid arguments: 'subject' field required",
        ),
        (
            {**GOOD, "subject": ""},
            "send_email: invalid arguments: 'subject' string should have at least 1 character",
        ),
        (
            {**GOOD, "to": "bob"},
            "send_email: invalid arguments: 'to' string should match pattern "
            "'^[^@\\s<>,;]+@[^@\\s<>,;]+$'",
        ),
        (
            {**GOOD, "to": "bob@example.org, eve@example.org"},
            "send_email: invalid arguments: 'to' string should match pattern "
            "'^[^@\\s<>,;]+@[^@\\s<>,;]+$'",
        ),
        (
            {"to": 7},
            "send_email: invalid arguments: 'to' input should be a valid string; "
            "'subject' field required; 'body' field required",
        ),
        (["bob@example.org"], "send_email: arguments must be a JSON object"),
    ],
)
def test_invalid_arguments_are_named_and_nothing_is_sent(
    locmem_mail: list[mail.EmailMessage], arguments: Any, message: str
) -> None:
    with pytest.raises(ToolError) as caught:
        SendEmail().call(arguments, context())
    assert str(caught.value) == message
    assert mail.outbox == []


def test_a_subject_with_a_newline_is_refused_as_an_argument(
    locmem_mail: list[mail.EmailMessage],
) -> None:
    arguments = {**GOOD, "subject": "Report\nBcc: eve@example.org"}
    with pytest.raises(ToolError, match=r"^send_email: invalid arguments: 'subject' "):
        SendEmail().call(arguments, context())
    assert mail.outbox == []
