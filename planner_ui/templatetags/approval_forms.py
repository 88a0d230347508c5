"""What an approval card shows: the call's arguments as a person reads them, the form to edit
them (as the person left it, when an edit was refused), and once a call was approved with an
edit, what the model asked for beside what was sent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django import template

from planner_ui.core.approval_form import (
    ArgumentRow,
    FormDraft,
    FormField,
    compare_arguments,
    form_fields,
    form_posted,
    readable,
    with_errors,
)
from planner_ui.models import Approval
from planner_ui.selectors.tools import tool_for_approval

register = template.Library()

# Where a view leaves a refused edit for the card to show again: on the request, because the
# card is rendered deep inside pages (the run page, the inbox) that the view only asks for.
DRAFT_ATTRIBUTE = "approval_draft"


@dataclass(frozen=True)
class ApprovalForm:
    fields: list[FormField]
    raw: str
    mode: str  # "fields" or "json": which of the two the Approve button sends
    message: str
    # Shown again after a refusal: open, and this time not kept over by a live refresh.
    refused: bool
    # The tool is gone (its MCP server was removed): its arguments cannot be checked.
    unknown_tool: bool = False


@register.simple_tag(takes_context=True)
def approval_form(context: template.Context, approval: Approval) -> ApprovalForm:
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    tool = tool_for_approval(approval.run, approval.tool)
    fields = form_fields(tool.form_schema(), arguments) if tool is not None else []
    request = context.get("request")
    draft: FormDraft | None = getattr(request, DRAFT_ATTRIBUTE, None)
    if draft is None or draft.approval_id != approval.pk:
        return ApprovalForm(
            fields=fields,
            raw=json.dumps(approval.arguments, indent=2, ensure_ascii=False),
            mode="fields" if fields else "json",
            message="",
            refused=False,
            unknown_tool=tool is None,
        )
    mode = draft.mode if fields else "json"
    message = draft.message
    named = {field.name for field in fields}
    if mode == "fields" and draft.problems and set(draft.problems) <= named:
        # Each message is at its field; the whole refusal is on top of the page.
        message = "Nothing was decided: correct what is marked below, then approve again."
    return ApprovalForm(
        fields=with_errors(form_posted(fields, draft.posted), draft.problems),
        raw=draft.raw,
        mode=mode,
        message=message,
        refused=True,
        unknown_tool=tool is None,
    )


@register.simple_tag
def approval_arguments(approval: Approval) -> list[tuple[str, str]]:
    """The call's arguments, each as text a person reads (no JSON escapes)."""
    arguments: Any = approval.arguments
    if not isinstance(arguments, dict):
        return [("arguments", readable(arguments))]
    return [(str(name), readable(value)) for name, value in arguments.items()]


@register.simple_tag
def approval_changes(approval: Approval) -> list[ArgumentRow]:
    """What the model asked for beside what was sent, argument by argument."""
    asked = approval.arguments if isinstance(approval.arguments, dict) else {}
    sent = approval.approved_arguments if isinstance(approval.approved_arguments, dict) else {}
    return compare_arguments(asked, sent)
