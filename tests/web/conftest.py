"""Fixtures for the pages: a logged-in user and her client."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def client_alice(alice) -> Client:
    c = Client()
    c.force_login(alice)
    return c
