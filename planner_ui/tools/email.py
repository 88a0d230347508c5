"""Send an email through Django's mail backend: it reaches a person, so its effect is SEND."""

from __future__ import annotations

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect

from .base import Tool, ToolContext


class SendEmailInput(BaseModel):
    to: str = Field(
        pattern=r"^[^@\s<>,;]+@[^@\s<>,;]+$", max_length=254, description="One recipient address."
    )
    # A newline in a subject is a header injection; Django would refuse it only at send time.
    subject: str = Field(min_length=1, max_length=200, pattern=r"^[^\r\n]*$")
    body: str = Field(max_length=20_000)


class SendEmail(Tool):
    name = "send_email"
    description = "Send a plain-text email to one recipient. Irreversible."
    Input = SendEmailInput
    effect = Effect.SEND

    def run(self, args: SendEmailInput, ctx: ToolContext) -> str:
        # Imported here so the tool registry stays importable without Django configured.
        from django.conf import settings
        from django.core.mail import EmailMessage

        # Mail has no idempotency protocol; the header at least lets a receiving system (or a
        # person reading the source) spot a retried duplicate.
        headers = {"X-Idempotency-Key": ctx.idempotency_key} if ctx.idempotency_key else {}
        EmailMessage(
            args.subject, args.body, settings.DEFAULT_FROM_EMAIL, [str(args.to)], headers=headers
        ).send()
        return f"sent email to {args.to} with subject {args.subject!r}"
