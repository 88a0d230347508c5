"""The benchmark's farther database: every statement and commit waits first, until
uninstalled."""

from __future__ import annotations

import time

import pytest
from django.db import connection, transaction

from planner_ui.models import Run
from planner_ui.stores import statement_delay

pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


def test_every_statement_and_commit_waits_until_uninstalled(alice):
    wrappers = list(connection.execute_wrappers)
    statement_delay.install(40)
    try:
        started = time.perf_counter()
        with transaction.atomic():
            Run.objects.create(owner=alice, task="far")
        # An INSERT and a COMMIT, each after its wait (a lower bound: a sleep is never shorter).
        assert time.perf_counter() - started >= 0.080
        assert Run.objects.filter(task="far").count() == 1
    finally:
        statement_delay.uninstall()
    # The connection is as it was: no wrapper left, the class's own commit.
    assert connection.execute_wrappers == wrappers
    assert "commit" not in vars(connection)


def test_no_delay_installs_nothing():
    statement_delay.install(0)
    assert "commit" not in vars(connection)
    assert statement_delay._delay is None
