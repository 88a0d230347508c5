"""A step as its card on the run page shows it (_step_cards.html): the one step shape
(core.step_record.StepRecord) with what else its row says and what the card offers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict

from planner_ui.core.estimate import StepEstimate
from planner_ui.core.step_record import StepRecord
from planner_ui.models import Approval, Step
from planner_ui.selectors.step_record import record_fields
from planner_ui.template_rows import TemplateRow
from planner_ui.templatetags.planner_ui import thousands, usd


class StepCard(StepRecord, TemplateRow):
    model_config = ConfigDict(arbitrary_types_allowed=True)  # its approvals are rows

    status_label: str
    tokens_cache_read: int
    duration_s: float | None
    # The run whose output it reused, in a fork; its worker's last sign of life.
    reused_from_id: int | None
    heartbeat_at: datetime | None
    # Its tool calls and results from the log, and its approvals, oldest first.
    calls: list[dict[str, Any]]
    approvals: list[Approval]
    # Folded to a few lines, with "Show more"; what the card sends of it, and where the rest
    # comes from when it is unfolded ("" when it is all sent: core.fold).
    output_long: bool
    output_shown: str
    output_rest_url: str
    editable: bool
    # Why it may not be edited, where the plan otherwise may be.
    locked_reason: str
    retryable: bool
    forkable: bool
    # What it is estimated to use (estimate_note), written out once in Python: as template
    # tags it was a tenth of the cards' render at 1,000 steps.
    estimate_note: str
    # Where its retry and fork forms (step_again) and its edit forms (step_editor) come from.
    again_url: str
    editor_url: str
    # Its worker stopped refreshing the heartbeat: the sweep hands the step to another.
    worker_lost: bool


# What get_status_display() says, looked up once: it rebuilt the choices each call, a tenth of
# the cards' time at 1,000 steps.
_STATUS_LABELS = dict(Step._meta.get_field("status").flatchoices)


def step_card(step: Step, **offers: Any) -> StepCard:
    """The card of `step`, with what the page worked out for it (`offers`: calls, approvals,
    output_long, output_shown, output_rest_url, editable, locked_reason, retryable, forkable,
    again_url, editor_url, worker_lost, estimate_note)."""
    return StepCard(
        **record_fields(step),
        status_label=_STATUS_LABELS.get(step.status, step.status),
        tokens_cache_read=step.tokens_cache_read,
        duration_s=step.duration_s,
        reused_from_id=step.reused_from_id,
        heartbeat_at=step.heartbeat_at,
        **offers,
    )


def estimate_note(estimate: StepEstimate | None, critical: bool) -> str:
    """ "estimated 2 calls, ~1,200 / ~400 tokens, ~$0.0031, on the critical path", or "" for
    a step the estimate does not know."""
    if estimate is None:
        return ""
    calls = estimate.calls
    note = (
        f"estimated {calls} call{'' if calls == 1 else 's'}, ~{thousands(estimate.tokens_in)}"
        f" / ~{thousands(estimate.tokens_out)} tokens"
    )
    if estimate.cost_usd is not None:
        note += f", ~{usd(estimate.cost_usd)}"
    return note + (", on the critical path" if critical else "")
