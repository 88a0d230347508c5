"""Commits that must survive a crash of the database server: with AGENTSITE_DB_ASYNC_COMMIT a
connection commits without waiting for the flush to disk, except the outbox's transactions
before and after an irreversible call (sql.durable). PostgreSQL only: SQLite has no such
setting, and `make test` runs these in its PostgreSQL pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import override_settings

from planner_ui.models import Run, ToolReceipt
from planner_ui.services.files import workspace_checkout
from planner_ui.services.gate import tool_context
from planner_ui.services.outbox import perform_once
from planner_ui.stores import sql
from planner_ui.tools import get_tool

pytestmark = [
    pytest.mark.database,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        "connection.vendor != 'postgresql'", reason="synchronous_commit is PostgreSQL's"
    ),
]


def _setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@contextmanager
def asynchronous_commits() -> Iterator[None]:
    """The connection as AGENTSITE_DB_ASYNC_COMMIT opens it (its options say
    synchronous_commit=off), and the setting that tells sql.durable so."""
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    try:
        with override_settings(AGENTSITE_DB_ASYNC_COMMIT=True):
            yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def test_a_durable_transaction_waits_for_its_flush_and_leaves_the_connection_as_it_was():
    with asynchronous_commits():
        assert _setting() == "off"
        with transaction.atomic():
            sql.durable()
            assert _setting() == "on"
        assert _setting() == "off"  # SET LOCAL: this transaction only
        with pytest.raises(RuntimeError, match="outside a transaction"):
            sql.durable()


def test_without_the_setting_a_durable_transaction_costs_no_statement():
    seen: list[str] = []

    def record(execute: Any, statement: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(statement)
        return execute(statement, params, many, context)

    with connection.execute_wrapper(record), transaction.atomic():
        sql.durable()
    assert seen == []


def test_an_irreversible_call_is_recorded_on_disk_before_and_after_it_is_made(
    make_user, mailoutbox
):
    run = Run.objects.create(owner=make_user(), task="t")
    statements: list[tuple[int | None, str]] = []

    def record(execute: Any, statement: str, params: Any, many: bool, context: Any) -> Any:
        # Which transaction a statement belongs to: its outermost atomic block.
        outermost = id(connection.atomic_blocks[0]) if connection.atomic_blocks else None
        statements.append((outermost, statement))
        return execute(statement, params, many, context)

    with asynchronous_commits(), connection.execute_wrapper(record):
        perform_once(
            run_id=run.pk,
            step_id="mail",
            call_key="1:call_1",
            tool=get_tool("send_email"),
            arguments={"to": "bob@example.com", "subject": "Hello", "body": "Hi Bob"},
            ctx=tool_context(workspace_checkout(run.pk, "mail")),
            authorized_by="alice",
        )
    assert len(mailoutbox) == 1
    assert ToolReceipt.objects.get().state == ToolReceipt.State.DONE
    receipt_table = sql.table(ToolReceipt)
    writes = [
        block
        for block, statement in statements
        if receipt_table in statement and not statement.lstrip().upper().startswith("SELECT")
    ]
    assert len(writes) == 2, statements  # the receipt in flight, then its result
    for block in writes:
        assert block is not None, "a receipt written outside a transaction"
        first = next(statement for b, statement in statements if b == block)
        assert first == "SET LOCAL synchronous_commit = on"
