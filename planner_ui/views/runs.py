"""Thin views: parse the request, call a service or selector, render."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core import fold
from planner_ui.core.bounds import (
    BUDGET_USD_DIGITS,
    BUDGET_USD_PLACES,
    MAX_BIGINT,
    MAX_BUDGET_USD,
    MIN_BUDGET_USD,
    row_id,
    too_long,
)
from planner_ui.core.diff import plan_diff
from planner_ui.core.edits import DependentsPolicy
from planner_ui.core.effects import PolicyMode
from planner_ui.core.errors import InvalidTransition, PlanValidationError
from planner_ui.core.hosts import (
    MAX_ALLOWED_HOSTS,
    MAX_HOST_ENTRY_CHARS,
    HostListError,
    hosts_in_text,
    parse_hosts,
)
from planner_ui.core.outcome import RunOutcome
from planner_ui.core.plan import MAX_STEPS, ROLES, Plan
from planner_ui.core.run_options import RunOptions
from planner_ui.core.run_rules import (
    cancel_refusal,
    fork_refusal,
    forkable_steps,
    pause_refusal,
    plan_change_refusal,
    resume_refusal,
    retry_refusal,
    step_edit_refusal,
    step_retry_refusal,
)
from planner_ui.core.status import (
    FINISHED_STEP_STATUSES,
    STEP_PROGRESS,
    RunStatus,
    StepStatus,
)
from planner_ui.models import PlanProposal, PlanVersion, Run, Step
from planner_ui.selectors.approvals import run_approvals
from planner_ui.selectors.estimate import plan_estimate, run_plan_estimate
from planner_ui.selectors.files import run_files
from planner_ui.selectors.local_models import local_models_panel
from planner_ui.selectors.proposals import proposal_review
from planner_ui.selectors.providers import provider_status
from planner_ui.selectors.runs import (
    UNFINISHED,
    RunFilters,
    approvals_by_step,
    run_get_for_user,
    run_graph,
    run_list_for_user,
    run_models_for_user,
    run_templates_for_user,
    tool_calls_by_step,
)
from planner_ui.selectors.search import plan_examples_for
from planner_ui.selectors.step_record import step_record
from planner_ui.selectors.timeline import run_timeline, runs_timing
from planner_ui.selectors.tools import tools_for_run, tools_for_user
from planner_ui.selectors.usage import model_suggestions, run_usage
from planner_ui.services.plans import PlanConflict
from planner_ui.services.providers import routes_for_run
from planner_ui.services.runs import RunInputError, run_approve_plan, run_create, run_start_from
from planner_ui.signed_in import SignedInRequest
from planner_ui.tools import COMMANDS, REGISTRY, Tool

from .log import LOG_PAGE
from .step_cards import estimate_note, step_card

RUNS_PER_PAGE = 20
# A refresh asks for the cards of the steps that changed since the last one; a plan holds at
# most MAX_STEPS steps and the synthesizer.
MAX_CARDS_PER_REQUEST = MAX_STEPS + 1


# The allowed-hosts field's length: every host of a run, each with its comma and space.
ALLOWED_HOSTS_CHARS = MAX_ALLOWED_HOSTS * (MAX_HOST_ENTRY_CHARS + 2)


class AllowedHostsFields(forms.Form):
    """The run's allowed hosts on the form, apart so the page can refill them as the task is
    typed without building the whole form."""

    allowed_hosts = forms.CharField(
        required=False,
        max_length=ALLOWED_HOSTS_CHARS,
        label="Hosts it may read from without asking",
        help_text="Filled in from the hosts your task names; a read from any other host waits "
        "for you with its exact URL. Separate hosts with commas; host or host:port.",
        widget=forms.TextInput(attrs={"placeholder": "none: every read from the web asks"}),
    )
    # The list the page last filled in from the task: a list the person did not touch follows
    # the task as submitted; one they edited is theirs.
    allowed_hosts_auto = forms.CharField(
        required=False,
        max_length=MAX_ALLOWED_HOSTS * (MAX_HOST_ENTRY_CHARS + 2),
        widget=forms.HiddenInput,
    )


class TaskForm(AllowedHostsFields):
    task = forms.CharField(
        widget=forms.Textarea(
            attrs={
                "rows": 5,
                "placeholder": "Compare Python and Go for a CLI tool, then write a recommendation.",
                # As it is typed, the allowed hosts below are filled in from it.
                "hx-post": reverse_lazy("run_new_hosts"),
                "hx-trigger": "input changed delay:300ms",
                "hx-target": "#allowed-hosts",
                "hx-swap": "outerHTML",
                "hx-include": "#id_allowed_hosts, #id_allowed_hosts_auto",
            }
        ),
        # No max_length: its maxlength attribute would cut a long paste in the browser without
        # a word; clean_task refuses it and says the limit.
        strip=True,
    )
    auto_approve = forms.BooleanField(
        required=False, label="Run the plan without reviewing it first"
    )
    tool_policy = forms.ChoiceField(
        choices=[
            (PolicyMode.ASK, "Ask me before every irreversible call (send, post, delete, ...)"),
            (PolicyMode.AUTO, "Run the tools ticked below without asking; ask for the others"),
            (PolicyMode.DRY_RUN, "Dry run: record irreversible calls, perform none"),
        ],
        initial=PolicyMode.ASK,
        required=False,  # absent means the safe default: ask
        widget=forms.RadioSelect,
        label="Irreversible actions",
    )
    auto_tools = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Run without asking",
        choices=lambda: _irreversible_choices(REGISTRY),  # with the person's own: __init__
    )
    replan_mode = forms.ChoiceField(
        choices=Run.Replan.choices,
        required=False,
        label="When a step fails",
    )
    max_replans = forms.IntegerField(
        required=False, min_value=0, max_value=10, label="Re-plans at most"
    )
    budget_tokens = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BIGINT,
        label="Token budget",
        help_text="input + output, all calls",
    )
    budget_usd = forms.DecimalField(
        required=False,
        min_value=MIN_BUDGET_USD,
        max_value=MAX_BUDGET_USD,
        max_digits=BUDGET_USD_DIGITS,
        decimal_places=BUDGET_USD_PLACES,
        label="Budget in USD",
    )

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if user is not None:
            # The irreversible tools of the person's MCP servers too, as the run accepts them.
            auto_tools = self.fields["auto_tools"]
            assert isinstance(auto_tools, forms.MultipleChoiceField)
            auto_tools.choices = _irreversible_choices(tools_for_user(user))
        self.fields["replan_mode"].initial = settings.AGENTSITE_REPLAN_MODE
        self.fields["max_replans"].initial = settings.AGENTSITE_MAX_REPLANS
        # The configured default budget is filled in, and a person may clear it.
        self.fields["budget_tokens"].initial = settings.AGENTSITE_DEFAULT_BUDGET_TOKENS
        self.fields["budget_usd"].initial = settings.AGENTSITE_DEFAULT_BUDGET_USD
        # One route field per part; empty keeps the configured route shown as placeholder.
        defaults = routes_for_run(check=False)
        for part, label in ROUTE_PARTS:
            self.fields[_route_field(part)] = forms.CharField(
                required=False,
                max_length=200,
                label=label,
                widget=forms.TextInput(
                    attrs={"placeholder": defaults[part].label, "list": "model-suggestions"}
                ),
            )

    def options(self) -> RunOptions:
        data = self.cleaned_data
        return RunOptions(
            task=data["task"],
            auto_approve=data["auto_approve"],
            routes=self.routes(),
            budget_tokens=data["budget_tokens"],
            budget_usd=data["budget_usd"],
            tool_policy=data["tool_policy"] or PolicyMode.ASK,
            auto_tools=data["auto_tools"],
            replan_mode=data["replan_mode"] or None,
            max_replans=data["max_replans"],
            allowed_hosts=data["allowed_hosts"],
        )

    def clean_task(self) -> str:
        task: str = self.cleaned_data["task"]
        if refusal := too_long("The task", task, settings.AGENTSITE_MAX_TASK_CHARS):
            raise forms.ValidationError(refusal)
        return task

    def clean_allowed_hosts(self) -> list[str] | None:
        """The person's list, or None (the hosts the task names) when they left the field as the
        page filled it in, or it was not on the page at all."""
        text = self.cleaned_data["allowed_hosts"]
        filled = str(self.data.get("allowed_hosts_auto", "")).strip()
        if "allowed_hosts" not in self.data or text == filled:
            return None
        try:
            return parse_hosts(text)
        except HostListError as exc:
            raise forms.ValidationError(str(exc)) from None

    def route_fields(self) -> list[forms.BoundField]:
        return [self[_route_field(part)] for part, _ in ROUTE_PARTS]

    def routes(self) -> dict[str, str]:
        return {
            part: self.cleaned_data[_route_field(part)]
            for part, _ in ROUTE_PARTS
            if self.cleaned_data.get(_route_field(part))
        }


def _irreversible_choices(tools: Mapping[str, Tool]) -> list[tuple[str, str]]:
    return [
        (name, f"{name} ({tool.effect})")
        for name, tool in sorted(tools.items())
        if tool.irreversible
    ]


ROUTE_PARTS = [
    ("planner", "Planner"),
    ("executor", "Executors"),
    *[(f"executor:{role}", f"{role.capitalize()} executors") for role in ROLES],
    ("synthesizer", "Synthesizer"),
]


def _route_field(part: str) -> str:
    return "route_" + part.replace(":", "_")


# The closest past plans offered on the task form as it is typed.
SUGGESTIONS = 3


def _form_context(form: TaskForm, user: Any) -> dict[str, Any]:
    task = str(form.data.get("task", ""))[: settings.AGENTSITE_MAX_TASK_CHARS]
    return {
        "form": form,
        "suggestions": plan_examples_for(user, task, limit=SUGGESTIONS) if task else [],
        "recent": (recent := list(run_list_for_user(user)[:5])),
        "active_s": _active_seconds(recent),
        "providers": provider_status(staff=user.is_staff),
        "local": local_models_panel() if user.is_staff else None,
        "model_suggestions": model_suggestions(),
        # Whether shell and python are offered, and how they run (or why not).
        "commands": COMMANDS,
    }


@login_required
@require_GET
def home(request: SignedInRequest) -> HttpResponse:
    form = TaskForm(user=request.user)
    return render(request, "planner_ui/home.html", _form_context(form, request.user))


@login_required
@require_POST
def run_new_hosts(request: SignedInRequest) -> HttpResponse:
    """The allowed-hosts field again, filled in from the task as typed so far, unless the
    person has edited it (htmx swaps it in while they type the task)."""
    task = request.POST.get("task", "")[: settings.AGENTSITE_MAX_TASK_CHARS]
    limit = ALLOWED_HOSTS_CHARS
    shown = request.POST.get("allowed_hosts", "")[:limit]
    filled = request.POST.get("allowed_hosts_auto", "")[:limit]
    if shown.strip() == filled.strip():
        shown = filled = ", ".join(hosts_in_text(task))
    form = AllowedHostsFields(initial={"allowed_hosts": shown, "allowed_hosts_auto": filled})
    return render(request, "planner_ui/_allowed_hosts_field.html", {"form": form})


@login_required
@require_POST
def run_new_similar(request: SignedInRequest) -> HttpResponse:
    """The past plans closest to the task as typed so far, to start from (htmx swaps them in
    under the task): the templates the person may see and their own runs that succeeded."""
    task = request.POST.get("task", "")[: settings.AGENTSITE_MAX_TASK_CHARS]
    suggestions = plan_examples_for(request.user, task, limit=SUGGESTIONS)
    return render(request, "planner_ui/_plan_suggestions.html", {"suggestions": suggestions})


@login_required
@require_POST
def run_new_from(request: SignedInRequest, run_id: int) -> HttpResponse:
    """The task form, submitted to start from the plan of the person's run `run_id`: the run
    is made with that plan as its first version, for review, and the planner is skipped."""
    source = run_get_for_user(request.user, run_id)
    form = TaskForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            run = run_start_from(owner=request.user, options=form.options(), source=source)
        except (RunInputError, PlanValidationError) as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("run_detail", run_id=run.pk)
    return render(request, "planner_ui/home.html", _form_context(form, request.user), status=400)


@login_required
@require_POST
def run_new(request: SignedInRequest) -> HttpResponse:
    form = TaskForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            run = run_create(owner=request.user, options=form.options())
        except RunInputError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("run_detail", run_id=run.pk)
    return render(request, "planner_ui/home.html", _form_context(form, request.user), status=400)


# The history's search box: longer text is cut, not refused (it is words to look for).
MAX_QUERY_CHARS = 200


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def history_filters(query: Mapping[str, str]) -> RunFilters:
    """The history's filters from a query string. A value that means nothing (an old or
    mistyped link) is dropped: the page shows more runs rather than an error."""
    outcome = query.get("outcome", "")
    if outcome not in {UNFINISHED, *RunOutcome}:
        outcome = ""
    status = query.get("status", "")
    return RunFilters(
        q=query.get("q", "")[:MAX_QUERY_CHARS].strip(),
        outcome=outcome,
        status=status if status in set(RunStatus) else "",
        template=row_id(query.get("template", "")),
        model=query.get("model", "")[:200].strip(),
        since=_day(query.get("since", "")),
        until=_day(query.get("until", "")),
    )


@login_required
@require_GET
def run_list(request: SignedInRequest) -> HttpResponse:
    filters = history_filters(request.GET)
    runs = run_list_for_user(request.user, filters=filters)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    # The filters in use, without the empty fields a form sends: the URL to share or go back to.
    kept = QueryDict(mutable=True)
    for name in request.GET:
        value = request.GET.get(name, "")
        if value.strip() and name != "page":
            kept[name] = value
    context = {
        "page": page,
        "active_s": _active_seconds(page),
        "filters": filters,
        "filtered": filters != RunFilters(),
        "filters_query": kept.urlencode(),
        "outcome_choices": [
            (UNFINISHED, "not finished"),
            *((o.value, o.label) for o in RunOutcome),
        ],
        "status_choices": Run._meta.get_field("status").choices,
        "templates": run_templates_for_user(request.user),
        "models": run_models_for_user(request.user),
    }
    response = render(request, "planner_ui/run_list.html", context)
    if request.htmx:
        query = kept.urlencode()
        response["HX-Push-Url"] = request.path + (f"?{query}" if query else "")
    return response


def _active_seconds(runs: Sequence[Run]) -> dict[int, float]:
    """Each run's active time by id, for the history table (selectors.timeline)."""
    return {pk: timing.active_s for pk, timing in runs_timing(runs).items()}


def render_run(
    request: HttpRequest,
    run: Run,
    *,
    fragment: bool = False,
    notice: str = "",
    error: str = "",
    status: int = 200,
    keep: str = "",
) -> HttpResponse:
    """The run page, or only its live fragment (for htmx), with an optional outcome on top.

    `keep`: the key of the plan's workspace (graph and step cards) the page shows. Where it is
    still the run's (workspace_key), the fragment leaves the workspace and the timeline out and
    the page keeps its own, whose graph and cards the socket's events keep current step by step
    and whose timeline it fetches when it is in sight: at 1,000 steps those were most of a
    refresh (3 MB, 68,000 elements, a graph laid out anew)."""
    steps = list(run.steps.all())
    versions = list(run.plan_versions.all())
    key = workspace_key(run, versions, steps)
    kept = fragment and keep == key
    open_proposals = run.proposals.exclude(state__in=["accepted", "discarded"])
    proposal = open_proposals.filter(kind=PlanProposal.Kind.REQUEST).first()
    replan = open_proposals.filter(kind=PlanProposal.Kind.REPLAN).first()
    shown = proposal or replan
    proposal_diff = None
    if shown is not None and shown.plan is not None and versions:
        proposal_diff = plan_diff(
            Plan.model_validate(versions[-1].plan), Plan.model_validate(shown.plan)
        )
    context = {
        "run": run,
        "versions": versions,
        "current_version": versions[-1] if versions else None,
        "proposal": proposal,
        "replan": replan,
        "failed_steps": [
            {"id": s.step_id, "title": s.title, "error": s.error}
            for s in steps
            if s.status == StepStatus.FAILED
        ],
        "proposal_diff": proposal_diff,
        **proposal_review(proposal, versions),
        "usage": run_usage(run),
        "files": run_files(run),
        "steps_done": sum(1 for s in steps if s.status in FINISHED_STEP_STATUSES),
        **_result_fold(run),
        **run_approvals(run),
        # The buttons offered: what the services would do now (core.run_rules).
        "may_pause": pause_refusal(run) is None,
        "may_resume": resume_refusal(run) is None,
        "may_cancel": cancel_refusal(run) is None,
        "notice": notice,
        "error": error,
        "workspace_key": key,
        "workspace_kept": kept,
    }
    if kept:
        context.update(
            steps=steps,
            plan_editable=plan_change_refusal(run) is None,
            estimate=run_plan_estimate(run, steps),
        )
    else:
        context["timeline"] = run_timeline(run, steps)
        tools = tools_for_run(run)  # for the graph and the cards alike
        # Every step is read once here and handed to what else reads them all: four reads of
        # 1,000 rows (with their outputs) were a tenth of the page on SQLite, more on
        # PostgreSQL.
        context.update(
            graph=run_graph(run, tools, steps), **_cards_context(run, steps, tools, all_steps=True)
        )
    if not fragment:
        context["step_progress"] = {str(status): rank for status, rank in STEP_PROGRESS.items()}
        context["log_page"] = LOG_PAGE
    template = "planner_ui/_run_main.html" if fragment else "planner_ui/run_detail.html"
    response = render(request, template, context, status=status)
    if kept:
        # run.js reads it before the swap, to take its workspace out of htmx's way first.
        response["X-Workspace-Kept"] = key
    return response


def workspace_key(run: Run, versions: Sequence[PlanVersion], steps: Sequence[Step]) -> str:
    """What the plan's workspace shows besides each step's own card: the plan's version, its
    steps, and the run's state that decides what may be edited, retried or forked. A page whose
    workspace has this key needs only the cards its events name (run_step_cards)."""
    current = versions[-1].pk if versions else 0
    return "-".join(
        str(part)
        for part in (
            current,
            run.approved_plan_id or 0,
            run.status,
            int(run.replanning),
            int(run.paused_at is not None),
            int(retry_refusal(run) is None),
            int(fork_refusal(run) is None),
            len(steps),
        )
    )


def _result_fold(run: Run) -> dict[str, Any]:
    """The deliverable as the page sends it: folded when long, its opening only, the rest
    fetched from `result_rest_url` when it is unfolded (core.fold)."""
    sent = fold.RESULT.sent(run.result)
    return {
        "result_long": sent.folds,
        "result_shown": sent.shown,
        "result_rest_url": reverse("run_result", args=[run.pk]) if sent.cut else "",
    }


def _cards_context(
    run: Run, steps: list[Step], tools: dict[str, Tool], *, all_steps: bool = False
) -> dict[str, Any]:
    """The steps' cards (`steps`, all the run's with `all_steps`) and what _step_cards.html
    needs besides."""
    calls = tool_calls_by_step(run, [s.step_id for s in steps])
    approvals = approvals_by_step(run, [s.step_id for s in steps])
    lost_before = timezone.now() - timedelta(seconds=settings.AGENTSITE_STEP_LEASE_S)
    editable = plan_change_refusal(run) is None
    retries = retry_refusal(run) is None
    forks = fork_refusal(run) is None
    if forks:
        # Fork from a step whose inputs are all done: read over every step, not only these.
        rows = (
            [(s.step_id, s.depends_on, s.status) for s in steps]
            if all_steps
            else run.steps.values_list("step_id", "depends_on", "status")
        )
        deps = {step_id: depends_on for step_id, depends_on, _ in rows}
        statuses = {step_id: status for step_id, _, status in rows}
        forkable = forkable_steps(deps, statuses)
    # The page shows the run's estimate (each step's actual figures come when it is opened:
    # views.report.run_estimate_part); a card needs only its own step's estimate and the
    # critical path, which the plan alone gives (plan_estimate reads no outputs: a card
    # refresh does not grow with what the other steps wrote).
    estimate = run_plan_estimate(run, steps) if all_steps else None
    planned = estimate.plan if estimate is not None else plan_estimate(run)
    by_step = {e.step_id: e for e in planned.steps} if planned else {}
    critical = set(planned.critical_path) if planned else set()
    again_url = _step_url("step_again", run.pk)
    editor_url = _step_url("step_editor", run.pk)
    output_url = _step_url("step_output", run.pk)
    cards = []
    for step in steps:
        locked = step_edit_refusal(step.role, step.status)
        locked_reason = ""
        # The synthesizer's card says nothing of edits: it never offered any.
        if editable and locked and step.role != "synthesizer":
            locked_reason = (
                f"its output was reused from run {step.reused_from_id}"
                if step.reused_from_id
                else locked
            )
        # A long output sends its opening; the rest comes when it is unfolded (core.fold).
        output = fold.STEP_OUTPUT.sent(step.output)
        card = step_card(
            step,
            calls=calls.get(step.step_id, []),
            approvals=approvals.get(step.step_id, []),
            output_long=output.folds,
            output_shown=output.shown,
            output_rest_url=output_url(step.step_id) if output.cut else "",
            editable=editable and locked is None,
            locked_reason=locked_reason,
            retryable=retries and step_retry_refusal(step.step_id, step.status) is None,
            forkable=forks and step.step_id in forkable,
            again_url=again_url(step.step_id),
            editor_url=editor_url(step.step_id),
            estimate_note=estimate_note(by_step.get(step.step_id), step.step_id in critical),
            worker_lost=(
                step.status == StepStatus.RUNNING
                and step.heartbeat_at is not None
                and step.heartbeat_at < lost_before
            ),
        )
        cards.append(card)
    return {
        "steps": cards,
        "plan_editable": editable,
        # Reversed once: every edit form posts here, four a step.
        "change_url": reverse("plan_change", args=[run.pk]),
        "estimate": estimate,
        "roles": ROLES,
        "tool_names": sorted(tools),
        "policies": [p.value for p in DependentsPolicy],
        "tool_effects": {name: str(tool.effect) for name, tool in tools.items()},
        "irreversible_tools": {name for name, tool in tools.items() if tool.irreversible},
    }


def _step_url(name: str, run_id: int) -> Callable[[str], str]:
    """reverse(name, args=[run_id, step_id]) for any step, from one reverse(): 3,000 of them
    were a twentieth of a finished 1,000-step run's page. A step's id is a slug
    (core.plan.STEP_ID_PATTERN), which a URL carries as it is."""
    before, after = reverse(name, args=[run_id, "step-id"]).split("step-id")
    return lambda step_id: f"{before}{step_id}{after}"


@login_required
@require_GET
def run_step_cards(request: SignedInRequest, run_id: int) -> HttpResponse:
    """The cards of the steps an event changed (`?steps=a,b`), to be swapped in out of band:
    the same template as the first render, so the two can never drift apart."""
    run = run_get_for_user(request.user, run_id)
    wanted = [s for s in request.GET.get("steps", "").split(",") if s][:MAX_CARDS_PER_REQUEST]
    steps = list(run.steps.filter(step_id__in=wanted))
    cards = _cards_context(run, steps, tools_for_run(run))
    context = {"run": run, "oob": True, **cards}
    return render(request, "planner_ui/_step_cards.html", context)


@login_required
@require_GET
def step_editor(request: SignedInRequest, run_id: int, step_id: str) -> HttpResponse:
    """One step's edit forms, fetched when its editor first opens (run.js): sent inside every
    card they were three quarters of a 1,000-step plan's editor page (5 of 6.7 MB). Without
    htmx (no script), the same forms on a page of their own, which post as plain forms do.
    A step that may no longer change says why instead (the run went on since the page came)."""
    run = run_get_for_user(request.user, run_id)
    step = get_object_or_404(run.steps, step_id=step_id)
    refusal = plan_change_refusal(run) or step_edit_refusal(step.role, step.status)
    # Read after the step, as run_step_cards does: the forms then say a version no older
    # than the step they show, and an edit made in between is refused as a conflict.
    current_version = run.plan_versions.order_by("number").last()
    others = run.steps.exclude(role="synthesizer").values_list("step_id", flat=True)
    taken = {step.step_id, *step.depends_on}
    context = {
        "run": run,
        "step": step_record(step),
        "refusal": refusal,
        "current_version": current_version,
        "change_url": reverse("plan_change", args=[run.pk]),
        "roles": ROLES,
        "tool_names": sorted(tools_for_run(run)),
        # What it may be made to run after, in the plan's order; a cycle is refused, and
        # named, when it is posted.
        "dependency_options": [s for s in others if s not in taken],
    }
    if request.htmx:
        return render(request, "planner_ui/_step_editor_forms.html", context)
    return render(request, "planner_ui/step_editor.html", context)


@login_required
@require_GET
def run_detail(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    # htmx asks for the live part alone when the plan or the run's status changes.
    return render_run(
        request, run, fragment=bool(request.htmx), keep=request.GET.get("keep", "")[:200]
    )


@login_required
@require_POST
def run_approve(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    # Without a version, the current one (runtask and old pages); with one, exactly that.
    version = request.POST.get("version")
    number = row_id(version)
    if version is not None and number is None:
        messages.error(request, f"{version[:20]!r} is not a plan version number: nothing ran.")
        return redirect("run_detail", run_id=run.pk)
    try:
        run_approve_plan(run.pk, number)
    except (InvalidTransition, PlanConflict) as exc:
        messages.error(request, str(exc))
    return redirect("run_detail", run_id=run.pk)


def run_action(
    request: SignedInRequest, run_id: int, action: Callable[[int, Any], Run], done: str
) -> HttpResponse:
    """Do `action` to the user's run: the updated page (or its fragment, for htmx) with
    `done` on top, or the refusal with 409."""
    run = run_get_for_user(request.user, run_id)
    try:
        run = action(run.pk, request.user)
    except InvalidTransition as exc:
        if request.htmx:
            return render_run(request, run, fragment=True, error=str(exc), status=409)
        messages.error(request, str(exc))
        return redirect("run_detail", run_id=run.pk)
    if request.htmx:
        return render_run(request, run, fragment=True, notice=done)
    messages.success(request, done)
    return redirect("run_detail", run_id=run.pk)
