"""The benchmark's own database: created on the PostgreSQL server a URL names when missing, so
that `DATABASE_URL=postgres://…/agentsite_bench make bench` needs nothing set up by hand."""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest
from django.db import connection

from bench.database import ensure_database


@pytest.mark.database
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL server")
def test_a_missing_database_is_created_and_an_existing_one_kept() -> None:
    server = os.environ["DATABASE_URL"].split("?", 1)[0].rpartition("/")[0]
    name = f"agentsite_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server + "/postgres", autocommit=True) as admin:
        try:
            assert ensure_database(f"{server}/{name}?connect_timeout=3")
            with psycopg.connect(f"{server}/{name}") as created:
                created.execute("CREATE TABLE kept (n int)")
                created.commit()
            assert ensure_database(f"{server}/{name}")  # there already: left as it was
            with psycopg.connect(f"{server}/{name}") as again:
                assert again.execute("SELECT count(*) FROM kept").fetchone() == (0,)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


def test_no_server_answering_is_said_not_raised() -> None:
    # Port 1 on the loopback: refused at once, whatever this machine runs.
    assert ensure_database("postgres://postgres@127.0.0.1:1/agentsite_bench") is False
