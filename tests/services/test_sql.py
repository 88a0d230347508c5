"""The hot path's plain SQL (stores.sql) writes and reads back what the ORM would. `make test`
runs these on SQLite and, where a PostgreSQL server answers, again on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from planner_ui.models import ModelCall, Run, RunEvent, Step
from planner_ui.stores import sql

pytestmark = [pytest.mark.database, pytest.mark.django_db]


@pytest.fixture
def run(make_user) -> Run:
    return Run.objects.create(owner=make_user(), task="Compare tea and coffee")


def test_insert_applies_defaults_and_auto_now_add_and_sets_the_key(run):
    before = timezone.now()
    call = ModelCall(
        run_id=run.pk, purpose="executor:writer", role="writer", provider="offline", model="m"
    )
    call.cost_usd = Decimal("0.000123")
    sql.insert(call)
    stored = ModelCall.objects.get(pk=call.pk)
    assert not call._state.adding
    assert stored.created_at == call.created_at
    assert stored.created_at >= before
    assert stored.cost_usd == Decimal("0.000123")
    assert (stored.input_tokens, stored.latency_ms, stored.error) == (0, 0, "")


def test_insert_numbered_numbers_on_from_the_counter_and_returns_its_row(run):
    Run.objects.filter(pk=run.pk).update(last_event_seq=5)
    events = [
        RunEvent(run_id=run.pk, seq=0, type="plan.invalid", step_id=f"s{i}", payload={"n": i})
        for i in range(3)
    ]
    counted = sql.insert_numbered(
        events,
        "seq",
        f"UPDATE {sql.table(Run)} SET last_event_seq = last_event_seq + %s WHERE id = %s "
        "RETURNING last_event_seq AS last, status",
        [3, run.pk],
    )
    assert counted == (8, run.status)
    assert [e.seq for e in events] == [6, 7, 8]
    stored = RunEvent.objects.filter(run=run).values_list("pk", "seq", "step_id", "payload")
    assert list(stored) == [(e.pk, e.seq, e.step_id, e.payload) for e in events]
    assert all(not e._state.adding and e.created_at for e in events)


def test_update_with_changes_a_row_and_what_goes_along_with_it_in_one_change(run):
    call = ModelCall(
        run_id=run.pk, purpose="planner", role="planner", provider="offline", model="m"
    )
    call.input_tokens = 7
    step = step_of(run)
    with CaptureQueriesContext(connection) as queries:
        returned = sql.update_with(
            f"UPDATE {sql.table(Run)} SET tokens_in = tokens_in + %s WHERE id = %s "
            "RETURNING tokens_in, status",
            [7, run.pk],
            along=[
                sql.insert_select(call),
                (
                    f"UPDATE {sql.table(Step)} SET attempts = attempts + 1{{source}} WHERE id = %s",
                    [step.pk],
                ),
            ],
        )
    assert tuple(returned) == (7, run.status)
    if connection.vendor == "postgresql":
        assert len(queries) == 1, [q["sql"] for q in queries]
    stored = ModelCall.objects.get(run=run)
    assert (stored.purpose, stored.input_tokens, stored.created_at) == (
        "planner",
        7,
        call.created_at,
    )
    run.refresh_from_db()
    step.refresh_from_db()
    assert (run.tokens_in, step.attempts) == (7, 1)


def test_insert_keeps_a_null_decimal_null(run):
    call = ModelCall(run_id=run.pk, purpose="planner", role="planner", provider="p", model="m")
    sql.insert(call)
    assert ModelCall.objects.get(pk=call.pk).cost_usd is None


def step_of(run: Run, **fields) -> Step:
    return Step.objects.create(
        run=run, step_id="a", title="A", instruction="Do a", role="writer", **fields
    )


def test_what_returning_gives_back_reads_as_the_orm_reads_it(run):
    started = timezone.now()
    step = step_of(run, dependents=["b", "c"], started_at=started, cost_usd=Decimal("1.5"))
    ((started_at, cost, dependents),) = sql.rows(
        f"UPDATE {sql.table(Step)} SET cost_usd = cost_usd + CAST(%s AS NUMERIC) "
        "WHERE id = %s RETURNING started_at, cost_usd, dependents",
        [sql.amount(Decimal("0.000001")), step.pk],
    )
    assert sql.datetime_of(started_at) == started
    assert sql.decimal_of(cost) == Decimal("1.500001")
    assert str(sql.decimal_of(cost)) == "1.500001"
    assert sql.json_of(Step._meta.get_field("dependents"), dependents) == ["b", "c"]
    step.refresh_from_db()
    assert step.cost_usd == Decimal("1.500001")


def test_a_statement_that_returns_nothing_gives_no_rows(run):
    assert sql.rows(f"UPDATE {sql.table(Run)} SET task = %s WHERE id = %s", ["x", run.pk]) == []
    assert sql.rows(f"SELECT id FROM {sql.table(Run)} WHERE id = %s", [run.pk + 1]) == []


def test_rows_give_the_same_whether_or_not_something_watches_the_statements(run):
    statement = f"SELECT task, '100%%', %s FROM {sql.table(Run)} WHERE id = %s"
    unwatched = sql.rows(statement, ["x", run.pk])
    seen = []

    def watch(execute, sql_text, params, many, context):
        seen.append(sql_text)
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(watch):
        watched = sql.rows(statement, ["x", run.pk])
    assert unwatched == watched == [("Compare tea and coffee", "100%", "x")]
    assert seen == [statement]


def test_rows_raise_djangos_errors(run):
    with pytest.raises(IntegrityError):
        sql.rows(
            f"INSERT INTO {sql.table(Run)} (id, owner_id, task) SELECT id, owner_id, task "
            f"FROM {sql.table(Run)} WHERE id = %s",
            [run.pk],
        )


def test_rows_refuse_to_run_in_a_transaction_that_must_roll_back(run):
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            sql.rows(f"SELECT id FROM {sql.table(Run)} WHERE id = %s", [run.pk])


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-25 22:08:30.633705",
        datetime(2026, 11, 25, 22, 8, 30, 633705),
        datetime(2026, 11, 25, 22, 8, 30, 633705, tzinfo=UTC),
    ],
)
def test_datetime_of_reads_text_naive_and_aware_alike(value):
    assert sql.datetime_of(value) == datetime(2026, 11, 25, 22, 8, 30, 633705, tzinfo=UTC)
    assert sql.datetime_of(None) is None


def test_insert_many_keeps_the_order_and_splits_what_one_statement_cannot_hold(run):
    events = [
        RunEvent(run_id=run.pk, seq=n, type="step.queued", step_id=f"s{n}", payload={"n": n})
        for n in range(1, 401)
    ]
    assert connection.ops.bulk_batch_size(["a"] * 6, events) < 400 or connection.vendor != "sqlite"
    sql.insert_many(events)
    stored = {e.pk: (e.seq, e.step_id, e.payload) for e in RunEvent.objects.filter(run=run)}
    assert [stored[e.pk] for e in events] == [(n, f"s{n}", {"n": n}) for n in range(1, 401)]
    assert all(e.created_at is not None and not e._state.adding for e in events)


def test_load_gives_what_the_orm_gives_field_by_field(run):
    run.budget_usd = Decimal("2.5")
    run.routes = {"executor": "offline:m"}
    run.started_at = timezone.now()
    run.save()
    step = step_of(
        run,
        tools=["calculator"],
        dependents=["b"],
        started_at=timezone.now(),
        cost_usd=Decimal("0.25"),
    )
    for model, pk in ((Run, run.pk), (Step, step.pk)):
        expected, loaded = model.objects.get(pk=pk), sql.load(model, pk)
        assert not loaded._state.adding and loaded._state.db == connection.alias
        for field in model._meta.concrete_fields:
            want, got = getattr(expected, field.attname), getattr(loaded, field.attname)
            assert (type(got), got) == (type(want), want), field.name


def test_load_of_a_missing_row_raises_does_not_exist(run):
    with pytest.raises(Step.DoesNotExist):
        sql.load(Step, 10**9)


def test_load_of_some_fields_reads_them_as_the_orm_does_and_defers_the_rest(run):
    run.paused_at = timezone.now()
    run.replanning = True
    run.save()
    fields = ("status", "replanning", "paused_at")
    loaded = sql.load(Run, run.pk, fields=fields, lock="update")
    expected = Run.objects.get(pk=run.pk)
    assert loaded.pk == run.pk
    for name in fields:
        want, got = getattr(expected, name), getattr(loaded, name)
        assert (type(got), got) == (type(want), want), name
    assert "task" in loaded.get_deferred_fields() and "status" not in loaded.get_deferred_fields()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_on_postgresql_a_statement_is_planned_once_per_connection_not_at_every_call(run, settings):
    statement = f"SELECT task FROM {sql.table(Run)} WHERE id = %s"

    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
                [f"%FROM {sql.table(Run)} WHERE id = $1"],
            )
            return [text for (text,) in cursor.fetchall()]

    settings.AGENTSITE_DB_PREPARED = False
    assert sql.rows(statement, [run.pk]) == [("Compare tea and coffee",)]
    assert prepared() == []
    settings.AGENTSITE_DB_PREPARED = True
    for _ in range(3):
        assert sql.rows(statement, [run.pk]) == [("Compare tea and coffee",)]
    assert prepared() == [f"SELECT task FROM {sql.table(Run)} WHERE id = $1"]


def _other_connection():
    """A connection of the test's database of its own, as a deploy's migration has."""
    import psycopg

    params = connection.get_connection_params()
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def probe(settings):
    """A table of one row, read by a prepared statement; `probe()` changes its column's type
    from another connection, as a deploy's migration does while workers hold the statement."""
    settings.AGENTSITE_DB_PREPARED = True
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE prepared_probe (id integer PRIMARY KEY, amount integer)")
        cursor.execute("INSERT INTO prepared_probe VALUES (1, 7)")

    def migrate() -> None:
        with _other_connection() as other:
            other.execute("ALTER TABLE prepared_probe ALTER COLUMN amount TYPE numeric(10, 2)")

    yield migrate
    with _other_connection() as other:
        other.execute("DROP TABLE prepared_probe")


_PROBE_READ = "SELECT amount FROM prepared_probe WHERE id = %s"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_prepared_statement_whose_column_changed_type_is_prepared_again(probe):
    # PostgreSQL refuses the old plan ("cached plan must not change result type") until the
    # statement is prepared again.
    assert sql.rows(_PROBE_READ, [1]) == [(7,)]
    probe()
    assert sql.rows(_PROBE_READ, [1]) == [(Decimal("7.00"),)]
    assert sql.rows(_PROBE_READ, [1]) == [(Decimal("7.00"),)]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_transaction_refused_an_old_prepared_statement_goes_again_under_retried(probe):
    tries = []

    def attempt() -> list[tuple]:
        with transaction.atomic():
            tries.append(1)
            sql.rows("UPDATE prepared_probe SET amount = amount + 1 WHERE id = %s", [1])
            return sql.rows(_PROBE_READ, [1])

    assert sql.retried(attempt) == [(8,)]
    assert len(tries) == 1
    probe()
    # The first try's UPDATE was rolled back with it: the amount went up once.
    assert sql.retried(attempt) == [(Decimal("9.00"),)]
    assert len(tries) == 3


def test_placeholders_become_postgresqls_own_numbered_once_per_statement():
    assert sql._dollars("SELECT %s, '100%%', x FROM t WHERE a = %s AND b = %s") == (
        "SELECT $1, '100%', x FROM t WHERE a = $2 AND b = $3"
    )
    assert sql._dollars("SELECT 1") == "SELECT 1"
    for bad in ("SELECT %(name)s", "SELECT 5 %", "SELECT %d"):
        with pytest.raises(ValueError, match="only %s and %% may follow a %"):
            sql._dollars(bad)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_a_statement_over_psycopgs_cache_limits_runs_with_its_values_in_place(run, settings):
    # Longer than 4,096 characters and with more than 50 parameters: psycopg's own cursor would
    # parse it at every execution; sent with numbered placeholders, each value lands in its place.
    settings.AGENTSITE_DB_PREPARED = True
    values = list(range(60))
    statement = (
        "SELECT "
        + ", ".join(["%s::int"] * len(values))
        + ", '50%%' "
        + " " * 4200
        + f"FROM {sql.table(Run)} WHERE id = %s"
    )
    for _ in range(2):
        assert sql.rows(statement, [*values, run.pk]) == [(*values, "50%")]
