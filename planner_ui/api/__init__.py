"""The JSON API, /api/v1/: everything the pages do, for scripts and other programs.

django-ninja rather than Django REST Framework: the plan, the run options and the edits are
pydantic models already, and ninja takes them as they are, validates with them (a 422 names
the field) and makes the OpenAPI document and its docs page from them; one way to describe
data, not two. Every endpoint reads request.user (the token's owner) through the same
selectors as the pages, so another user's run is a 404 here as there."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.parser import Parser

from planner_ui.core.bounds import JsonRefused, loads_bounded
from planner_ui.core.errors import InvalidTransition, PlanConflict, PlanValidationError
from planner_ui.core.evaluation import EvaluationError
from planner_ui.core.templates import ParameterError
from planner_ui.models import Run
from planner_ui.services.approvals import ApprovalRefused, ArgumentsRefused
from planner_ui.services.runs import RunInputError
from planner_ui.services.templates import TemplateRefused

from . import approvals, evaluations, plans, runs, templates
from .auth import TokenAuth, TokenRateThrottle


class BoundedParser(Parser):
    """Bodies parsed with the nesting bounded (a plan or a tool's arguments nest a few levels,
    and a few thousand open brackets would run json.loads, or what reads the value after it,
    out of stack) and no NUL in any string (PostgreSQL cannot store one)."""

    def parse_body(self, request: HttpRequest) -> Any:
        return loads_bounded(request.body)


class SlashTolerantAPI(NinjaAPI):
    """Every path answers with and without a trailing slash: `/api/v1/runs/` is the same
    endpoint as `/api/v1/runs`, not an HTML 404. Served in place rather than redirected, so a
    POST keeps its body; the slashless path stays the one the OpenAPI document names."""

    def _get_urls(self) -> list[URLResolver | URLPattern]:
        urls = super()._get_urls()
        routes = [(str(url.pattern), url) for url in urls if isinstance(url, URLPattern)]
        slashed = [
            path(f"{route}/", url.callback)
            for route, url in routes
            if route and not route.endswith("/")
        ]
        return urls + slashed


api = SlashTolerantAPI(
    parser=BoundedParser(),
    title="agentsite API",
    version="1",
    description=(
        "Plan, steer and follow planner-executor runs. Authenticate with a personal token "
        "(made on the site's API tokens page) as `Authorization: Bearer <token>`. Live events "
        "come over the WebSocket /ws/runs/{run_id}/?after=<seq>, in the shape of /events."
    ),
    urls_namespace="api-v1",
    auth=TokenAuth(),
    throttle=TokenRateThrottle(),
)
api.add_router("", runs.router)
api.add_router("", plans.router)
api.add_router("", approvals.router)
api.add_router("", evaluations.router)
api.add_router("", templates.router)


def _error(request: HttpRequest, status: int, detail: object, **extra: object) -> HttpResponse:
    return api.create_response(request, {"detail": detail, **extra}, status=status)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja answers a body it cannot parse with a bare "Cannot parse request body"; a body
    # refused for its nesting or a NUL says so.
    cause = exc.__cause__
    refused = isinstance(cause, JsonRefused)
    detail = f"Cannot parse request body: {cause}." if refused else exc.message
    return _error(request, exc.status_code, detail)


@api.exception_handler(PlanConflict)
def _stale(request: HttpRequest, exc: PlanConflict) -> HttpResponse:
    run_id = request.resolver_match.kwargs.get("run_id") if request.resolver_match else None
    current = (
        Run.objects.get(pk=run_id).plan_versions.order_by("-number").first() if run_id else None
    )
    plan = plans.version_out(current.run, current) if current else None
    return _error(request, 409, str(exc), current_version=exc.current, current_plan=plan)


@api.exception_handler(InvalidTransition)
@api.exception_handler(ApprovalRefused)
def _refused(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _error(request, 409, str(exc))


@api.exception_handler(PlanValidationError)
def _invalid_plan(request: HttpRequest, exc: PlanValidationError) -> HttpResponse:
    # In the shape of a validation error: one entry per problem the plan checks found.
    field = "edit" if request.path.endswith("/edits") else "plan"
    problems = [{"loc": ["body", field], "msg": error, "type": "plan"} for error in exc.errors]
    return _error(request, 422, problems)


@api.exception_handler(ArgumentsRefused)
def _bad_arguments(request: HttpRequest, exc: ArgumentsRefused) -> HttpResponse:
    loc = ["body", "payload", "arguments"]
    return _error(request, 422, [{"loc": loc, "msg": str(exc), "type": "value_error"}])


@api.exception_handler(RunInputError)
def _bad_options(request: HttpRequest, exc: RunInputError) -> HttpResponse:
    loc = ["body", "payload", exc.field] if exc.field else ["body", "payload"]
    return _error(request, 422, [{"loc": loc, "msg": str(exc), "type": "value_error"}])


@api.exception_handler(EvaluationError)
def _bad_evaluation(request: HttpRequest, exc: EvaluationError) -> HttpResponse:
    return _error(
        request, 422, [{"loc": ["body", "payload"], "msg": str(exc), "type": "value_error"}]
    )


@api.exception_handler(Run.DoesNotExist)
def _missing(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _error(request, 404, "Not Found")


@api.exception_handler(ParameterError)
def _bad_values(request: HttpRequest, exc: ParameterError) -> HttpResponse:
    # One entry per refused value, at its parameter: the body's key for a webhook, "values"
    # for a run, the parameter's name in a template being saved.
    where = [] if "/hooks/" in request.path else ["values"]
    problems = [
        {"loc": ["body", *where, name] if name else ["body"], "msg": why, "type": "value_error"}
        for name, why in exc.problems.items()
    ]
    return _error(request, 422, problems)


@api.exception_handler(TemplateRefused)
def _template_refused(request: HttpRequest, exc: TemplateRefused) -> HttpResponse:
    loc = ["body", "payload", exc.field] if exc.field else ["body", "payload"]
    return _error(request, 422, [{"loc": loc, "msg": str(exc), "type": "value_error"}])
