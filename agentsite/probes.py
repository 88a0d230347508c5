"""/healthz and /readyz for whatever Host header a probe sends.

A load balancer or an orchestrator probes a server by its address, naming no host of
DJANGO_ALLOWED_HOSTS: Django's host check (in CommonMiddleware, CSRF, the HTTPS redirect)
would answer 400 or a redirect, and the server would count as down. First of the middleware,
this answers the probes before any of that runs (the HTTPS redirect too: a probe inside the
network speaks plain HTTP). /healthz never needs more. /readyz shows staff what it checked, which
needs their session: a request with a session cookie for the site's own host goes the whole way
through; a probe carries no cookie and gets the status alone, here."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

from planner_ui.views import health


class ProbesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/healthz":
            return health.healthz(request)
        if request.path == "/readyz" and not (
            settings.SESSION_COOKIE_NAME in request.COOKIES and _host_served(request)
        ):
            if request.method not in ("GET", "HEAD"):
                return self.get_response(request)  # refused as any other request would be
            return health.ready_response(request, details_allowed=False)
        return self.get_response(request)


def _host_served(request: HttpRequest) -> bool:
    try:
        request.get_host()
    except DisallowedHost:
        return False
    return True
