"""The benchmark's farther database: every round trip to PostgreSQL waits first, until
uninstalled, whichever cursor sends it."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, transaction

from planner_ui.models import Run
from planner_ui.stores import sql, statement_delay

pytestmark = [
    pytest.mark.database,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a farther PostgreSQL"),
]


def test_every_round_trip_waits_until_uninstalled(alice, settings):
    settings.AGENTSITE_DB_PREPARED = True
    original = psycopg.Connection.wait
    statement_delay.install(40)
    try:
        started = time.perf_counter()
        with transaction.atomic():
            run = Run.objects.create(owner=alice, task="far")
        # BEGIN with the INSERT, then the COMMIT: two waits at least (a sleep is never shorter).
        assert time.perf_counter() - started >= 0.080
        # A statement of the hot path, prepared and sent by psycopg's own cursor, waits too.
        started = time.perf_counter()
        assert sql.rows(f"SELECT task FROM {sql.table(Run)} WHERE id = %s", [run.pk]) == [("far",)]
        assert time.perf_counter() - started >= 0.040
    finally:
        statement_delay.uninstall()
    assert psycopg.Connection.wait is original


def test_no_delay_installs_nothing():
    original = psycopg.Connection.wait
    statement_delay.install(0)
    assert psycopg.Connection.wait is original
    assert statement_delay._unpatched is None
