from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from planner_ui.services.tokens import token_create


@pytest.fixture
def api_client(make_user) -> Callable[..., Any]:
    """A client that calls the API with a new token of the named user (made if missing)."""

    def make(username: str = "alice") -> Client:
        user = get_user_model().objects.filter(username=username).first() or make_user(username)
        _, raw = token_create(user=user, name="tests")
        client = Client(headers={"Authorization": f"Bearer {raw}"})
        client.user = user
        client.token = raw
        return client

    return make


def post(client: Client, path: str, body: dict | None = None):
    return client.post(path, body or {}, content_type="application/json")
