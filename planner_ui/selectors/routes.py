"""Which model serves which part of a run, as configured: the settings' routes (or the local
model an administrator made the default), a run's table with the person's choices on top, and
the routes an earlier step switched to prompting. Reads only: the services check that a route
can be served (services.providers.check_available) and build its provider."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from planner_ui.core.errors import ProviderError
from planner_ui.core.plan import ROLES
from planner_ui.core.routing import Route, RouteError, resolve_routes, route_for
from planner_ui.models import LocalModel, Run


def default_local_route() -> str:
    """The route of the local model new runs use for every part, or ''."""
    model = LocalModel.objects.filter(default_route=True, state=LocalModel.State.READY).first()
    return model.route if model is not None else ""


def configured_routes() -> dict[str, str]:
    """The routes the settings name; empty values fall through to the next in line. A local
    model an admin made the default takes every part instead."""
    if local := default_local_route():
        return {"planner": local, "executor": local, "synthesizer": ""}
    routes = {
        "planner": settings.AGENTSITE_PLANNER_MODEL,
        "executor": settings.AGENTSITE_EXECUTOR_MODEL,
        "synthesizer": settings.AGENTSITE_SYNTHESIZER_MODEL,
    }
    for role, route in settings.AGENTSITE_ROLE_MODELS.items():
        routes[f"executor:{role}"] = route
    return routes


def routes_resolved(overrides: Mapping[str, str] | None = None) -> dict[str, Route]:
    """The routing table of a new run, unchecked: the settings, the person's choices on top.
    Raises RouteError when a route cannot be read."""
    return resolve_routes(
        configured_routes(),
        overrides or {},
        default_provider=settings.AGENTSITE_PROVIDER,
        roles=ROLES,
    )


def route_of(purpose: str, routes: Mapping[str, str] | None = None) -> Route:
    """The route of 'planner', 'executor:<role>' or 'synthesizer' under a run's routes.

    A run from before routes were stored (an empty table) uses the settings' routes.
    """
    try:
        if not routes:
            routes = {part: route.label for part, route in routes_resolved().items()}
        return route_for(routes, purpose, settings.AGENTSITE_PROVIDER)
    except RouteError as exc:
        raise ProviderError(str(exc)) from exc


def switched_routes(run: Run) -> set[str]:
    """The labels of the run's routes that an earlier call left prompted."""
    purposes = run.calls.filter(tool_mode="prompted").values_list("purpose", flat=True).distinct()
    return {route_of(purpose, run.routes).label for purpose in purposes}
