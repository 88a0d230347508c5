"""Refuse a NUL character anywhere a person's text comes in by URL or form.

PostgreSQL stores no NUL in a text column: psycopg raises, and a task, a reason, a step's
title or a file path holding one answered 500 there (SQLite stored it). No field needs one,
so the request is refused once, here, before any view reads it. (JSON bodies are checked by
core.bounds.loads_bounded, where the API and the plan import parse them: a NUL comes in
there as the escape \\u0000.)"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict

NUL = "\x00"


class RefuseNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if NUL in request.path or _holds_nul(request.GET) or _form_holds_nul(request):
            return HttpResponseBadRequest(
                "Text may not contain NUL characters (%00): remove them and send again.",
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)


def _form_holds_nul(request: HttpRequest) -> bool:
    # Only form posts: reading request.POST of another body (the API's JSON) parses nothing.
    if request.method != "POST" or not request.content_type.startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        return False
    return _holds_nul(request.POST)


def _holds_nul(data: QueryDict) -> bool:
    return any(NUL in key or any(NUL in v for v in values) for key, values in data.lists())
