"""Plan template pages: save a run's plan as a template, the list, a template with its versions,
the form generated from its parameters and the runs started from it."""

from __future__ import annotations

import copy
import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from planner_ui.core.effects import PolicyMode
from planner_ui.core.errors import PlanValidationError
from planner_ui.core.json_path import JsonPathError, mapping_text, parse_mapping
from planner_ui.core.plan import Plan
from planner_ui.core.run_options import RunOptions
from planner_ui.core.templates import (
    PARAMETER_TYPES,
    ParameterError,
    TemplateParameter,
    check_from_text,
    check_text,
    escape_placeholders,
    template_diff,
    template_placeholders,
)
from planner_ui.core.validation import parse_plan_json
from planner_ui.models import PlanTemplate, PlanTemplateVersion
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.selectors.templates import (
    template_get_for_user,
    template_get_owned,
    template_list_for_user,
    template_runs_for_user,
    template_version,
)
from planner_ui.selectors.tools import tools_for_user
from planner_ui.services.runs import RunInputError
from planner_ui.services.templates import (
    MAX_NAME_CHARS,
    TemplateRefused,
    template_delete,
    template_run,
    template_save,
    template_save_from_run,
    template_schedule_set,
    template_share,
    template_trigger_policy_set,
    template_webhook_clear,
    template_webhook_mapping_set,
    template_webhook_set,
    version_spec,
)
from planner_ui.signed_in import SignedInRequest

from .runs import TaskForm

# Rows of "turn this text into a parameter" on the save form.
REPLACE_ROWS = 3
# Where a webhook secret just made waits for the page that shows it once.
NEW_WEBHOOK_KEY = "template_webhook_made"
# As a plan import (services.plans.plan_import).
MAX_IMPORT_CHARS = 200_000


class SaveTemplateForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME_CHARS, label="Name")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    task = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Write {name} where a value goes; {{name}} is the literal text {name}.",
    )
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for i in range(REPLACE_ROWS):
            self.fields[f"literal_{i}"] = forms.CharField(
                required=False, max_length=500, label="Text", strip=False
            )
            self.fields[f"parameter_{i}"] = forms.CharField(
                required=False, max_length=40, label="becomes the parameter"
            )

    def replace_rows(self) -> list[tuple[forms.BoundField, forms.BoundField]]:
        return [(self[f"literal_{i}"], self[f"parameter_{i}"]) for i in range(REPLACE_ROWS)]

    def replacements(self) -> list[tuple[str, str]]:
        rows = []
        for i in range(REPLACE_ROWS):
            literal = self.cleaned_data.get(f"literal_{i}") or ""
            name = (self.cleaned_data.get(f"parameter_{i}") or "").strip()
            if literal.strip() and name:
                rows.append((literal, name))
            elif literal.strip() or name:
                self.add_error(f"parameter_{i}", "Give both the text and the parameter's name.")
        return rows


@login_required
@require_http_methods(["GET", "POST"])
def template_new_from_run(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    versions = {v.number: v for v in run.plan_versions.all()}
    if not versions:
        raise Http404("This run has no plan yet.")
    if request.method == "GET":
        number = max(versions)
        task, _ = escape_placeholders(run.task, Plan.model_validate(versions[number].plan))
        form = SaveTemplateForm(initial={"task": task, "version": number})
        return render(request, "planner_ui/template_new.html", {"run": run, "form": form})
    form = SaveTemplateForm(request.POST)
    version = None
    if form.is_valid():
        replace = form.replacements()
        version = versions.get(form.cleaned_data["version"])
        if version is None:
            form.add_error(None, "This run has no such plan version.")
    if form.is_valid() and version is not None:
        try:
            saved = template_save_from_run(
                user=request.user,
                version=version,
                name=form.cleaned_data["name"],
                task=form.cleaned_data["task"],
                replace=replace,
                description=form.cleaned_data["description"],
            )
        except (ParameterError, PlanValidationError, TemplateRefused) as exc:
            for problem in _problems(exc):
                form.add_error(None, problem)
        else:
            messages.success(request, f"Saved as {saved.template.name} v{saved.number}.")
            return redirect("template_detail", template_id=saved.template_id)
    context = {"run": run, "form": form}
    return render(request, "planner_ui/template_new.html", context, status=400)


def _problems(exc: Exception) -> list[str]:
    if isinstance(exc, ParameterError):
        return [f"{{{name}}}: {why}" if name else why for name, why in exc.problems.items()]
    if isinstance(exc, PlanValidationError):
        return list(exc.errors)
    return [str(exc)]


class ImportTemplateForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME_CHARS, label="Name")
    text = forms.CharField(
        label="Template as JSON",
        max_length=MAX_IMPORT_CHARS,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text='As a version\'s JSON download: {"task": ..., "plan": ..., "parameters": [...]}',
    )


@login_required
@require_http_methods(["GET", "POST"])
def template_list(request: SignedInRequest) -> HttpResponse:
    """The templates; POST imports one from JSON (a new version under a name you have)."""
    form = ImportTemplateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            data = parse_plan_json(form.cleaned_data["text"])
            if not isinstance(data, dict) or not isinstance(data.get("plan"), dict):
                raise PlanValidationError(
                    ['the JSON must be an object with "task", "plan" and "parameters"']
                )
            saved = template_save(
                user=request.user,
                name=form.cleaned_data["name"],
                task=str(data.get("task") or ""),
                plan=data["plan"],
                parameters=_listed(data.get("parameters")),
                note="imported as JSON",
            )
        except (ParameterError, PlanValidationError, TemplateRefused) as exc:
            for problem in _problems(exc):
                form.add_error(None, problem)
        else:
            messages.success(request, f"Imported as {saved.template.name} v{saved.number}.")
            return redirect("template_detail", template_id=saved.template_id)
    context = {"templates": template_list_for_user(request.user), "import_form": form}
    status = 400 if form.errors else 200
    return render(request, "planner_ui/template_list.html", context, status=status)


def _listed(parameters: object) -> list[Any]:
    if parameters is None:
        return []
    if not isinstance(parameters, list):
        raise ParameterError({"": "parameters must be a list"})
    return parameters


@login_required
@require_GET
def template_version_json(request: SignedInRequest, template_id: int, number: int) -> HttpResponse:
    """A version as JSON, as the import takes it back."""
    template = template_get_for_user(request.user, template_id)
    version = _version_of(template, str(number))
    body = {"task": version.task, "plan": version.plan, "parameters": version.parameters}
    response = HttpResponse(
        json.dumps(body, indent=2, ensure_ascii=False) + "\n",
        content_type="application/json; charset=utf-8",
    )
    filename = f"template-{template.pk}-v{version.number}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class RunTemplateForm(forms.Form):
    """The form a template's parameters make: one field per parameter, typed for the browser;
    the values are checked by core.templates, whose errors land at their fields."""

    auto_approve = forms.BooleanField(
        required=False, label="Run the plan without reviewing it first"
    )
    adapt = forms.BooleanField(
        required=False,
        label="Let the planner adapt the plan to these values (you see its changes as a diff "
        "and accept or discard them; nothing runs before)",
    )
    tool_policy = forms.ChoiceField(
        choices=[
            (PolicyMode.ASK, "Ask me before every irreversible call"),
            (PolicyMode.DRY_RUN, "Dry run: record irreversible calls, perform none"),
        ],
        initial=PolicyMode.ASK,
        required=False,
        widget=forms.RadioSelect,
        label="Irreversible actions",
    )

    def __init__(self, *args: Any, parameters: list[TemplateParameter], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parameters = parameters
        for param in parameters:
            self.fields[_field(param.name)] = _parameter_field(param)
        # The task form's budget fields, with the configured default budget filled in.
        for name in ("budget_tokens", "budget_usd"):
            self.fields[name] = copy.deepcopy(TaskForm.base_fields[name])
        self.fields["budget_tokens"].initial = settings.AGENTSITE_DEFAULT_BUDGET_TOKENS
        self.fields["budget_usd"].initial = settings.AGENTSITE_DEFAULT_BUDGET_USD
        self.order_fields([_field(p.name) for p in parameters])

    def values(self) -> dict[str, str]:
        return {p.name: self.cleaned_data.get(_field(p.name)) or "" for p in self.parameters}

    def parameter_fields(self) -> list[forms.BoundField]:
        return [self[_field(p.name)] for p in self.parameters]


def _field(name: str) -> str:
    return f"param_{name}"


_INPUT_TYPES = {"number": "number", "integer": "number", "email": "email", "url": "url"}


def _parameter_field(param: TemplateParameter) -> forms.Field:
    help_text = "" if param.required else f"Empty: {param.default}"
    if param.type == "choice":
        choices = [("", "—")] if not param.required else []
        return forms.ChoiceField(
            choices=choices + [(c, c) for c in param.choices],
            required=False,
            label=param.shown_label,
            initial=param.default,
        )
    attrs: dict[str, Any] = {"placeholder": param.default or ""}
    if param.type in _INPUT_TYPES:
        attrs["type"] = _INPUT_TYPES[param.type]
    if param.type == "date":
        attrs["type"] = "date"
    if param.type in ("number", "integer"):
        attrs["step"] = "1" if param.type == "integer" else "any"
    return forms.CharField(
        required=False,
        label=param.shown_label,
        help_text=help_text,
        widget=forms.TextInput(attrs=attrs),
    )


class VersionForm(forms.Form):
    """A new version: the task and, per parameter, its type, label, default and check."""

    task = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    note = forms.CharField(required=False, max_length=300)

    def __init__(self, *args: Any, parameters: list[TemplateParameter], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names = [p.name for p in parameters]
        for p in parameters:
            self.fields[f"type_{p.name}"] = forms.ChoiceField(
                choices=[(t, t) for t in PARAMETER_TYPES], initial=p.type, label="Type"
            )
            self.fields[f"label_{p.name}"] = forms.CharField(
                required=False, max_length=120, initial=p.label, label="Label"
            )
            self.fields[f"default_{p.name}"] = forms.CharField(
                required=False, max_length=2000, initial=p.default or "", label="Default"
            )
            self.fields[f"check_{p.name}"] = forms.CharField(
                required=False,
                max_length=500,
                initial=check_text(p),
                label="Check",
                help_text="text: a pattern; number: min..max; choice: a, b, c",
            )

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "fields": [
                    self[f"{part}_{name}"] for part in ("type", "label", "default", "check")
                ],
            }
            for name in self.names
        ]

    def parameters(self) -> list[dict[str, Any]]:
        """The parameters as the form defines them; a wrong check is an error at its field."""
        found = []
        for name in self.names:
            kind = self.cleaned_data[f"type_{name}"]
            try:
                check = check_from_text(kind, self.cleaned_data[f"check_{name}"])
            except ValueError as exc:
                self.add_error(f"check_{name}", str(exc))
                continue
            default = self.cleaned_data[f"default_{name}"].strip()
            found.append(
                {
                    "name": name,
                    "type": kind,
                    "label": self.cleaned_data[f"label_{name}"].strip(),
                    "default": default or None,
                    **check,
                }
            )
        return found


def _detail_context(
    request: SignedInRequest,
    template: PlanTemplate,
    version: PlanTemplateVersion,
    run_form: RunTemplateForm | None = None,
    version_form: VersionForm | None = None,
    schedule_form: ScheduleForm | None = None,
) -> dict[str, Any]:
    spec = version_spec(version)
    versions = list(template.versions.all())
    mine = template.owner_id == request.user.pk
    if mine and version_form is None:
        # A new version starts from the latest, whichever version the page shows.
        latest = version_spec(versions[-1])
        version_form = VersionForm(parameters=latest.parameters, initial={"task": latest.task})
    previous = next((v for v in versions if v.number == version.number - 1), None)
    return {
        "template": template,
        "version": version,
        # What the shown version changed from the one before it.
        "diff": template_diff(version_spec(previous), spec) if previous else None,
        "latest": versions[-1],
        "versions": versions,
        "spec": spec,
        "parameters": spec.parameters,
        "run_form": run_form or RunTemplateForm(parameters=spec.parameters),
        "version_form": version_form if mine else None,
        "mine": mine,
        "runs": template_runs_for_user(template, request.user)[:50],
        "policy_form": TriggerPolicyForm(
            user=request.user,
            initial={
                "tool_policy": template.trigger_policy,
                "auto_tools": template.trigger_auto_tools,
            },
        )
        if mine
        else None,
        "schedule_form": (schedule_form or _schedule_form(template, spec.parameters))
        if mine
        else None,
        "webhook_url": request.build_absolute_uri(
            reverse("api-v1:template_webhook", args=[template.pk])
        ),
        "webhook_mapping_text": mapping_text(template.webhook_mapping),
    }


def _version_of(template: PlanTemplate, raw: str | None) -> PlanTemplateVersion:
    try:
        return template_version(template, int(raw) if raw else None)
    except (ValueError, PlanTemplateVersion.DoesNotExist):
        raise Http404("This template has no such version.") from None


@login_required
@require_GET
def template_detail(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_for_user(request.user, template_id)
    version = _version_of(template, request.GET.get("v"))
    context = _detail_context(request, template, version)
    made = request.session.pop(NEW_WEBHOOK_KEY, None)
    if made and made.get("template") == template.pk:
        context["webhook_token"] = made["token"]
    response = render(request, "planner_ui/template_detail.html", context)
    # A webhook secret may be in this response: it must not be cached on the way.
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def template_run_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_for_user(request.user, template_id)
    version = _version_of(template, request.POST.get("version"))
    form = RunTemplateForm(request.POST, parameters=version_spec(version).parameters)
    if form.is_valid():
        options = RunOptions(
            task="",
            auto_approve=form.cleaned_data["auto_approve"],
            tool_policy=form.cleaned_data["tool_policy"] or PolicyMode.ASK,
            budget_tokens=form.cleaned_data["budget_tokens"],
            budget_usd=form.cleaned_data["budget_usd"],
        )
        try:
            run = template_run(
                version=version,
                user=request.user,
                values=form.values(),
                options=options,
                adapt=form.cleaned_data["adapt"],
            )
        except ParameterError as exc:
            for name, why in exc.problems.items():
                field = _field(name)
                form.add_error(field if field in form.fields else None, f"{name}: {why}")
        except (PlanValidationError, RunInputError) as exc:
            for problem in _problems(exc):
                form.add_error(None, problem)
        else:
            return redirect("run_detail", run_id=run.pk)
    context = _detail_context(request, template, version, run_form=form)
    return render(request, "planner_ui/template_detail.html", context, status=400)


@login_required
@require_POST
def template_version_new(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_owned(request.user, template_id)
    latest = _version_of(template, None)
    form = VersionForm(request.POST, parameters=version_spec(latest).parameters)
    if form.is_valid():
        # A parameter whose placeholder the person took out of the task goes with it.
        used = template_placeholders(form.cleaned_data["task"], Plan.model_validate(latest.plan))
        parameters = [p for p in form.parameters() if p["name"] in used]
    if form.is_valid():
        try:
            saved = template_save(
                user=request.user,
                name=template.name,
                task=form.cleaned_data["task"],
                plan=latest.plan,
                parameters=parameters,
                note=form.cleaned_data["note"] or "parameters changed",
                source_plan=latest.source_plan,
            )
        except (ParameterError, PlanValidationError, TemplateRefused) as exc:
            for problem in _problems(exc):
                form.add_error(None, problem)
        else:
            messages.success(request, f"Saved {template.name} v{saved.number}.")
            return redirect("template_detail", template_id=template.pk)
    context = _detail_context(request, template, latest, version_form=form)
    return render(request, "planner_ui/template_detail.html", context, status=400)


@login_required
@require_POST
def template_share_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_for_user(request.user, template_id)
    try:
        template_share(template, request.user, request.POST.get("shared") == "1")
    except TemplateRefused as exc:
        messages.error(request, str(exc))
    else:
        state = "shared with everyone" if template.shared else "no longer shared"
        messages.success(request, f"{template.name} is {state}.")
    return redirect("template_detail", template_id=template.pk)


@login_required
@require_POST
def template_webhook_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    """Make (or replace) the webhook's secret and show it once on the next GET, or turn the
    webhook off."""
    template = template_get_owned(request.user, template_id)
    if request.POST.get("action") == "off":
        template_webhook_clear(template, request.user)
        messages.success(request, "The webhook is off: its token no longer starts runs.")
    else:
        token = template_webhook_set(template, request.user)
        request.session[NEW_WEBHOOK_KEY] = {"template": template.pk, "token": token}
    return redirect("template_detail", template_id=template.pk)


@login_required
@require_POST
def template_delete_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_owned(request.user, template_id)
    template_delete(template, request.user)
    messages.success(
        request, f"Deleted {template.name}. Its runs stay, with the values they were given."
    )
    return redirect("template_list")


class TriggerPolicyForm(forms.Form):
    """What runs the template's triggers start do with irreversible calls."""

    tool_policy = forms.ChoiceField(
        choices=[
            (PolicyMode.ASK, "Ask me before every irreversible call"),
            (PolicyMode.AUTO, "Run the tools ticked below without asking; ask for the others"),
            (PolicyMode.DRY_RUN, "Dry run: record irreversible calls, perform none"),
        ],
        widget=forms.RadioSelect,
        label="Irreversible calls of the runs a trigger starts",
    )
    auto_tools = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Run without asking"
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tools = tools_for_user(user)
        auto_tools = self.fields["auto_tools"]
        assert isinstance(auto_tools, forms.MultipleChoiceField)
        auto_tools.choices = [
            (name, f"{name} ({tool.effect})")
            for name, tool in sorted(tools.items())
            if tool.irreversible
        ]


@login_required
@require_POST
def template_trigger_policy_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_owned(request.user, template_id)
    form = TriggerPolicyForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            template_trigger_policy_set(
                template,
                request.user,
                form.cleaned_data["tool_policy"],
                form.cleaned_data["auto_tools"],
            )
        except RunInputError as exc:
            messages.error(request, str(exc))
        else:
            policy = template.trigger_tool_policy.describe()
            messages.success(request, f"Runs its triggers start: {policy}.")
    else:
        messages.error(
            request, "Choose what the runs its triggers start do with irreversible calls."
        )
    return redirect("template_detail", template_id=template.pk)


@login_required
@require_POST
def template_webhook_mapping_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    """Where in the webhook's body each value is: one `parameter = $.path` per line; empty
    lines only, and the body is the values themselves."""
    template = template_get_owned(request.user, template_id)
    text = request.POST.get("mapping", "")[:5000]
    try:
        template_webhook_mapping_set(template, request.user, parse_mapping(text))
    except (JsonPathError, TemplateRefused) as exc:
        messages.error(request, f"The mapping was not saved: {exc}")
    else:
        if template.webhook_mapping:
            messages.success(request, "The webhook reads its values through the mapping.")
        else:
            messages.success(request, "The webhook's body is the values themselves.")
    return redirect(reverse("template_detail", args=[template.pk]) + "#template-webhook")


class ScheduleForm(forms.Form):
    """The schedule and the values its runs get: the parameters' own fields, prefixed."""

    schedule = forms.CharField(
        required=False,
        max_length=100,
        label="Schedule",
        help_text='"every 30 minutes", "every 1 day", or a cron line in UTC such as "0 8 * * 1-5"'
        " (08:00 on weekdays); empty: no schedule.",
    )

    def __init__(self, *args: Any, parameters: list[TemplateParameter], **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "prefix": "schedule"})
        self.parameters = parameters
        for param in parameters:
            self.fields[_field(param.name)] = _parameter_field(param)

    def values(self) -> dict[str, str]:
        return {p.name: self.cleaned_data.get(_field(p.name)) or "" for p in self.parameters}

    def parameter_fields(self) -> list[forms.BoundField]:
        return [self[_field(p.name)] for p in self.parameters]


def _schedule_form(template: PlanTemplate, parameters: list[TemplateParameter]) -> ScheduleForm:
    initial = {"schedule": template.schedule}
    initial.update({_field(n): v for n, v in template.schedule_values.items()})
    return ScheduleForm(parameters=parameters, initial=initial)


@login_required
@require_POST
def template_schedule_view(request: SignedInRequest, template_id: int) -> HttpResponse:
    template = template_get_owned(request.user, template_id)
    latest = _version_of(template, None)
    form = ScheduleForm(request.POST, parameters=version_spec(latest).parameters)
    if form.is_valid():
        try:
            template_schedule_set(
                template, request.user, form.cleaned_data["schedule"], form.values()
            )
        except ParameterError as exc:
            for name, why in exc.problems.items():
                field = _field(name)
                form.add_error(field if field in form.fields else None, f"{name}: {why}")
        except (PlanValidationError, TemplateRefused) as exc:
            for problem in _problems(exc):
                form.add_error(None, problem)
        else:
            done = f"runs {template.schedule}" if template.schedule else "has no schedule"
            messages.success(request, f"{template.name} {done}.")
            return redirect("template_detail", template_id=template.pk)
    context = _detail_context(request, template, latest, schedule_form=form)
    return render(request, "planner_ui/template_detail.html", context, status=400)
