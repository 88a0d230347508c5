"""When the fleet last swept, as a page or /readyz asks: on the database's clock."""

from __future__ import annotations

import time

import pytest

from planner_ui.selectors.workers import last_sweep_at, seconds_since_sweep
from planner_ui.services.sweep import sweep_claim

pytestmark = pytest.mark.django_db


def test_before_any_sweep_none_was_seen():
    assert last_sweep_at() is None
    assert seconds_since_sweep() is None


def test_the_last_sweep_is_when_it_started_and_how_long_ago():
    started = sweep_claim(10, "worker-a@host")
    time.sleep(0.2)
    assert last_sweep_at() == started
    assert 0.2 <= seconds_since_sweep() < 5
