"""What a person does to a run once it is under way: decide irreversible calls (from the run's
page or the inbox), decide a re-plan, cancel, and re-run it as a single-agent baseline to
compare. Plain forms that htmx enhances, like the plan editor's."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core.approval_form import FIELD_PREFIX, FormDraft
from planner_ui.core.bounds import row_id
from planner_ui.core.errors import InvalidTransition
from planner_ui.models import Approval, PlanProposal
from planner_ui.selectors.approvals import approval_get_for_user, inbox_for_user, pending_count
from planner_ui.selectors.compare import comparison, runs_comparison
from planner_ui.selectors.runs import run_get_for_user
from planner_ui.services.approvals import ApprovalRefused, ArgumentsRefused, approval_decide
from planner_ui.services.baselines import baseline_create
from planner_ui.services.replans import replan_accept, replan_discard
from planner_ui.services.runs import run_cancel, run_pause, run_resume
from planner_ui.signed_in import SignedInRequest
from planner_ui.templatetags.approval_forms import DRAFT_ATTRIBUTE

from .runs import render_run, run_action


@login_required
@require_POST
def approval_decide_view(request: SignedInRequest, approval_id: int) -> HttpResponse:
    # 404 for another user's request, before anything else is read.
    approval = approval_get_for_user(request.user, approval_id)
    if approval is None:
        raise Http404("No such approval request.")
    decision = request.POST.get("decision", "")
    resolutions = Approval.Resolution.values
    if decision not in ("approve", "reject", *resolutions):
        return _answer(request, approval, error="Choose approve or reject.", status=400)
    # The form sends its fields and its raw JSON box both; the person's choice says which is
    # meant. A post without the choice (older pages, scripts) sends JSON, as it always did.
    mode = "fields" if request.POST.get("edit_mode") == "fields" else "json"
    posted = {k: request.POST.get(k, "") for k in request.POST if k.startswith(FIELD_PREFIX)}
    try:
        approval = approval_decide(
            user=request.user,
            approval=approval,
            approve=decision == "approve",
            arguments_json=request.POST.get("arguments") if mode == "json" else None,
            fields=posted if mode == "fields" else None,
            reason=request.POST.get("reason", ""),
            resolution=decision if decision in resolutions else "",
        )
    except ArgumentsRefused as exc:
        # The card is shown again as the person left it, the refusal at the field it names.
        draft = FormDraft(
            approval_id=approval.pk,
            mode=mode,
            posted=posted,
            raw=request.POST.get("arguments", ""),
            problems=exc.problems,
            message=str(exc),
        )
        setattr(request, DRAFT_ATTRIBUTE, draft)
        return _answer(request, approval, error=str(exc), status=409)
    except ApprovalRefused as exc:
        return _answer(request, approval, error=str(exc), status=409)
    return _answer(request, approval, notice=_decided(approval))


def _decided(approval: Approval) -> str:
    if approval.kind == Approval.Kind.OUTCOME:
        return f"{approval.tool}: {approval.get_resolution_display()}."
    verb = "Approved" if approval.state == Approval.State.APPROVED else "Rejected"
    edited = " with edited arguments" if approval.edited else ""
    return f"{verb} {approval.tool}{edited}."


def _answer(
    request: SignedInRequest,
    approval: Approval,
    *,
    notice: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    from_inbox = request.POST.get("from") == "inbox"
    if request.htmx:
        if from_inbox:
            return _inbox(request, fragment=True, notice=notice, error=error, status=status)
        run = run_get_for_user(request.user, approval.run_id)
        return render_run(request, run, fragment=True, notice=notice, error=error, status=status)
    if hasattr(request, DRAFT_ATTRIBUTE):
        # Without htmx too, a refused edit is shown again, not dropped by a redirect.
        if from_inbox:
            return _inbox(request, fragment=False, error=error, status=status)
        run = run_get_for_user(request.user, approval.run_id)
        return render_run(request, run, error=error, status=status)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, notice)
    if from_inbox:
        return redirect("approvals_inbox")
    return redirect("run_detail", run_id=approval.run_id)


@login_required
@require_GET
def approvals_inbox(request: SignedInRequest) -> HttpResponse:
    return _inbox(request, fragment=bool(request.htmx))


def _inbox(
    request: SignedInRequest,
    *,
    fragment: bool,
    notice: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    query = request.GET if request.method == "GET" else request.POST
    run = query.get("run", "")
    run_id = row_id(run)
    if run and run_id is None:
        error, status = f"{run[:20]!r} is not a run number: showing every run.", 400
    narrowed = inbox_for_user(request.user, run_id=run_id, tool=query.get("tool", ""))
    context = {**narrowed, "notice": notice, "error": error}
    template = "planner_ui/_inbox_list.html" if fragment else "planner_ui/inbox.html"
    return render(request, template, context, status=status)


@login_required
@require_POST
def approvals_decide_many(request: SignedInRequest) -> HttpResponse:
    """Approve or reject the ticked requests, each decided and recorded on its own, with who
    decided it; what could not be decided is said, and the rest still is."""
    decision = request.POST.get("decision", "")
    ticked = request.POST.getlist("approval")
    parsed = [row_id(i) for i in ticked]
    if None in parsed:
        wrong = ticked[parsed.index(None)]
        return _inbox(
            request,
            fragment=bool(request.htmx),
            error=f"{wrong[:20]!r} is not a request number: nothing was decided.",
            status=400,
        )
    ids = [i for i in parsed if i is not None]
    if decision not in ("approve", "reject") or not ids:
        return _inbox(
            request,
            fragment=bool(request.htmx),
            error="Tick the requests to decide, then approve or reject them.",
            status=400,
        )
    done, refused = [], []
    for approval_id in ids:
        approval = approval_get_for_user(request.user, approval_id)
        if approval is None:
            refused.append(f"request {approval_id}: not found")
            continue
        try:
            approval_decide(
                user=request.user,
                approval=approval,
                approve=decision == "approve",
                reason=request.POST.get("reason", ""),
            )
            done.append(approval.tool)
        except ApprovalRefused as exc:
            refused.append(f"{approval.tool} in run {approval.run_id}: {exc}")
    verb = "Approved" if decision == "approve" else "Rejected"
    notice = f"{verb} {len(done)} request{'s' if len(done) != 1 else ''}." if done else ""
    if not request.htmx:
        if notice:
            messages.success(request, notice)
        for problem in refused:
            messages.error(request, problem)
        return redirect("approvals_inbox")
    return _inbox(request, fragment=True, notice=notice, error="; ".join(refused))


@login_required
@require_GET
def approvals_count(request: SignedInRequest) -> JsonResponse:
    return JsonResponse({"pending": pending_count(request.user)})


@login_required
@require_POST
def run_cancel_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    return run_action(request, run_id, run_cancel, "Run cancelled.")


@login_required
@require_POST
def run_pause_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    return run_action(
        request, run_id, run_pause, "Paused: no new step starts; the steps under way finish."
    )


@login_required
@require_POST
def run_resume_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    return run_action(request, run_id, run_resume, "Resumed.")


@login_required
@require_POST
def replan_decide_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    action = request.POST.get("action")
    proposal_id = row_id(request.POST.get("proposal"))
    if action not in ("accept", "discard") or proposal_id is None:
        return render_run(
            request, run, fragment=True, error="Accept or discard a re-plan.", status=400
        )
    try:
        if action == "accept":
            version = replan_accept(user=request.user, run_id=run.pk, proposal_id=proposal_id)
            notice = f"Re-plan accepted as version {version.number}; the run goes on."
        else:
            replan_discard(user=request.user, run_id=run.pk, proposal_id=proposal_id)
            notice = "Re-plan discarded; the run has stopped."
    except (InvalidTransition, PlanProposal.DoesNotExist) as exc:
        message = str(exc) if isinstance(exc, InvalidTransition) else "No such re-plan."
        run.refresh_from_db()
        if request.htmx:
            return render_run(request, run, fragment=True, error=message, status=409)
        messages.error(request, message)
        return redirect("run_detail", run_id=run.pk)
    run.refresh_from_db()
    if request.htmx:
        return render_run(request, run, fragment=True, notice=notice)
    messages.success(request, notice)
    return redirect("run_detail", run_id=run.pk)


@login_required
@require_POST
def run_baseline_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    baseline = baseline_create(run, request.user)
    messages.success(
        request, f"Run {baseline.pk} does the same task with one agent and every tool."
    )
    return redirect("run_detail", run_id=baseline.pk)


@login_required
@require_GET
def run_compare(request: SignedInRequest, run_id: int) -> HttpResponse:
    """The run beside its baseline; beside another of the person's runs with `?with=<id>`
    (a fork is compared with its original unless it has a baseline of its own)."""
    run = run_get_for_user(request.user, run_id)
    if request.GET.get("with"):
        other_id = row_id(request.GET["with"])
        if other_id is None:
            raise Http404("No such run to compare with.")
        other = run_get_for_user(request.user, other_id)
        return render(request, "planner_ui/compare.html", runs_comparison(run, other))
    if run.forked_from_id and not run.baselines.exists():
        original = run_get_for_user(request.user, run.forked_from_id)
        return render(request, "planner_ui/compare.html", runs_comparison(original, run))
    return render(request, "planner_ui/compare.html", comparison(run))
