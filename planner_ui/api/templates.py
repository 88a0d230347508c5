"""Plan templates over the API: list and read them, save one (from a run's plan or as JSON),
run one with values, list its runs, and set its webhook. The webhook itself is answered
without a personal token: its secret is the template's own (see `webhook`)."""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from planner_ui.core.bounds import JsonRefused, RowId, TokenBudget, UsdBudget, loads_bounded
from planner_ui.core.run_options import RunOptions
from planner_ui.core.templates import TemplateParameter
from planner_ui.models import PlanTemplate, PlanTemplateVersion, Run
from planner_ui.selectors.run_json import run_json
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.selectors.templates import (
    template_get_for_user,
    template_get_owned,
    template_list_for_user,
    template_runs_for_user,
    template_version,
)
from planner_ui.services.templates import (
    MAX_NAME_CHARS,
    template_for_webhook,
    template_run,
    template_run_by_trigger,
    template_save,
    template_save_from_run,
    template_schedule_set,
    template_trigger_policy_set,
    template_webhook_clear,
    template_webhook_mapping_set,
    template_webhook_set,
    template_webhook_values,
)
from planner_ui.signed_in import SignedInRequest

from .auth import within_rate
from .schemas import TEXT, RunOut

router = Router(tags=["templates"])

# Checked by core.templates, which names each refused value (a boolean, a list, ...).
Values = dict[str, Any]


class TemplateVersionOut(Schema):
    number: int
    task: str
    plan: dict[str, Any]
    parameters: list[TemplateParameter]
    note: str
    source_run: int | None
    created_at: str


class TriggerPolicy(Schema):
    tool_policy: str = Field(max_length=16, description='"ask", "auto" or "dry_run".')
    auto_tools: list[str] = Field(default_factory=list, max_length=20)


class WebhookMappingIn(Schema):
    mapping: dict[str, Annotated[str, Field(max_length=200)]] = Field(
        max_length=20,
        description="Parameter name to a JSON path into the webhook's body: $.name, "
        "$['a key'], $.items[0]; {} for a body that is the values themselves.",
    )


class ScheduleIn(Schema):
    schedule: str = Field(
        max_length=100,
        description='"every 30 minutes", or a cron line in UTC ("0 8 * * 1-5"); "" for none.',
    )
    values: Values = Field(default_factory=dict, description="The values its runs get.")


class ScheduleOut(ScheduleIn):
    next_run_at: str | None
    error: str = Field(description="Why its last run could not start; empty if it did.")


class TemplateOut(Schema):
    template_id: int
    name: str
    description: str
    shared: bool
    owner: str
    mine: bool
    # The owner's own settings: null for anyone else (a shared template lends its plan, not
    # the values its owner's schedule runs with or how their webhook reads bodies).
    webhook: bool | None = Field(description="Whether its webhook is on; null unless yours.")
    webhook_mapping: dict[str, str] | None = Field(
        description="Where in the webhook's JSON body each parameter's value is "
        '({"title": "$.ticket.title"}); empty: the body is the values themselves. Null '
        "unless yours."
    )
    trigger_policy: TriggerPolicy | None = Field(
        description="What the runs its triggers start do with irreversible calls; null unless "
        "yours."
    )
    schedule: ScheduleOut | None = Field(description="Its schedule; null unless yours.")
    latest: TemplateVersionOut
    versions: list[int]


class TemplateIn(Schema):
    name: str = Field(max_length=MAX_NAME_CHARS, description="An existing name: a new version.")
    description: str | None = Field(None, max_length=TEXT)
    task: str = Field(max_length=10_000, description="With {name} placeholders.")
    plan: dict[str, Any] = Field(description="A plan, its texts with {name} placeholders.")
    parameters: list[TemplateParameter] = Field(
        default_factory=list, description="Each placeholder's type, default and check."
    )
    note: str = Field("", max_length=300)


class Replacement(Schema):
    text: str = Field(max_length=500, description="Text of the run's task and plan...")
    parameter: str = Field(max_length=40, description="...that becomes {parameter}.")


class TemplateFromRunIn(Schema):
    name: str = Field(max_length=MAX_NAME_CHARS)
    version: RowId | None = Field(None, description="The run's plan version; default: current.")
    task: str | None = Field(None, max_length=10_000, description="Default: the run's task.")
    replace: list[Replacement] = Field(default_factory=list, max_length=20)
    description: str | None = Field(None, max_length=TEXT)


class TemplateRunIn(Schema):
    values: Values = Field(default_factory=dict, description="A value per parameter.")
    version: RowId | None = Field(None, description="Default: the latest version.")
    auto_approve: bool = Field(False, description="Run the plan without reviewing it first.")
    tool_policy: str = Field(
        "ask", max_length=16, description='Irreversible calls: "ask", "auto" or "dry_run".'
    )
    auto_tools: list[str] = Field(default_factory=list, max_length=20)
    budget_tokens: TokenBudget | None = None
    budget_usd: UsdBudget | None = None


class TemplateRunOut(Schema):
    run_id: int
    version: int
    values: dict[str, str]
    trigger: str = Field(description='What started it: "form", "api", "webhook" or "command".')
    status: str
    outcome: str | None
    created_at: str
    url: str


class WebhookOut(Schema):
    url: str
    token: str = Field(description="Shown once: send it as Authorization: Bearer <token>.")


class TriggeredOut(Schema):
    run_id: int
    url: str
    status: str


def _version_out(version: PlanTemplateVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "task": version.task,
        "plan": version.plan,
        "parameters": version.parameters,
        "note": version.note,
        "source_run": version.source_run_id,
        "created_at": version.created_at.isoformat(),
    }


def _template_out(request: HttpRequest, template: PlanTemplate) -> dict[str, Any]:
    versions = list(template.versions.all())
    mine = template.owner_id == request.user.pk
    out: dict[str, Any] = {
        "template_id": template.pk,
        "name": template.name,
        "description": template.description,
        "shared": template.shared,
        "owner": template.owner.get_username(),
        "mine": mine,
        "webhook": None,
        "webhook_mapping": None,
        "trigger_policy": None,
        "schedule": None,
        "latest": _version_out(versions[-1]),
        "versions": [v.number for v in versions],
    }
    if mine:  # as the page: only the owner sees and sets the triggers
        out["webhook"] = bool(template.webhook_digest)
        out["webhook_mapping"] = template.webhook_mapping
        out["trigger_policy"] = {
            "tool_policy": template.trigger_policy,
            "auto_tools": template.trigger_auto_tools,
        }
        out["schedule"] = {
            "schedule": template.schedule,
            "values": template.schedule_values,
            "next_run_at": template.next_run_at.isoformat() if template.next_run_at else None,
            "error": template.schedule_error,
        }
    return out


def _run_out(request: HttpRequest, run: Run) -> dict[str, Any]:
    version = run.template_version
    assert version is not None  # one of the template's runs
    return {
        "run_id": run.pk,
        "version": version.number,
        "values": run.template_values,
        "trigger": run.template_trigger,
        "status": run.status,
        "outcome": run.outcome or None,
        "created_at": run.created_at.isoformat(),
        "url": request.build_absolute_uri(reverse("run_detail", args=[run.pk])),
    }


@router.get("/templates", response=list[TemplateOut], summary="Your templates and shared ones")
def templates(request: SignedInRequest) -> list[dict[str, Any]]:
    found = template_list_for_user(request.user).prefetch_related("versions")
    return [_template_out(request, t) for t in found if t.latest_number]


@router.get("/templates/{template_id}", response=TemplateOut, summary="A template")
def detail(request: SignedInRequest, template_id: int) -> dict[str, Any]:
    return _template_out(request, template_get_for_user(request.user, template_id))


@router.post(
    "/templates",
    response={201: TemplateOut},
    summary="Save a template as JSON (a new version if you have one of that name)",
)
def save(request: SignedInRequest, payload: TemplateIn) -> Status[dict[str, Any]]:
    saved = template_save(
        user=request.user,
        name=payload.name,
        task=payload.task,
        plan=payload.plan,
        parameters=payload.parameters,
        description=payload.description,
        note=payload.note or "imported as JSON",
    )
    return Status(201, _template_out(request, saved.template))


@router.post(
    "/runs/{run_id}/plan/template",
    response={201: TemplateOut},
    summary="Save a run's plan as a template, turning text into parameters",
)
def save_from_run(
    request: SignedInRequest, run_id: int, payload: TemplateFromRunIn
) -> Status[dict[str, Any]]:
    run = run_get_for_user(request.user, run_id)
    versions = run.plan_versions.order_by("-number")
    version = (
        versions.first()
        if payload.version is None
        else versions.filter(number=payload.version).first()
    )
    if version is None:
        raise HttpError(404, f"Run {run.pk} has no such plan version.")
    saved = template_save_from_run(
        user=request.user,
        version=version,
        name=payload.name,
        task=payload.task,
        replace=[(r.text, r.parameter) for r in payload.replace],
        description=payload.description,
    )
    return Status(201, _template_out(request, saved.template))


@router.post(
    "/templates/{template_id}/runs",
    response={201: RunOut},
    summary="Run a template with values (its plan waits for approval unless auto_approve)",
)
def run(
    request: SignedInRequest, template_id: int, payload: TemplateRunIn
) -> Status[dict[str, Any]]:
    template = template_get_for_user(request.user, template_id)
    try:
        version = template_version(template, payload.version)
    except PlanTemplateVersion.DoesNotExist:
        raise HttpError(404, f"Template {template.pk} has no version {payload.version}.") from None
    options = RunOptions(
        task="",
        auto_approve=payload.auto_approve,
        tool_policy=payload.tool_policy,
        auto_tools=payload.auto_tools,
        budget_tokens=payload.budget_tokens,
        budget_usd=payload.budget_usd,
    )
    started = template_run(
        version=version,
        user=request.user,
        values=payload.values,
        options=options,
        trigger=Run.Trigger.API,
    )
    return Status(201, run_json(started))


@router.get(
    "/templates/{template_id}/runs",
    response=list[TemplateRunOut],
    summary="Your runs from the template, newest first, with their values",
)
def runs(request: SignedInRequest, template_id: int) -> list[dict[str, Any]]:
    template = template_get_for_user(request.user, template_id)
    return [_run_out(request, r) for r in template_runs_for_user(template, request.user)[:200]]


@router.post(
    "/templates/{template_id}/webhook",
    response={201: WebhookOut},
    summary="Make (or replace) the template's webhook secret; shown once",
)
def webhook_set(request: SignedInRequest, template_id: int) -> Status[dict[str, Any]]:
    template = template_get_owned(request.user, template_id)
    token = template_webhook_set(template, request.user)
    url = request.build_absolute_uri(reverse("api-v1:template_webhook", args=[template.pk]))
    return Status(201, {"url": url, "token": token})


@router.put(
    "/templates/{template_id}/webhook-mapping",
    response=TemplateOut,
    summary="Where in the webhook's JSON body each parameter's value is",
)
def webhook_mapping(request: SignedInRequest, template_id: int, payload: WebhookMappingIn) -> Any:
    template = template_get_owned(request.user, template_id)
    template_webhook_mapping_set(template, request.user, payload.mapping)
    return _template_out(request, template)


@router.put(
    "/templates/{template_id}/trigger-policy",
    response=TemplateOut,
    summary="What the runs its triggers start do with irreversible calls",
)
def trigger_policy(request: SignedInRequest, template_id: int, payload: TriggerPolicy) -> Any:
    template = template_get_owned(request.user, template_id)
    template_trigger_policy_set(template, request.user, payload.tool_policy, payload.auto_tools)
    return _template_out(request, template)


@router.put(
    "/templates/{template_id}/schedule",
    response=TemplateOut,
    summary="Run the template on a schedule with these values (or stop)",
)
def schedule(request: SignedInRequest, template_id: int, payload: ScheduleIn) -> Any:
    template = template_get_owned(request.user, template_id)
    template_schedule_set(template, request.user, payload.schedule, payload.values)
    return _template_out(request, template)


@router.delete(
    "/templates/{template_id}/webhook", response={204: None}, summary="Turn the webhook off"
)
def webhook_clear(request: SignedInRequest, template_id: int) -> Status[None]:
    template_webhook_clear(template_get_owned(request.user, template_id), request.user)
    return Status(204, None)


@router.post(
    "/hooks/templates/{template_id}",
    auth=None,
    response={201: TriggeredOut},
    url_name="template_webhook",
    summary="Start a run of a template from another system",
)
def webhook(request: HttpRequest, template_id: int) -> Status[dict[str, Any]]:
    """Authenticated by the template's own webhook secret (`Authorization: Bearer whk_...`),
    not a personal token. The JSON body maps parameter names to values (`{"city": "Lyon"}`),
    or, where the template has a webhook mapping, is read through its JSON paths
    (`{"ticket": {"title": ...}}` with `title` = `$.ticket.title`).
    The run belongs to the template's owner, and its plan waits for them: a webhook approves
    nothing. 403 for a wrong or absent secret, 422 naming each refused value, 429 when the
    template's webhook was called too often this minute."""
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    template = template_for_webhook(template_id, raw.strip()) if scheme == "Bearer" else None
    if template is None:
        raise HttpError(403, "This webhook does not open with that token.")
    allowed, wait = within_rate(
        "webhook-rate", template.webhook_digest[:24], settings.AGENTSITE_WEBHOOK_RATE_PER_MINUTE
    )
    if not allowed:
        raise HttpError(429, f"Too many calls to this webhook: try again in {wait:.0f} s.")
    body = request.body.strip()
    try:
        values = loads_bounded(body) if body else {}
    except (JsonRefused, ValueError) as exc:
        raise HttpError(422, f"The body is not JSON: {exc}") from None
    started = template_run_by_trigger(template, template_webhook_values(template, values))
    url = request.build_absolute_uri(reverse("run_detail", args=[started.pk]))
    return Status(201, {"run_id": started.pk, "url": url, "status": started.status})
