"""Mail for the send_email tool, through Django's configured backend (EMAIL_* settings)."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMessage


def mail_send(to: str, subject: str, body: str, headers: dict[str, str]) -> None:
    EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [to], headers=headers).send()
