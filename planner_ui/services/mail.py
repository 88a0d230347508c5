"""Mail for the send_email tool, through Django's configured backend (EMAIL_* settings).

With no mail server (no EMAIL_HOST: Django's file-based backend, the default) a message is kept
with the run's files, under sent_mail/, rather than in a folder of whichever machine's worker
sent it: it is read on the run page from any machine, and goes with the run's other files.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from planner_ui.tools.base import Mailer

from .files import run_file_write

FILE_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
MAIL_FOLDER = "sent_mail"


def run_mailer(run_id: int, step_id: str) -> Mailer:
    """How a step of the run sends mail."""

    def send(to: str, subject: str, body: str, headers: dict[str, str]) -> None:
        message = EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [to], headers=headers)
        if settings.EMAIL_BACKEND != FILE_BACKEND:
            message.send()
            return
        # Named as Django's file backend names its files, by time and then a unique part.
        name = f"{timezone.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}.eml"
        run_file_write(run_id, step_id, f"{MAIL_FOLDER}/{name}", message.message().as_bytes())

    return send
