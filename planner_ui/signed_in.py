"""The request of a page or an API endpoint that only a signed-in person reaches.

login_required (the pages) and api.auth.TokenAuth (the API, which sets request.user to the
token's owner) let a request through only with a user signed in, so there request.user is a
User, never AnonymousUser. A view says so by taking a SignedInRequest; HttpRequest cannot know
it (this is django-stubs' advice for views behind a login). Its `htmx` is the one
django_htmx's middleware sets on every request."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class SignedInRequest(HttpRequest):
    user: User
    htmx: HtmxDetails
