"""Plan templates: save a run's plan as one (a new version on each save), share it, and run it
with new values. A run from a template skips the planner: its plan is the template's, filled
in, and it waits for the person's approval like any other (the usual gates, budget and policy
apply from there)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from planner_ui.core.errors import AgentError
from planner_ui.core.json_path import (
    JsonPathError,
    mapping_text,
    parse_mapping,
    values_from_body,
)
from planner_ui.core.plan import Plan
from planner_ui.core.run_options import RunOptions
from planner_ui.core.schedule import ScheduleError, parse_schedule
from planner_ui.core.templates import (
    TemplateParameter,
    TemplateSpec,
    escape_placeholders,
    parameterize,
    template_check,
    template_fill,
)
from planner_ui.models import PlanTemplate, PlanTemplateVersion, PlanVersion, Run
from planner_ui.selectors.tools import tools_for_user

from .proposals import MAX_NOTE_CHARS, proposal_request
from .runs import policy_for, run_approve_plan, run_create_with_plan
from .search import search_index_template

MAX_NAME_CHARS = 100
log = logging.getLogger(__name__)


class TemplateRefused(AgentError):
    """A change to a template was refused; the message says why and `field` what it is about."""

    def __init__(self, message: str, *, field: str = "") -> None:
        self.field = field
        super().__init__(message)


def template_save(
    *,
    user: User,
    name: str,
    task: str,
    plan: Mapping[str, Any],
    parameters: Sequence[TemplateParameter | Mapping[str, Any]] = (),
    description: str | None = None,
    note: str = "",
    source_plan: PlanVersion | None = None,
) -> PlanTemplateVersion:
    """Save a template version: the first of a new template, or, when the person already has
    one of this name, its next version. Raises PlanValidationError or ParameterError (from
    core.templates) with every problem, TemplateRefused for the name."""
    name = name.strip()
    if not name:
        raise TemplateRefused("Give the template a name.", field="name")
    if len(name) > MAX_NAME_CHARS:
        raise TemplateRefused(
            f"A template's name is at most {MAX_NAME_CHARS} characters.", field="name"
        )
    spec = template_check(
        task.strip(),
        dict(plan),
        [p if isinstance(p, TemplateParameter) else dict(p) for p in parameters],
        known_tools=sorted(tools_for_user(user)),
    )
    try:
        with transaction.atomic():
            template, _ = PlanTemplate.objects.get_or_create(owner=user, name=name)
            template = PlanTemplate.objects.select_for_update().get(pk=template.pk)
            if description is not None:
                template.description = description.strip()
            template.save()
            last = template.versions.order_by("-number").first()
            version = PlanTemplateVersion.objects.create(
                template=template,
                number=(last.number + 1) if last else 1,
                task=spec.task,
                plan=spec.plan.model_dump(),
                parameters=[p.model_dump() for p in spec.parameters],
                note=note.strip(),
                source_run=source_plan.run if source_plan else None,
                source_plan=source_plan,
                created_by=user,
            )
            search_index_template(template)
            return version
    except IntegrityError:  # pragma: no cover - two first saves of one name at once
        raise TemplateRefused(
            "Another save of this template was made at the same time: save again.", field="name"
        ) from None


def template_save_from_run(
    *,
    user: User,
    version: PlanVersion,
    name: str,
    task: str | None = None,
    replace: Sequence[tuple[str, str]] = (),
    description: str | None = None,
    note: str = "",
) -> PlanTemplateVersion:
    """Save a plan version of the person's run as a template. The run's texts are taken as
    they are (braces in them escaped: they were never placeholders), then each (text, name)
    of `replace` turns that text into the parameter `{name}`, its default the text itself.
    `task`, when given, replaces the run's task (the person wrote placeholders into it)."""
    plan = Plan.model_validate(version.plan)
    base_task, plan = escape_placeholders(version.run.task, plan)
    template_task = base_task if task is None else task
    defaults: dict[str, str] = {}
    for literal, parameter in replace:
        template_task, plan = parameterize(template_task, plan, literal, parameter)
        defaults[parameter] = literal
    parameters = [TemplateParameter(name=n, default=d) for n, d in defaults.items()]
    return template_save(
        user=user,
        name=name,
        task=template_task,
        plan=plan.model_dump(),
        parameters=parameters,
        description=description,
        note=note or f"from run {version.run_id}, plan v{version.number}",
        source_plan=version,
    )


def _adapt_note(values: Mapping[str, str]) -> str:
    given = "; ".join(f"{name} = {value}" for name, value in values.items()) or "none"
    return (
        f"This plan comes from a template, filled in with these values: {given}. Adapt its "
        "steps to these values where they need it, and keep the rest as it is."
    )[:MAX_NOTE_CHARS]


def template_share(template: PlanTemplate, user: User, shared: bool) -> PlanTemplate:
    """Share a template with every user of the site, or stop sharing it: staff decide."""
    if not user.is_staff:
        raise TemplateRefused("Only staff share templates with everyone.", field="shared")
    template.shared = shared
    template.save(update_fields=["shared", "updated_at"])
    search_index_template(template)
    return template


def template_delete(template: PlanTemplate, user: User) -> None:
    """Delete a template and its versions. Its runs stay, with the values they were filled
    with; they no longer link to it."""
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner deletes it.")
    template.delete()


def version_spec(version: PlanTemplateVersion) -> TemplateSpec:
    return TemplateSpec(
        task=version.task,
        plan=Plan.model_validate(version.plan),
        parameters=[TemplateParameter.model_validate(p) for p in version.parameters],
    )


def template_run(
    *,
    version: PlanTemplateVersion,
    user: User,
    values: Mapping[str, Any],
    options: RunOptions | None = None,
    trigger: str = Run.Trigger.FORM,
    adapt: bool = False,
) -> Run:
    """Start a run of `version` filled with `values`: no planner, the plan waits for approval
    (or is approved at once if the options say so). `options` are the run's as on the task
    form; their task is the template's, filled. ParameterError names each value refused,
    PlanValidationError what the filled plan breaks, RunInputError a wrong option.

    With `adapt`, the planner is asked to adapt the filled plan to the values, as a revision
    the person accepts or discards on the run page (a diff, as for any revision); the plan is
    then never approved on its own."""
    filled = template_fill(version_spec(version), values, known_tools=sorted(tools_for_user(user)))
    options = (options or RunOptions(task="")).model_copy(update={"task": filled.task})
    label = f"template {version.template.name} v{version.number}"
    with transaction.atomic():
        run = run_create_with_plan(
            owner=user,
            options=options,
            plan=filled.plan,
            note=f"from {label}",
            template_version=version,
            template_values=filled.values,
            template_trigger=trigger,
        )
        if adapt:
            proposal_request(run_id=run.pk, base_version=1, note=_adapt_note(filled.values))
    if run.auto_approve and not adapt:
        run = run_approve_plan(run.pk)
    return run


# --- the webhook trigger ---------------------------------------------------------------------

WEBHOOK_PREFIX = "whk_"


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def template_webhook_set(template: PlanTemplate, user: User) -> str:
    """Give the template a new webhook secret (the old one stops working) and return it: it is
    kept as a digest only, so this is the one time anybody sees it."""
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner sets its webhook.", field="webhook")
    raw = WEBHOOK_PREFIX + secrets.token_urlsafe(32)
    template.webhook_digest = _digest(raw)
    template.save(update_fields=["webhook_digest", "updated_at"])
    return raw


def template_webhook_clear(template: PlanTemplate, user: User) -> None:
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner sets its webhook.", field="webhook")
    template.webhook_digest = ""
    template.save(update_fields=["webhook_digest", "updated_at"])


def template_for_webhook(template_id: int, raw: str) -> PlanTemplate | None:
    """The template whose webhook this secret opens, if its owner is active; None for any
    other case (no such template, no webhook, a wrong secret), so a caller learns nothing."""
    if not raw.startswith(WEBHOOK_PREFIX) or len(raw) > 200:
        return None
    template = (
        PlanTemplate.objects.select_related("owner")
        .filter(pk=template_id, owner__is_active=True)
        .exclude(webhook_digest="")
        .first()
    )
    if template is None or not hmac.compare_digest(template.webhook_digest, _digest(raw)):
        return None
    return template


def template_webhook_mapping_set(
    template: PlanTemplate, user: User, mapping: Mapping[str, str]
) -> PlanTemplate:
    """Say where in the webhook's JSON body each parameter's value is (`$.ticket.title`), or,
    with an empty mapping, that the body is the values themselves. Each name must be a
    parameter of the latest version; JsonPathError or TemplateRefused say what is wrong."""
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner sets its webhook.", field="webhook")
    latest = template.versions.order_by("-number").first()
    known = {p["name"] for p in latest.parameters} if latest else set()
    unknown = sorted(set(mapping) - known)
    if unknown:
        listed = ", ".join(sorted(known)) or "none"
        raise TemplateRefused(
            f"{', '.join(unknown)}: not a parameter of this template; its parameters: {listed}",
            field="webhook_mapping",
        )
    try:
        checked = parse_mapping(mapping_text(mapping))  # each path, as a line of the form
    except JsonPathError as exc:
        raise TemplateRefused(str(exc), field="webhook_mapping") from None
    template.webhook_mapping = checked
    template.save(update_fields=["webhook_mapping", "updated_at"])
    return template


def template_webhook_values(template: PlanTemplate, body: Any) -> dict[str, Any]:
    """The values a webhook's body gives: through the template's mapping when it has one,
    else the body is them (a JSON object). TemplateRefused when the body cannot be read so."""
    if template.webhook_mapping:
        return values_from_body(body, template.webhook_mapping)
    if not isinstance(body, dict):
        raise TemplateRefused("The body must be a JSON object of parameter values.")
    return body


def template_trigger_policy_set(
    template: PlanTemplate, user: User, mode: str, auto_tools: Sequence[str]
) -> PlanTemplate:
    """What the runs the template's triggers start do with irreversible calls: checked as a
    run's policy is (RunInputError says what is wrong)."""
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner sets its triggers' policy.")
    policy = policy_for(user, mode, auto_tools)
    template.trigger_policy = policy.mode
    template.trigger_auto_tools = sorted(policy.auto_tools)
    template.save(update_fields=["trigger_policy", "trigger_auto_tools", "updated_at"])
    return template


def template_run_by_trigger(
    template: PlanTemplate, values: Mapping[str, Any], trigger: str = Run.Trigger.WEBHOOK
) -> Run:
    """A run of the template's latest version for its owner, started by a trigger. A trigger
    approves nothing: the plan waits for the owner, and irreversible calls follow the
    template's trigger policy (ask, unless the owner said otherwise). The site's default
    budget applies, as it does to a run submitted from the form or runtask."""
    version = template.versions.order_by("-number").first()
    if version is None:  # pragma: no cover - a template is made with its first version
        raise TemplateRefused("This template has no version to run.")
    options = RunOptions(
        task="",
        tool_policy=template.trigger_policy,
        auto_tools=template.trigger_auto_tools,
        budget_tokens=settings.AGENTSITE_DEFAULT_BUDGET_TOKENS,
        budget_usd=settings.AGENTSITE_DEFAULT_BUDGET_USD,
    )
    return template_run(
        version=version,
        user=template.owner,
        values=values,
        options=options,
        trigger=trigger,
    )


# --- the schedule trigger --------------------------------------------------------------------


def template_schedule_set(
    template: PlanTemplate, user: User, text: str, values: Mapping[str, Any]
) -> PlanTemplate:
    """Set the template's schedule and the values its runs are filled with (checked now against
    the latest version, so a schedule is not set to fail), or clear it with an empty text.
    TemplateRefused for the schedule, ParameterError or PlanValidationError for the values."""
    if template.owner_id != user.pk:
        raise TemplateRefused("Only the template's owner sets its schedule.", field="schedule")
    if not text.strip():
        template.schedule, template.schedule_values, template.next_run_at = "", {}, None
    else:
        try:
            schedule = parse_schedule(text)
            next_run_at = schedule.next_after(timezone.now())
        except ScheduleError as exc:
            raise TemplateRefused(str(exc), field="schedule") from None
        latest = template.versions.latest("number")
        template_fill(version_spec(latest), values, known_tools=sorted(tools_for_user(user)))
        given = {name: value for name, value in values.items() if value not in (None, "")}
        template.schedule, template.schedule_values = schedule.text, given
        template.next_run_at = next_run_at
    template.schedule_error = ""
    template.save(
        update_fields=[
            "schedule",
            "schedule_values",
            "next_run_at",
            "schedule_error",
            "updated_at",
        ]
    )
    return template


def template_schedules_due(now: datetime | None = None) -> int:
    """Start a run of every template whose schedule is due; how many started. Asked for by
    Celery beat every AGENTSITE_SCHEDULE_TICK_S (tasks.template_schedules) and by every
    worker's sweep timer (services.sweeper), for installations without beat. Each due run is
    claimed by moving next_run_at on with a conditional UPDATE, in the same transaction as the
    run: a beat restarted, or two beats, never start one twice, and a claim whose process died
    before committing is taken again. Runs missed while nothing ran are not made up: the next
    one is the schedule's next time from now."""
    now = now or timezone.now()
    started = 0
    due = PlanTemplate.objects.filter(next_run_at__lte=now).exclude(schedule="")
    for template in due.select_related("owner").order_by("next_run_at")[:100]:
        try:
            schedule = parse_schedule(template.schedule)
            # Due, so it has a next time (next_run_at__lte above).
            assert template.next_run_at is not None
            following = schedule.next_after(template.next_run_at)
            if following <= now:
                following = schedule.next_after(now)
        except ScheduleError:  # pragma: no cover - checked when set
            following = None
        with transaction.atomic():
            claimed = PlanTemplate.objects.filter(
                pk=template.pk, next_run_at=template.next_run_at
            ).update(next_run_at=following)
            if not claimed:
                continue  # another beat took it
            error = ""
            try:
                with transaction.atomic():
                    template_run_by_trigger(
                        template, template.schedule_values, Run.Trigger.SCHEDULE
                    )
                started += 1
            except AgentError as exc:
                error = f"{timezone.now():%Y-%m-%d %H:%M} UTC: {exc}"[:500]
                log.warning("template %s: its scheduled run did not start: %s", template.pk, exc)
            PlanTemplate.objects.filter(pk=template.pk).update(schedule_error=error)
    return started
