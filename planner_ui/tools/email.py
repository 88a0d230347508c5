"""Send an email through the mailer the services hand in: it reaches a person, so its effect
is SEND."""

from __future__ import annotations

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

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
        if ctx.mailer is None:
            raise ToolError("send_email: no mail server is set up for this run")
        # Mail has no idempotency protocol; the header at least lets a receiving system (or a
        # person reading the source) spot a retried duplicate.
        headers = {"X-Idempotency-Key": ctx.idempotency_key} if ctx.idempotency_key else {}
        ctx.mailer(str(args.to), args.subject, args.body, headers)
        return f"sent email to {args.to} with subject {args.subject!r}"
