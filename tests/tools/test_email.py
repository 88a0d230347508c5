"""send_email: irreversible, so refused without auto-approve; sent through Django's mail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.email import SendEmail

GOOD = {"to": "bob@example.org", "subject": "Weekly report", "body": "All steps finished."}


@pytest.fixture
def locmem_mail(settings: Any) -> list[mail.EmailMessage]:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "agentsite@test.invalid"
    mail.outbox = []
    return mail.outbox


def context(*, allow_irreversible: bool) -> ToolContext:
    return ToolContext(
        run_id=1,
        step_id="notify",
        workspace=Path("/nonexistent"),
        allow_irreversible=allow_irreversible,
    )


def test_without_auto_approve_the_call_is_refused_and_nothing_is_sent(
    locmem_mail: list[mail.EmailMessage],
) -> None:
    with pytest.raises(ToolError) as caught:
        SendEmail().call(GOOD, context(allow_irreversible=False))

    assert str(caught.value) == (
        "send_email is irreversible and this run was not started with auto-approve; the call "
        "was not made. Finish the step without it and say what you would have sent."
    )
    assert mail.outbox == []


def test_with_auto_approve_the_email_is_sent(locmem_mail: list[mail.EmailMessage]) -> None:
    result = SendEmail().call(GOOD, context(allow_irreversible=True))

    assert result == "sent email to bob@example.org with subject 'Weekly report'"
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["bob@example.org"]
    assert sent.subject == "Weekly report"
    assert sent.body == "All steps finished."
    assert sent.from_email == "agentsite@test.invalid"


def test_the_tool_is_marked_irreversible() -> None:
    assert SendEmail.irreversible is True


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
def test_invalid_arguments_are_named_before_the_gate(
    locmem_mail: list[mail.EmailMessage], arguments: Any, message: str
) -> None:
    # Validation comes first, so the model learns what is wrong even where the gate would refuse.
    for allowed in (False, True):
        with pytest.raises(ToolError) as caught:
            SendEmail().call(arguments, context(allow_irreversible=allowed))
        assert str(caught.value) == message
    assert mail.outbox == []


def test_a_subject_with_a_newline_is_refused_as_an_argument(
    locmem_mail: list[mail.EmailMessage],
) -> None:
    arguments = {**GOOD, "subject": "Report\nBcc: eve@example.org"}
    with pytest.raises(ToolError, match=r"^send_email: invalid arguments: 'subject' "):
        SendEmail().call(arguments, context(allow_irreversible=True))
    assert mail.outbox == []
